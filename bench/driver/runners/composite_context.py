"""The ids that requests of one ``composite`` operation hand to each other (a point in time, an async search),
keyed by the name of the request that made them. Like Rally, only a composite operation has such a scope: the
operations that need one fail, counted, when used as a task of their own."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_ids: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("composite_ids")


class OutsideComposite(RuntimeError):
    pass


@contextmanager
def scope() -> Iterator[dict[str, Any]]:
    token = _ids.set({})
    try:
        yield _ids.get()
    finally:
        _ids.reset(token)


def _current() -> dict[str, Any]:
    try:
        return _ids.get()
    except LookupError:
        raise OutsideComposite("this operation is only allowed inside a composite operation (as in Rally)") from None


def put(name: str, value: Any) -> None:
    _current()[name] = value


def get(name: str) -> Any:
    ids = _current()
    if name not in ids:
        raise KeyError(f"no request named '{name}' has run in this composite operation yet (known: "
                       f"{', '.join(ids) or 'none'})")
    return ids[name]


def remove(name: str) -> None:
    get(name)
    _current().pop(name)


def has(name: str) -> bool:
    return name in _current()
