"""``osbenchmark.utils.parse``: OSB's typed readers of an operation's params (a wrong type is a
``ConfigurationError`` naming the parameter)."""

from __future__ import annotations

from typing import Any

from bench.compat.osbenchmark.exceptions import ConfigurationError


def _read(key: str, params: dict[str, Any], default: Any, kind: type | tuple[type, ...], what: str,
          falsy_default_absent: bool = False, empty_is_absent: bool = False) -> Any:
    if key not in params or (empty_is_absent and not params[key]):
        if default is not None and not (falsy_default_absent and not default):
            return default
        raise ConfigurationError(f"Value cannot be None for param {key}")
    value = params[key]
    # bool is an int in Python; OSB's int check accepts it too (isinstance), so does this one
    if isinstance(value, kind):
        return value
    raise ConfigurationError(f"Value must be a {what} for param {key}")


def parse_string_parameter(key: str, params: dict[str, Any], default: str | None = None) -> str:
    # OSB treats an empty string as absent
    return _read(key, params, default, str, "string", empty_is_absent=True)


def parse_int_parameter(key: str, params: dict[str, Any], default: int | None = None) -> int:
    return _read(key, params, default, int, "int")


def parse_float_parameter(key: str, params: dict[str, Any], default: float | None = None) -> float:
    # OSB returns a default only when it is truthy (``if default:``)
    return _read(key, params, default, float, "float", falsy_default_absent=True)


def parse_bool_parameter(key: str, params: dict[str, Any], default: bool | None = None) -> bool:
    return _read(key, params, default, bool, "bool")
