"""Loadgen's ``assert``: INFINI's conditions over a response, compiled once into a predicate.

Supported: ``equals``, ``contains``, ``prefix``, ``suffix``, ``regexp``, ``range`` (``gt``/``gte``/``lt``/
``lte``), ``in``, ``exists``, combined with ``and``, ``or``, ``not``; each leaf names one or more fields and
all of them must hold. Fields: ``_ctx.response.status``, ``_ctx.response.body`` (the text),
``_ctx.response.body_length`` and ``_ctx.response.body_json.<dotted path>`` (list items by index). The body
is parsed as JSON at most once per response, and only when a condition reads ``body_json``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.util.errors import ConfigError

_PREFIX = "_ctx.response."
_MISSING = object()


@dataclass
class Response:
    """What a condition sees of one response."""

    status: int
    raw: bytes
    _json: Any = field(default=_MISSING, repr=False)

    def value(self, name: str) -> Any:
        if name == "status":
            return self.status
        if name == "body":
            return self.raw.decode("utf-8", errors="replace")
        if name == "body_length":
            return len(self.raw)
        if self._json is _MISSING:
            try:
                self._json = json.loads(self.raw)
            except ValueError:
                self._json = None
        node: Any = self._json
        for part in name.split(".")[1:]:  # "body_json.hits.total.value"
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return _MISSING
        return node


Predicate = Callable[[Response], bool]


def _field(name: Any, where: str) -> str:
    name = str(name)
    rest = name[len(_PREFIX):] if name.startswith(_PREFIX) else ""
    if rest in ("status", "body", "body_length") or (rest.startswith("body_json.") and len(rest) > 10):
        return rest
    raise ConfigError(f"{where}: field '{name}' is not supported: use _ctx.response.status, _ctx.response.body, "
                      f"_ctx.response.body_length or _ctx.response.body_json.<path>")


def _same(actual: Any, expected: Any) -> bool:
    if actual is _MISSING:
        return False
    if isinstance(actual, bool) or isinstance(expected, bool):
        return actual is expected or str(actual).lower() == str(expected).lower()
    if isinstance(actual, int | float) and isinstance(expected, int | float):
        return float(actual) == float(expected)
    return actual == expected or str(actual) == str(expected)


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or v is _MISSING:
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _text(v: Any) -> str | None:
    if v is _MISSING or v is None:
        return None
    return v if isinstance(v, str) else json.dumps(v)


def _leaf(kind: str, spec: Any, where: str) -> Predicate:
    w = f"{where}.{kind}"
    if kind == "exists":
        names = [_field(n, w) for n in (spec if isinstance(spec, list) else [spec])]
        return lambda r: all(r.value(n) is not _MISSING for n in names)
    if not isinstance(spec, dict) or not spec:
        raise ConfigError(f"{w}: expected a mapping of field: value")
    return _all_of([_field_check(kind, _field(name, w), expected, f"{w}.{name}") for name, expected in spec.items()])


_TEXT_OPS: dict[str, Callable[[str, str], bool]] = {
    "contains": str.__contains__, "prefix": str.startswith, "suffix": str.endswith}


def _field_check(kind: str, n: str, expected: Any, where: str) -> Predicate:
    """The check of one field ``n`` of a leaf; ``where`` names the field in the file."""
    if kind == "equals":
        return lambda r: _same(r.value(n), expected)
    if kind in _TEXT_OPS:
        op, e = _TEXT_OPS[kind], str(expected)
        return lambda r: (t := _text(r.value(n))) is not None and op(t, e)
    if kind == "regexp":
        try:
            pattern = re.compile(str(expected))
        except re.error as err:
            raise ConfigError(f"{where}: bad regular expression: {err}") from None
        return lambda r: (t := _text(r.value(n))) is not None and pattern.search(t) is not None
    if kind == "in":
        if not isinstance(expected, list):
            raise ConfigError(f"{where}: expected a list of values")
        return lambda r: any(_same(r.value(n), x) for x in expected)
    if kind == "range":
        if not isinstance(expected, dict) or not set(expected) <= {"gt", "gte", "lt", "lte"} or not expected:
            raise ConfigError(f"{where}: expected bounds among gt, gte, lt, lte")
        bounds = {k: float(v) for k, v in expected.items()}
        return lambda r: _in_range(_number(r.value(n)), bounds)
    raise ValueError(f"not a leaf condition: {kind}")


def _all_of(predicates: list[Predicate]) -> Predicate:
    return lambda r: all(p(r) for p in predicates)


def _any_of(predicates: list[Predicate]) -> Predicate:
    return lambda r: any(p(r) for p in predicates)


def _negated(predicate: Predicate) -> Predicate:
    return lambda r: not predicate(r)


def _in_range(v: float | None, b: dict[str, float]) -> bool:
    if v is None:
        return False
    return ((("gt" not in b) or v > b["gt"]) and (("gte" not in b) or v >= b["gte"])
            and (("lt" not in b) or v < b["lt"]) and (("lte" not in b) or v <= b["lte"]))


_LEAVES = ("equals", "contains", "prefix", "suffix", "regexp", "range", "in", "exists")


def compile_condition(spec: Any, where: str) -> Predicate:
    """A predicate for an ``assert`` block; a ConfigError naming ``where`` for anything it cannot check."""
    if not isinstance(spec, dict) or not spec:
        raise ConfigError(f"{where}: expected a condition such as equals: {{_ctx.response.status: 200}}")
    parts: list[Predicate] = []
    for kind, sub in spec.items():
        w = f"{where}.{kind}"
        if kind in ("and", "or"):
            if not isinstance(sub, list) or not sub:
                raise ConfigError(f"{w}: expected a list of conditions")
            subs = [compile_condition(s, f"{w}[{i}]") for i, s in enumerate(sub)]
            parts.append(_all_of(subs) if kind == "and" else _any_of(subs))
        elif kind == "not":
            parts.append(_negated(compile_condition(sub, w)))
        elif kind in _LEAVES:
            parts.append(_leaf(kind, sub, where))
        else:
            raise ConfigError(f"{w}: unknown condition '{kind}': use one of {', '.join((*_LEAVES, 'and', 'or', 'not'))}")
    return _all_of(parts)
