"""One worker's share of an arrival-rate task: iterations start at their due times (``bench.driver.arrival_times``)
on whichever of the worker's clients is free; with none free the iteration is dropped and counted, never sent late.

Latency is measured from the due time, as for a closed-loop client (``bench.driver.client_loop``): an iteration
sent late because the worker's loop was busy shows its wait. Only iterations due in the measured part (after the
warmup) are counted as scheduled or dropped, so the two describe the same samples the summary does.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bench.driver.arrival_times import due_offsets
from bench.driver.client_loop import CONNECTION, WALL_OFFSET, failed_without_answer, next_backoff
from bench.driver.missing_feature import explain
from bench.driver.param_types import ParamError
from bench.driver.runners.core import Context, Runner
from bench.driver.samples import SampleFields
from bench.track.model import Task

# A wait shorter than this is a plain sleep; a longer one also wakes on the step's stop.
_SHORT_WAIT = 0.05


@dataclass
class Slot:
    """One client of the task on this worker."""

    client_id: int
    runner: Runner
    source: Iterator[dict[str, Any]]
    backoff: float = 0.0  # the last wait after a connection failure; 0 after an answer
    free_since: float = 0.0  # monotonic: when it last became free
    taken_at: float = 0.0  # monotonic: when it took its current iteration


@dataclass
class ArrivalCount:
    """What a worker's dispatcher did with a task's measured iterations."""

    task: str
    operation_type: str
    scheduled: int = 0
    dropped: int = 0
    # Of ``dropped``: those due while a client that is busy now was still free -- it took an earlier iteration
    # only after this one was due, because the dispatcher was behind (a stall, a starved CPU): the driver's drops.
    dropped_late: int = 0


@dataclass
class _Dispatch:
    task: Task
    ctx: Context
    start_at: float
    record: Callable[[SampleFields], None]
    on_failure: Callable[[str], None] | None
    on_cancel: Callable[[], None] | None
    free: list[Slot]
    count: ArrivalCount
    inflight: set[asyncio.Task[None]] = field(default_factory=set)
    error: BaseException | None = None
    exhausted: bool = False
    last: Slot | None = None  # the client that took the latest iteration
    meta: str | None = None

    def __post_init__(self) -> None:
        self.meta = json.dumps(self.task.meta, default=str) if self.task.meta else None

    def done(self, t: asyncio.Task[None]) -> None:
        self.inflight.discard(t)
        if not t.cancelled() and t.exception() is not None and self.error is None:
            self.error = t.exception()

    async def one(self, slot: Slot, due: float, warmup: bool) -> None:
        task, op = self.task, self.task.operation
        try:
            params = next(slot.source)
        except StopIteration:
            self.exhausted = True  # a finite source ends the task; the client is not returned
            return
        t0 = time.monotonic()
        try:
            res = await slot.runner(self.ctx, params)
        except asyncio.CancelledError:
            if self.on_cancel is not None:
                self.on_cancel()
            raise
        except (ParamError, MemoryError):
            raise  # a bad track parameter, the driver's own memory: never a failed request
        except Exception as e:  # noqa: BLE001 - every failure of a request is data, not a crash
            res = failed_without_answer(e, params)
        t1 = time.monotonic() - res.after_response
        detail = None if res.success or not (why := res.detail or res.error_type) else explain(why)
        meta = self.meta if not res.meta else json.dumps({**task.meta, **res.meta}, default=str, sort_keys=True)
        self.record((task.name, op.name, op.operation_type, slot.client_id, WALL_OFFSET + due, t1 - self.start_at,
                     t1 - due, t1 - t0, res.units, res.unit, res.bytes_sent, res.success, res.error_type,
                     warmup, res.failed_units, res.bytes_received, res.status, detail, meta))
        if not res.success and self.on_failure is not None and task.ignore_response_error_level != "non-fatal":
            self.on_failure(f"task '{task.name}' ({op.operation_type}) failed: {detail}")
        if res.error_type == CONNECTION:
            # The client waits before it takes another iteration (see client_loop.BACKOFF_FIRST); meanwhile the
            # iterations it would have sent find it busy and are dropped.
            slot.backoff = next_backoff(slot.backoff)
            await asyncio.sleep(slot.backoff)
        elif res.success or res.status:
            slot.backoff = 0.0
        slot.free_since = time.monotonic()
        self.free.append(slot)


async def _wait(stopped: asyncio.Future[Any], seconds: float) -> bool:
    """Sleep ``seconds``; True when the step was stopped."""
    if seconds < _SHORT_WAIT:
        await asyncio.sleep(seconds)
    elif not stopped.done():
        await asyncio.wait((stopped,), timeout=seconds)
    return stopped.done()


async def run_arrivals(task: Task, slots: list[Slot], ctx: Context, start_at: float,
                       record: Callable[[SampleFields], None], stop: asyncio.Event,
                       on_failure: Callable[[str], None] | None = None,
                       on_cancel: Callable[[], None] | None = None) -> ArrivalCount:
    """Send this worker's iterations of ``task`` from ``start_at`` (monotonic) until its schedule ends or
    ``stop``; returns the measured iterations scheduled and dropped. In-flight requests are answered before it
    returns (cancelled with it)."""
    arrival = task.arrival
    assert arrival is not None
    warmup = task.warmup_time_period or 0.0
    segments = arrival.segments(warmup, task.time_period)
    warmup_end = start_at + warmup
    # Lowest client ids first: the pre-allocated clients take the iterations, more only when they are all busy.
    free = sorted(slots, key=lambda s: -s.client_id)
    d = _Dispatch(task, ctx, start_at, record, on_failure, on_cancel, free,
                  ArrivalCount(task.name, task.operation.operation_type))
    stopped = asyncio.ensure_future(stop.wait())
    try:
        for off in due_offsets(segments, arrival.distribution, task.clients, [s.client_id for s in slots],
                               seed=task.name):
            due = start_at + off
            # Iterations already due go out in one turn of the loop (a dispatcher behind its schedule catches up
            # without a turn each); one finding no client free lets the loop run once first (answers in).
            wait = due - time.monotonic()
            if (wait > 0 and await _wait(stopped, wait)) or stop.is_set():
                break
            if not free:
                await asyncio.sleep(0)
                if stop.is_set():
                    break
            if d.error is not None:
                raise d.error
            if d.exhausted:
                break
            measured = due >= warmup_end
            d.count.scheduled += measured
            if not free:
                d.count.dropped += measured
                # The latest client taken was free at this due time: only the dispatcher's delay made it busy
                # (checking that one client keeps a drop O(1); the count is a lower bound).
                last = d.last
                d.count.dropped_late += measured and last is not None and last.free_since <= due < last.taken_at
                continue
            slot = d.last = free.pop()
            slot.taken_at = time.monotonic()
            t = asyncio.ensure_future(d.one(slot, due, not measured))
            d.inflight.add(t)
            t.add_done_callback(d.done)
        if d.inflight:
            await asyncio.gather(*d.inflight, return_exceptions=True)
        if d.error is not None:
            raise d.error
        return d.count
    finally:
        stopped.cancel()
        for t in list(d.inflight):
            t.cancel()
