"""How a run (``bench race``, ``bench loadgen``) ends up in the trial store, whatever ends it.

One context manager for both, so every way out -- success, a bench error, a crash, Ctrl-C or SIGTERM --
stores the trial's status, error and summary (from the samples stored so far when the run did not get
to summarize them itself) and closes the store.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bench.driver.samples import RequestSample
from bench.results.summary import Summary
from bench.trials.model import Trials
from bench.util.errors import BenchError, RaceInterrupted


class SampleBuffer:
    """The coordinator's sink: samples go to the store as they arrive, at most every ``every`` seconds (or
    sooner when many are pending), so a killed bench loses at most that much. The coordinator also calls it
    with an empty batch when idle, so pending samples are written on time even when no new batch comes.
    ``flush()`` writes the rest."""

    def __init__(self, store: Trials, trial_id: str, *, every: float = 0.5, most: int = 50_000) -> None:
        self._store, self._trial_id, self._every, self._most = store, trial_id, every, most
        self._pending: list[RequestSample] = []
        self._last = time.monotonic()

    def __call__(self, batch: list[RequestSample]) -> None:
        self._pending.extend(batch)
        if time.monotonic() - self._last >= self._every or len(self._pending) > self._most:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._store.add_samples(self._trial_id, self._pending)
            self._pending.clear()
        self._last = time.monotonic()


class SigtermInterrupt(BaseException):
    """Raised from the SIGTERM handler outside the event loop (as KeyboardInterrupt is for SIGINT)."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM interrupts like Ctrl-C does, so the run is stored as aborted."""

    def handler(signum: int, frame: Any) -> None:
        raise SigtermInterrupt()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


INTERRUPTIONS = (KeyboardInterrupt, SigtermInterrupt, RaceInterrupted)


def _interruption(e: BaseException) -> str:
    # str(KeyboardInterrupt()) is empty: name the signal ourselves.
    reason = str(e) or ("SIGTERM" if isinstance(e, SigtermInterrupt) else "Ctrl-C")
    return f"interrupted ({reason})"


@dataclass
class Outcome:
    """What the block sets as it goes: the summary once it has one (status and error are set on the way out)."""

    status: str = "failed"
    error: str | None = None
    summary: Summary | None = None
    _store: Callable[[], None] | None = field(default=None, repr=False)
    # How a block that ran to its end ended, when not "complete" (e.g. stopped early by a threshold), and why.
    ended: tuple[str, str] | None = None

    def store_interrupted(self, e: BaseException) -> None:
        """Store the trial as aborted now, before slow clean-up (stopping nodes) runs after an interruption."""
        self.status, self.error = "aborted", _interruption(e)
        if self._store is not None:
            self._store()


@contextmanager
def recorded_run(store: Trials, trial_id: str, what: str,
                 stored_summary: Callable[[], Summary | None]) -> Iterator[Outcome]:
    """Run the block, then store how it ended. An interruption is re-raised as RaceInterrupted.

    ``what`` names the run in the interruption message ("race", "loadgen run"); ``stored_summary`` builds a
    summary from what the store holds, for runs that ended before making their own.
    """
    out = Outcome()
    stored = False

    def store_outcome() -> None:
        nonlocal stored
        if stored:
            return
        stored = True
        if out.summary is None:
            out.summary = stored_summary()
        if out.summary is not None:
            store.set_summary(trial_id, out.summary)
        store.finish_trial(trial_id, out.status, out.error)

    out._store = store_outcome
    try:
        with sigterm_as_interrupt():
            yield out
        out.status, out.error = out.ended if out.ended is not None else ("complete", None)
    except INTERRUPTIONS as e:
        if not stored:
            out.status, out.error = "aborted", _interruption(e)
        raise RaceInterrupted(f"{what} {trial_id} {out.error}: stored as aborted with the samples taken so far") \
            from None
    except BenchError as e:
        out.error = str(e)
        raise
    except BaseException as e:
        out.error = f"{type(e).__name__}: {e}"
        raise
    finally:
        try:
            store_outcome()
        finally:
            store.close()
