"""Failed requests in the log: one warning per distinct (task, message), the first time it is seen, so 100,000
identical failures make one line (their count is in the summary) and a new kind of failure is never hidden."""

from __future__ import annotations

import logging
from collections.abc import Callable

from bench.driver.samples import RequestSample

log = logging.getLogger(__name__)

MAX_DISTINCT = 1000  # messages carrying ids or times would otherwise log (and remember) every request


class FailureLog:
    """A sample sink wrapper: logs new failure messages, then passes every batch on to ``sink``."""

    def __init__(self, sink: Callable[[list[RequestSample]], None]) -> None:
        self._sink = sink
        self._seen: set[tuple[str, str]] = set()
        self._capped = False

    def __call__(self, batch: list[RequestSample]) -> None:
        for s in batch:
            if s.success and not s.failed_units:
                continue
            key = (s.task, s.error or s.error_type or "item-errors")
            if key in self._seen:
                continue
            if len(self._seen) >= MAX_DISTINCT:
                if not self._capped:
                    self._capped = True
                    log.warning("more than %d distinct request failures: no more are logged (the trial's summary "
                                "lists them all with counts)", MAX_DISTINCT)
                continue
            self._seen.add(key)
            log.warning("task '%s' (%s): a request failed: %s (identical failures are counted, not logged again)",
                        s.task, s.operation_type, key[1])
        self._sink(batch)
