"""One-line warnings about a track that bench loads anyway (a legacy spelling, a variable rendered empty).

Each goes to stderr once per process, prefixed ``bench: warning:``, and to the log: the user sees what bench assumed
without a traceback or a repeated line per task.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import sys
import threading
from collections.abc import Iterator

log = logging.getLogger(__name__)
_lock = threading.Lock()
_SEEN: set[str] = set()
_silent = threading.local()


def warn(line: str) -> None:
    if getattr(_silent, "on", False):  # loading many tracks for a listing: the log only
        log.info("warning (not shown): %s", line)
        return
    with _lock:
        if line in _SEEN:
            return
        _SEEN.add(line)
    log.info("warning: %s", line)
    print(f"bench: warning: {line}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def silenced() -> Iterator[None]:
    """Warnings of this thread go to the log only for the block (e.g. ``bench list tracks`` loading each track)."""
    before = getattr(_silent, "on", False)
    _silent.on = True
    try:
        yield
    finally:
        _silent.on = before


# The flag that passes template parameters to what is loading (OSB's workloads: --workload-params).
_PARAMS_FLAG: contextvars.ContextVar[str] = contextvars.ContextVar("bench_params_flag", default="--track-params")


def params_flag() -> str:
    return _PARAMS_FLAG.get()


@contextlib.contextmanager
def naming_params_flag(flag: str) -> Iterator[None]:
    """Messages inside the block name ``flag`` as the way to pass parameters."""
    token = _PARAMS_FLAG.set(flag)
    try:
        yield
    finally:
        _PARAMS_FLAG.reset(token)


def params_hint(names: list[str]) -> str:
    """How to give the named track parameters."""
    return f"{params_flag()}=" + ",".join(f"{n}:VALUE" for n in names)
