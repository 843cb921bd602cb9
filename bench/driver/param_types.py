"""Typed reading of operation parameters, with Rally's leniency: tracks write booleans and numbers as strings
("true", "0", "5") as often as as JSON values. Anything else is an error naming the parameter -- never a
silent default, since ``bool("false")`` is True and ``int("true")`` raises deep inside a runner."""

from __future__ import annotations

from typing import Any

from bench.util.errors import TrackError

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


class ParamError(TrackError):
    """An operation parameter has a value of the wrong kind (the race stops at its first use)."""


def _bad(name: str, value: Any, expected: str) -> ParamError:
    return ParamError(f"operation parameter '{name}' is {value!r}: expected {expected} (fix it in the track)")


def as_bool(value: Any, name: str) -> bool:
    """True/False from a JSON boolean, 0/1, or the strings "true"/"false"/"1"/"0" (any case)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise _bad(name, value, "true or false")


def as_float(value: Any, name: str) -> float:
    """A number from a JSON number or a numeric string ("0.5")."""
    if isinstance(value, bool):
        raise _bad(name, value, "a number")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise _bad(name, value, "a number")


def as_int(value: Any, name: str) -> int:
    """An integer from a JSON integer, a whole float, or an integer string ("5")."""
    if isinstance(value, bool):
        raise _bad(name, value, "an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise _bad(name, value, "an integer")


def param_bool(p: dict[str, Any], name: str, default: bool) -> bool:
    return as_bool(p[name], name) if p.get(name) is not None else default


def param_int(p: dict[str, Any], name: str, default: int) -> int:
    return as_int(p[name], name) if p.get(name) is not None else default


def param_float(p: dict[str, Any], name: str, default: float) -> float:
    return as_float(p[name], name) if p.get(name) is not None else default
