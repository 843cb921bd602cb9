"""YAML files of bench's own (car configs, telemetry profiles, experiments, topologies, Loadgen configs)
read into pydantic models, with every problem one ConfigError line naming the file, line or field."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from bench.util.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def read_yaml(path: Path, what: str) -> Any:
    """The parsed file (None when empty). ``what`` names the kind of file in errors ("car config", ...)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read {what} {path}: {getattr(e, 'strerror', None) or e}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f": line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"{what} {path}{where}: not valid YAML: {problem}; fix the file") from None


def validate_mapping(raw: Any, model: type[M], path: Path | str, what: str, shape: str) -> M:
    """``raw`` (a parsed file) as ``model``; ``shape`` says what the top level should hold, for the error."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{what} {path}: expected a mapping with {shape} at the top, got {type(raw).__name__}")
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "(top)"
        value = f" (value: {str(err['input'])[:80]!r})" if "input" in err and err["type"] != "missing" else ""
        raise ConfigError(f"{what} {path}: field '{field}': {err['msg']}{value}; fix the file") from None


def load_yaml_model(path: Path, model: type[M], what: str, shape: str, *, empty_ok: bool = False) -> M:
    """Read and validate a YAML file in one step; an empty file is ``{}`` when ``empty_ok``."""
    raw = read_yaml(path, what)
    if raw is None and empty_ok:
        raw = {}
    return validate_mapping(raw, model, path, what, shape)
