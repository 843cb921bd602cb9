"""The files bench ships inside its package: built-in tracks, car configs, telemetry profiles, report
templates, and the example topologies and experiments. They are found through the installed package
(importlib.resources), so a wheel install works from any folder and no checkout is involved.

In the repository these folders stay at the top level, where users browse them; ``bench/_data/<name>`` are
committed relative symlinks to them (``../../<name>``). setuptools 68+ follows those links when it builds a
wheel or an sdist (``package-data`` in pyproject.toml), so both hold real files; an editable install maps
the ``bench`` package onto the checkout's ``bench/`` folder, so it reads the same folders through the links.
Symlinked package data rather than a build hook: no code runs at build time, and both install kinds
resolve the same ``bench/_data/<name>`` path.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Literal

from bench.util.errors import BenchError, ConfigError

Bundled = Literal["tracks", "car-configs", "telemetry-profiles", "reports", "topologies", "experiments"]
Example = Literal["topologies", "experiments"]


def bundled_dir(name: Bundled) -> Path:
    """The folder of bench's own ``name``; a broken installation is one clear error, not an empty list."""
    where = files("bench") / "_data" / name
    # A package imported from a zip has no folders on disk: bench reads these as files (Jinja2, track
    # loading), so it needs a regular install.
    if not isinstance(where, Path) or not where.is_dir():
        raise BenchError(f"bench's built-in {name} are missing from its installation (looked in {where}): "
                         "reinstall bench with pip from its wheel or checkout (pip install --force-reinstall ...)")
    return where.resolve()


def example_names(kind: Example) -> list[str]:
    """Names of the bundled example topologies or experiments (file names without .yml)."""
    return sorted(p.stem for p in bundled_dir(kind).glob("*.yml"))


def resolve_example(raw: str | Path, kind: Example, what: str) -> Path:
    """``raw`` when that file exists; else the bundled example it names (``ccr-local``, ``ccr-local.yml`` or
    ``topologies/ccr-local.yml``, the path the README uses from a checkout), so the examples work from any
    folder with an installed bench. Neither: one line naming the path and the examples there are."""
    p = Path(raw).expanduser()
    if p.is_file():
        return p
    if not p.is_absolute() and len(p.parts) in (1, 2) and (len(p.parts) == 1 or p.parts[0] == kind):
        bundled = bundled_dir(kind) / (p.name if p.suffix in (".yml", ".yaml") else f"{p.name}.yml")
        if bundled.is_file():
            return bundled
    raise ConfigError(f"{what} {p} does not exist; give a file's path or a built-in example's name "
                      f"({', '.join(example_names(kind))})")
