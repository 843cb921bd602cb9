"""One client executing one task: wait until the next request is due, send it, time it, record it.

Timing uses the monotonic clock (shared by all processes on the machine, so every worker agrees
on a task's start); wall-clock timestamps are derived from it once per process.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp

from bench.driver.custom_schedule import RallySchedule
from bench.driver.missing_feature import explain
from bench.driver.param_sources import CorpusSource
from bench.driver.param_types import ParamError
from bench.driver.runners.core import Context, Result, Runner, request_docs
from bench.driver.samples import SampleFields
from bench.driver.schedule import Pacer
from bench.track.model import Task

# time.time() - time.monotonic(), fixed per process so absolute times are consistent with durations.
WALL_OFFSET = time.time() - time.monotonic()


@dataclass
class Bounds:
    """When a client stops (by iterations, by time, or when its parameter source is exhausted) and which of its
    requests are warmup: by time when the task names a time period or a warmup time period (Rally's
    time-period schedule), else its first ``warmup_iterations``."""

    warmup_iterations: int
    iterations: int | None  # measured iterations; None = not iteration-bounded
    warmup_end: float  # monotonic
    deadline: float | None  # monotonic; None = not time-bounded
    by_time: bool = False
    # A client sending its corpus slice once keeps at least half of its requests out of a warmup time period:
    # at most this many of its requests are warmup (``bench.driver.warmup``).
    warmup_cap: int | None = None

    @staticmethod
    def of(task: Task, start_at: float, corpus_requests: int | None = None, *,
           finite_source: bool = False, client_index: int = 0) -> "Bounds":
        warmup_end = start_at + (task.warmup_time_period or 0.0)
        deadline = warmup_end + task.time_period + task.stop_delay(client_index) \
            if task.time_period is not None else None
        iterations = task.iterations
        if iterations is None and deadline is None and task.operation.operation_type != "bulk" \
                and not finite_source:
            # Rally's default for a task that names neither iterations nor a time period; a finite parameter
            # source (a track's, see bench.driver.custom_sources) runs until it is exhausted instead.
            iterations = 1
        by_time = task.warmup_time_period is not None or task.time_period is not None
        cap = corpus_requests // 2 if corpus_requests is not None and by_time and task.warmup_time_period else None
        return Bounds(task.warmup_iterations or 0, iterations, warmup_end, deadline, by_time, cap)

    def is_warmup(self, i: int, due: float) -> bool:
        """Whether the client's ``i``-th request (0-based), due at ``due``, is warmup."""
        if not self.by_time:
            return i < self.warmup_iterations
        return due < self.warmup_end and (self.warmup_cap is None or i < self.warmup_cap)


CONNECTION = "connection"  # the error type of a request that could not reach the cluster

# A client whose request could not reach the cluster (connection refused, reset, unreachable) waits before its
# next request: BACKOFF_FIRST, doubling after each such failure up to BACKOFF_CAP, none again after any answer.
# Without it a dead target made each client fail as fast as the machine could open sockets (thousands of errors in
# under 3 s), so the error count measured the load driver, not the outage. A timeout already waited; an HTTP error
# is an answer.
BACKOFF_FIRST = 0.05
BACKOFF_CAP = 1.0


def next_backoff(previous: float) -> float:
    """The wait after a connection failure that followed a wait of ``previous`` seconds (0: the first)."""
    return min(BACKOFF_CAP, previous * 2 if previous else BACKOFF_FIRST)


def failed_without_answer(e: BaseException, params: dict[str, Any]) -> Result:
    """The failed request of an exception: a bulk that got no answer failed every document it carried."""
    res = result_from_exception(e)
    docs = request_docs(params)
    if docs:
        res.units, res.unit, res.failed_units = docs, "docs", docs
    return res


def result_from_exception(e: BaseException) -> Result:
    if isinstance(e, (asyncio.TimeoutError, TimeoutError)):
        return Result(success=False, error_type="timeout", detail="request timed out")
    if isinstance(e, aiohttp.ClientConnectionError | ConnectionError | OSError):
        return Result(success=False, error_type=CONNECTION, detail=f"connection error: {e}")
    if isinstance(e, aiohttp.ClientError):
        return Result(success=False, error_type="transport", detail=f"{type(e).__name__}: {e}")
    return Result(success=False, error_type=type(e).__name__, detail=f"{type(e).__name__}: {e}")


async def _sleep(stopped: asyncio.Future[Any], seconds: float) -> bool:
    """Sleep ``seconds``; True when the step was stopped meanwhile (waking up at once)."""
    if not stopped.done():
        await asyncio.wait((stopped,), timeout=seconds)
    return stopped.done()


