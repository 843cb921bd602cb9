"""Rows an extension adds to the live view, made from the telemetry rows a race stores while it runs.

An extension registers a function from telemetry rows to ``LiveRow``s (``register_live_rows``, exported by
``bench.api``); the race offers it every batch of telemetry rows as they are stored, and the live view shows the
newest row of each (group, key) in a table of the group, and each value over time in the live page. The core
knows nothing of what the rows mean: a follower's lag, a node's heap, whatever a device samples.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from pydantic import BaseModel

from bench.driver.samples import TelemetryRow

log = logging.getLogger(__name__)


class LiveRow(BaseModel):
    """One line of an extension's table in the live view."""

    group: str  # the table's title, e.g. "Follower lag"
    key: str  # the line's name within the group, e.g. "follower/logs"
    at: float  # epoch seconds of the reading
    # Column -> value; None: unknown at this reading (shown as "?", never as 0).
    values: dict[str, float | None] = {}
    note: str = ""  # a state worth a word (e.g. "paused", "missing: lag unknown")


LiveRowSource = Callable[[Sequence[TelemetryRow]], list[LiveRow]]

_lock = threading.Lock()
_SOURCES: list[LiveRowSource] = []


def register_live_rows(source: LiveRowSource) -> None:
    """Add a function that turns stored telemetry rows into live-view rows; idempotent."""
    with _lock:
        if source not in _SOURCES:
            _SOURCES.append(source)


def unregister_live_rows(source: LiveRowSource) -> None:
    with _lock:
        if source in _SOURCES:
            _SOURCES.remove(source)


def live_rows(rows: Sequence[TelemetryRow]) -> list[LiveRow]:
    """What every registered source makes of ``rows``. A source that fails is logged and skipped: the live view is
    a view, it never fails a race."""
    with _lock:
        sources = list(_SOURCES)
    out: list[LiveRow] = []
    for source in sources:
        try:
            out += source(rows)
        except Exception as e:  # noqa: BLE001 - see above
            log.warning("live view rows of %s failed: %s: %s", getattr(source, "__name__", source),
                        type(e).__name__, e)
    return out
