"""Car configs: YAML files in car-configs/ composed like Rally's ``--car=defaults,1gheap,security``.

A composition holds exactly one ``type: car`` and any number of ``type: mixin``; entries are applied
in the order given (settings merged, jvm options appended, env merged, heap replaced). String values
may use Jinja2 ``{{ var }}``; ``variables`` give defaults and car params override them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import jinja2
import jinja2.meta
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bench.provision.model import Checksum
from bench.util.bundled import bundled_dir
from bench.util.errors import ConfigError
from bench.util.yaml_file import load_yaml_model

_HEAP = re.compile(r"^[1-9][0-9]*[kKmMgG]$")
_JINJA = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False)


class SecurityBlock(BaseModel):
    """Security on: bench creates this user with a generated password before start (Elasticsearch's file realm,
    OpenSearch's internal users) and, with tls, certificates for transport and HTTP from the race's CA."""

    model_config = ConfigDict(extra="forbid")
    user: str = "{{ security_user }}"
    role: str = "superuser"
    tls: bool | str = True  # a template ("{{ security_tls }}") renders to a bool


class CarFile(BaseModel):
    """One YAML file in car-configs/."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["car", "mixin"]
    description: str = ""
    heap: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    jvm_options: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    variables: dict[str, Any] = Field(default_factory=dict)
    security: SecurityBlock | None = None
    trial_license: bool = False
    distribution_repository: str | None = None
    distribution_checksum: Checksum | None = None


class SecurityConfig(BaseModel):
    user: str
    role: str = "superuser"
    tls: bool = True


class CarConfig(BaseModel):
    """A rendered composition of cars and mixins: what a node is configured with."""

    names: list[str]
    description: str = ""
    heap: str = "1g"
    settings: dict[str, Any] = Field(default_factory=dict)
    jvm_options: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    variables: dict[str, Any] = Field(default_factory=dict)
    security: SecurityConfig | None = None
    trial_license: bool = False
    repository: str | None = None
    checksum: Checksum | None = None

    @field_validator("heap")
    @classmethod
    def _heap(cls, v: str) -> str:
        if not _HEAP.match(v):
            raise ValueError(f"heap {v!r} is not a size like 512m or 2g")
        return v

    def heap_options(self) -> list[str]:
        return [f"-Xms{self.heap}", f"-Xmx{self.heap}"]


def car_dirs() -> list[Path]:
    """Built-in car-configs/ plus folders in $BENCH_CAR_PATH (os.pathsep separated); later folders win."""
    dirs = [bundled_dir("car-configs")]
    dirs += [Path(p).expanduser() for p in os.environ.get("BENCH_CAR_PATH", "").split(os.pathsep) if p]
    return dirs


def available_cars() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in car_dirs():
        if d.is_dir():
            for f in sorted(d.glob("*.yml")) + sorted(d.glob("*.yaml")):
                found[f.stem] = f
    return dict(sorted(found.items()))


def list_cars() -> list[tuple[str, str, str]]:
    """(name, type, description) of every available car and mixin."""
    return [(name, (c := read_car_file(path)).type, c.description) for name, path in available_cars().items()]


def read_car_file(path: Path) -> CarFile:
    return load_yaml_model(path, CarFile, "car config", "'type: car|mixin'")


def load_car(names: list[str], params: dict[str, Any] | None = None) -> CarConfig:
    """Compose and render the named cars/mixins with params overriding their variables."""
    params = dict(params or {})
    names = [n.strip() for n in names if n and n.strip()]
    if not names:
        raise ConfigError("no car given; use e.g. --car=defaults (see `bench list cars`)")
    files = [(n, _resolve(n)) for n in names]
    cars = [(n, f) for n, f in ((n, read_car_file(p)) for n, p in files)]
    kinds = [n for n, c in cars if c.type == "car"]
    if len(kinds) != 1:
        what = "no car" if not kinds else f"{len(kinds)} cars ({', '.join(kinds)})"
        raise ConfigError(f"car composition {','.join(names)} has {what}; use exactly one 'type: car' plus mixins")

    merged: dict[str, Any] = {"settings": {}, "jvm_options": [], "env": {}, "variables": {}, "heap": None,
                              "security": None, "trial_license": False, "repository": None, "checksum": None,
                              "description": ""}
    for _, c in cars:
        merged["settings"].update(c.settings)
        merged["jvm_options"] += c.jvm_options
        merged["env"].update(c.env)
        merged["variables"].update(c.variables)
        merged["heap"] = c.heap or merged["heap"]
        merged["security"] = c.security or merged["security"]
        merged["trial_license"] = merged["trial_license"] or c.trial_license
        merged["repository"] = c.distribution_repository or merged["repository"]
        merged["checksum"] = c.distribution_checksum or merged["checksum"]
        if c.type == "car":
            merged["description"] = c.description

    templated = {"settings": merged["settings"], "jvm_options": merged["jvm_options"], "env": merged["env"],
                 "heap": merged["heap"], "security": merged["security"].model_dump() if merged["security"] else None}
    used = set().union(*(_variables_in(s) for s in _strings(templated)))
    label = ",".join(names)
    unused = sorted(set(params) - used)
    if unused:
        raise ConfigError(f"car param(s) {', '.join(unused)} not used by car {label}; "
                          f"variables it uses: {', '.join(sorted(used)) or 'none'}")
    values = {**merged["variables"], **params}
    missing = sorted(used - set(values))
    if missing:
        raise ConfigError(f"car {label} uses variable(s) {', '.join(missing)} without a value; "
                          f"pass them with --car-params {missing[0]}:<value>")
    rendered = _render(templated, values)
    try:
        return CarConfig(names=names, description=merged["description"], heap=rendered["heap"] or "1g",
                         settings=rendered["settings"], jvm_options=rendered["jvm_options"],
                         env={k: str(v) for k, v in rendered["env"].items()}, variables=values,
                         security=SecurityConfig(**rendered["security"]) if rendered["security"] else None,
                         trial_license=merged["trial_license"], repository=merged["repository"],
                         checksum=merged["checksum"])
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        raise ConfigError(f"car {label}: field '{field}': {err['msg']}; check the car params and files") from None


def _resolve(name: str) -> Path:
    if name.endswith((".yml", ".yaml")) and Path(name).expanduser().is_file():
        return Path(name).expanduser()
    cars = available_cars()
    if name not in cars:
        raise ConfigError(f"unknown car {name!r}; available: {', '.join(cars) or 'none'} "
                          f"(looked in {', '.join(str(d) for d in car_dirs())})")
    return cars[name]


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def _variables_in(text: str) -> set[str]:
    if "{" not in text:
        return set()
    try:
        return set(jinja2.meta.find_undeclared_variables(_JINJA.parse(text)))
    except jinja2.TemplateSyntaxError as e:
        raise ConfigError(f"car template {text!r}: Jinja2 syntax error: {e.message}") from None


def _render(obj: Any, values: dict[str, Any]) -> Any:
    if isinstance(obj, str):
        if "{" not in obj:
            return obj
        out = _JINJA.from_string(obj).render(values)
        # "{{ replicas }}" should stay a number / bool in elasticsearch.yml.
        try:
            typed = yaml.safe_load(out)
        except yaml.YAMLError:
            return out
        return typed if isinstance(typed, (int, float, bool)) else out
    if isinstance(obj, dict):
        return {k: _render(v, values) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_render(v, values) for v in obj]
    return obj
