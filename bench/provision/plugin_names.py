"""Official plugins by name: ``--elasticsearch-plugins`` (Rally's flag), ``--opensearch-plugins`` (OpenSearch
Benchmark's) and the names in a topology's ``plugins:``, each ``name`` or ``name:version`` (comma-separated).

Rally also reads ``name:config`` (a plugin configuration of its rally-teams repository, whose templates
``--plugin-params`` fill). bench has no such configurations: it installs a plugin by name and version only, so
anything after the colon that is not a version is refused in one line, and so is ``--plugin-params``.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from bench.util.errors import ConfigError

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
# 8.19.21, 2.19.4.0 (OpenSearch's own plugins carry a fourth number), 9.0.0-rc1, 8.19.0-SNAPSHOT
VERSION_PATTERN = r"^\d+(\.\d+){1,3}([-+][0-9A-Za-z.-]+)?$"
FLAGS = {"elasticsearch": "--elasticsearch-plugins", "opensearch": "--opensearch-plugins"}


class PluginRef(BaseModel):
    """A plugin named for download: its version defaults to the version of the cluster it goes into."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    version: str | None = Field(default=None, pattern=VERSION_PATTERN)

    def label(self) -> str:
        return f"{self.name}:{self.version}" if self.version else self.name


def parse_plugin_ref(item: str, where: str) -> PluginRef:
    """``name`` or ``name:version`` -> PluginRef; anything else is one line naming ``where`` and the item."""
    raw = item.strip()
    name, sep, rest = raw.partition(":")
    if not re.match(NAME_PATTERN, name):
        raise ConfigError(f"{where}: {raw!r} is not a plugin name (letters, digits, '.', '_', '-'); write name or "
                          f"name:version, and install a plugin zip or folder with --plugin=PATH")
    if not sep:
        return PluginRef(name=name)
    if not re.match(VERSION_PATTERN, rest):
        raise ConfigError(f"{where}: {raw!r}: {rest!r} is not a version; bench installs plugins by name and version "
                          f"only (name or name:version), not Rally's name:config plugin configurations: set what a "
                          f"configuration would set with a car mixin (car-configs/) instead")
    return PluginRef(name=name, version=rest)


def parse_plugin_names(values: str | list[str] | None, where: str) -> list[PluginRef]:
    """A comma-separated value (or a list of them, e.g. a repeated flag or a YAML list) -> its plugins, in order;
    empty items and a plugin named twice are refused."""
    items: list[str] = []
    for value in [values] if isinstance(values, str) else values or []:
        parts = str(value).split(",")
        if any(not p.strip() for p in parts):
            raise ConfigError(f"{where}: {value!r} has an empty plugin name; list plugins as name or name:version, "
                              f"separated by commas")
        items += parts
    refs = [parse_plugin_ref(i, where) for i in items]
    names = [r.name for r in refs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"{where}: plugin {', '.join(twice)} is named more than once; name each plugin once")
    return refs


def refuse_plugin_params(value: str | None) -> None:
    """Rally's ``--plugin-params`` fill variables of rally-teams plugin configuration templates; bench has none."""
    if value:
        raise ConfigError("--plugin-params: bench has no plugin configurations for these to fill (Rally's fill the "
                          "templates of rally-teams' plugin configurations); set node settings with a car mixin "
                          "(car-configs/, --car-params) instead")
