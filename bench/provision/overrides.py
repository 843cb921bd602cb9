"""``--distribution=ENGINE:VERSION``, ``--plugin=[CLUSTER:]PATH`` and ``--elasticsearch-plugins``/
``--opensearch-plugins`` (official plugins by name): the engine, version and plugins of the clusters bench
provisions (a single cluster, or every cluster of a topology)."""

from __future__ import annotations

import re
from pathlib import Path

from bench.provision.model import Engine
from bench.provision.plugin_names import FLAGS, PluginRef, parse_plugin_names
from bench.util.errors import ConfigError

ENGINES: dict[str, Engine] = {"elasticsearch": "elasticsearch", "opensearch": "opensearch"}
_CLUSTER = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def parse_distribution(spec: str | None, default_version: str) -> tuple[Engine, str]:
    """``opensearch:2.19.1`` -> (opensearch, 2.19.1); ``8.19.21`` -> (elasticsearch, 8.19.21); None -> default."""
    if not spec:
        return "elasticsearch", default_version
    engine, sep, version = spec.strip().partition(":")
    if not sep:
        engine, version = "elasticsearch", engine
    known = ENGINES.get(engine.strip().lower())
    if known is None or not re.match(r"^\d+\.\d+\.\d+\S*$", version.strip()):
        raise ConfigError(f"--distribution {spec!r}: use ENGINE:VERSION with ENGINE elasticsearch or opensearch, "
                          f"e.g. opensearch:2.19.1 or elasticsearch:8.19.21")
    return known, version.strip()


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


def named_plugins(elasticsearch: list[str] | None, opensearch: list[str] | None) -> dict[str, list[PluginRef]]:
    """``--elasticsearch-plugins``/``--opensearch-plugins`` -> {engine: plugins}; bad names are one line."""
    out = {engine: parse_plugin_names(values, FLAGS[engine])
           for engine, values in (("elasticsearch", elasticsearch), ("opensearch", opensearch)) if values}
    return {engine: refs for engine, refs in out.items() if refs}


def check_plugin_engines(named: dict[str, list[PluginRef]], engines: set[str]) -> None:
    """Each engine's plugin flag must match a cluster of that engine: OpenSearch plugins do not load into
    Elasticsearch (and the other way round), so a mismatch is a mistake, not something to skip."""
    for engine in named:
        if engine not in engines:
            other = next(e for e in FLAGS if e != engine)
            raise ConfigError(f"{FLAGS[engine]} names {engine} plugins but this race starts no {engine} cluster "
                              f"(it starts {', '.join(sorted(engines))}); use {FLAGS[other]} for {other} plugins")


def is_plugin_path(entry: str) -> bool:
    """A topology's ``plugins:`` entry is a path (a zip or a folder) when it looks like one, else a plugin name."""
    return "/" in entry or entry.endswith(".zip") or entry.startswith(("~", "."))