async def run_client(task: Task, client_id: int, ctx: Context, runner: Runner, source: Iterator[dict[str, Any]],
                     start_at: float, record: Callable[[SampleFields], None], stop: asyncio.Event,
                     on_failure: Callable[[str], None] | None = None,
                     on_cancel: Callable[[], None] | None = None, offsets: Iterator[float | None] | None = None
                     ) -> None:
    """Run one client of ``task`` until its bounds are reached, its source is exhausted, or ``stop``.

    ``offsets`` replaces the task's own schedule (a track's scheduler); one with ``feedback`` hears about every
    request (``before_request``/``after_request``, Rally's scheduler API).
    A request cancelled in flight (an interruption) is neither a success nor a failure: it is only
    counted through ``on_cancel``, never recorded."""
    b = Bounds.of(task, start_at, source.count if isinstance(source, CorpusSource) else None,
                  finite_source=getattr(source, "finite", False), client_index=client_id)
    # The task's own schedule unless a track's scheduler replaces it.
    pacer = Pacer(task, seed=client_id) if offsets is None else None
    feedback = offsets if isinstance(offsets, RallySchedule) else None
    # Ramp-up: this client's schedule starts later than the task's; the task's clock (warmup end,
    # relative times) stays the same for every client.
    client_start = start_at + task.start_delay(client_id)
    # One task per client hears the stop; a sleep waits on it with a timeout (asyncio.wait_for(stop.wait()) per
    # request made and cancelled a task each time: the largest cost of a paced client).
    stopped = asyncio.ensure_future(stop.wait())
    try:
        now = time.monotonic()
        if client_start > now and await _sleep(stopped, client_start - now):
            return
        await _requests(task, client_id, ctx, runner, source, start_at, record, stop, stopped, b, client_start,
                        pacer, offsets, feedback, on_failure, on_cancel)
    finally:
        stopped.cancel()


async def _requests(task: Task, client_id: int, ctx: Context, runner: Runner, source: Iterator[dict[str, Any]],
                    start_at: float, record: Callable[[SampleFields], None], stop: asyncio.Event,
                    stopped: asyncio.Future[Any], b: Bounds, client_start: float, pacer: Pacer | None,
                    offsets: Iterator[float | None] | None, feedback: RallySchedule | None,
                    on_failure: Callable[[str], None] | None, on_cancel: Callable[[], None] | None) -> None:
    """The client's requests, one after the other, each recorded as a sample (run_client's loop: one function, as
    the per-request path is kept free of calls it does not need)."""
    task_meta = json.dumps(task.meta, default=str) if task.meta else None
    op = task.operation
    total_iterations = None if b.iterations is None else b.warmup_iterations + b.iterations
    i = 0
    backoff = 0.0  # the last wait after a connection failure; 0 after an answer
    while not stop.is_set():
        if total_iterations is not None and i >= total_iterations:
            break
        if b.deadline is not None and time.monotonic() >= b.deadline:
            break
        try:
            params = next(source)
        except StopIteration:
            break
        if pacer is not None:
            off = pacer.next_offset(time.monotonic() - client_start)
        else:
            assert offsets is not None  # the track's scheduler instead of the pacer
            off = next(offsets)
        if off is None:
            due = time.monotonic()
        else:
            due = client_start + off
            wait = due - time.monotonic()
            if wait > 0:
                if b.deadline is not None and due >= b.deadline:
                    break
                if await _sleep(stopped, wait):
                    break
        if feedback is not None:
            feedback.before_request(time.perf_counter())
        t0 = time.monotonic()
        try:
            res = await runner(ctx, params)
        except asyncio.CancelledError:
            if on_cancel is not None:
                on_cancel()
            raise
        except ParamError:
            raise  # a bad track parameter stops the race at its first use instead of failing every request
        except MemoryError:
            raise  # the load driver's, not the cluster's: never a failed request
        except Exception as e:  # noqa: BLE001 - every failure of a request is data, not a crash
            res = failed_without_answer(e, params)
        t1 = time.monotonic() - res.after_response
        if pacer is not None:
            pacer.after_request(t1 - client_start, res.units if res.success else 0, res.unit)
        if feedback is not None:
            feedback.after_request(time.perf_counter(), res.units if res.success else 0, res.unit,
                                   {"success": res.success, **(res.meta or {})})
        warmup = b.is_warmup(i, due)
        # A failure because the cluster lacks a module or licence says so (bench.driver.missing_feature).
        detail = None if res.success or not (why := res.detail or res.error_type) else explain(why)
        meta = task_meta if not res.meta else json.dumps({**task.meta, **res.meta}, default=str, sort_keys=True)
        record((task.name, op.name, op.operation_type, client_id, WALL_OFFSET + due, t1 - start_at,
                t1 - due, t1 - t0, res.units, res.unit, res.bytes_sent, res.success, res.error_type,
                warmup, res.failed_units, res.bytes_received, res.status,
                detail, meta))
        # Rally: a task with ignore-response-error-level non-fatal does not stop an --on-error=abort race.
        if not res.success and on_failure is not None and task.ignore_response_error_level != "non-fatal":
            on_failure(f"task '{task.name}' ({op.operation_type}) failed: {detail}")
        i += 1
        if res.error_type == CONNECTION:
            # Not any request's time: the next one's latency counts from its due time, so for a paced task it
            # includes this wait (the request was due and not sent), its service time does not.
            backoff = next_backoff(backoff)
            wait = backoff if b.deadline is None else min(backoff, b.deadline - time.monotonic())
            if wait > 0 and await _sleep(stopped, wait):
                break
        elif res.success or res.status:
            backoff = 0.0
