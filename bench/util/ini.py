"""``$BENCH_HOME/bench.ini``: bench's settings file, in Rally's ``rally.ini`` layout.

Sections bench reads: ``[reporting]`` (the metrics store, ``bench.trials.metrics_store.config``), ``[distributions]``
(repositories of distributions and plugins: ``repository = release``, ``<name>.url = <template>``,
``plugin.<plugin>.<repository>.url = <template>``, as Rally's keys). A missing file is an empty one; a file that
cannot be parsed is one line naming it.
"""

from __future__ import annotations

import configparser
from pathlib import Path

from bench.util.errors import ConfigError
from bench.util.home import bench_home_path

INI_NAME = "bench.ini"


def ini_path() -> Path:
    return bench_home_path() / INI_NAME


def read_ini(path: Path | None = None) -> configparser.ConfigParser:
    """The parsed file (empty when it does not exist); no interpolation, as Rally's values hold ``{{VERSION}}``."""
    path = path or ini_path()
    ini = configparser.ConfigParser(interpolation=None)
    if path.is_file():
        try:
            ini.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError) as e:
            raise ConfigError(f"{path}: cannot be read: {str(e).splitlines()[0]}") from None
    return ini


def ini_section(section: str, path: Path | None = None) -> dict[str, str]:
    """One section's keys and (stripped) values; empty when the file or the section is missing."""
    ini = read_ini(path)
    return {k: v.strip() for k, v in ini[section].items()} if ini.has_section(section) else {}
