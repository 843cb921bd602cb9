"""``--distribution=ENGINE:VERSION`` and ``--plugin=[CLUSTER:]PATH``: the engine, version and plugins of the
clusters bench provisions (a single cluster, or every cluster of a topology)."""

from __future__ import annotations

import re
from pathlib import Path

from bench.errors import ConfigError

ENGINES = ("elasticsearch", "opensearch")
_CLUSTER = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def parse_distribution(spec: str | None, default_version: str) -> tuple[str, str]:
    """``opensearch:2.19.1`` -> (opensearch, 2.19.1); ``8.19.21`` -> (elasticsearch, 8.19.21); None -> default."""
    if not spec:
        return "elasticsearch", default_version
    engine, sep, version = spec.strip().partition(":")
    if not sep:
        engine, version = "elasticsearch", engine
    engine = engine.strip().lower()
    if engine not in ENGINES or not re.match(r"^\d+\.\d+\.\d+\S*$", version.strip()):
        raise ConfigError(f"--distribution {spec!r}: use ENGINE:VERSION with ENGINE elasticsearch or opensearch, "
                          f"e.g. opensearch:2.19.1 or elasticsearch:8.19.21")
    return engine, version.strip()


def parse_plugins(values: list[str] | None) -> dict[str | None, list[Path]]:
    """``PATH`` (every cluster) or ``CLUSTER:PATH`` (one cluster) -> {cluster or None: [paths]}; each must exist."""
    out: dict[str | None, list[Path]] = {}
    for raw in values or []:
        cluster: str | None = None
        path = raw
        head, sep, tail = raw.partition(":")
        if sep and _CLUSTER.match(head) and not Path(raw).expanduser().exists():
            cluster, path = head, tail
        p = Path(path).expanduser().resolve()
        if not (p.is_dir() or (p.is_file() and p.suffix == ".zip")):
            raise ConfigError(f"--plugin {raw}: {p} is neither a plugin folder nor a .zip file")
        out.setdefault(cluster, []).append(p)
    return out


def plugins_for(plugins: dict[str | None, list[Path]], cluster: str) -> list[Path]:
    return [*plugins.get(None, []), *plugins.get(cluster, [])]
