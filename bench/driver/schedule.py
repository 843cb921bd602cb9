"""When each request of a client is due. Pure: no clock, no I/O.

A throttled client gets a target rate of ``target / clients``; its requests are due at ``start + offset``, each
offset the scheduler's ``next(previous offset)``. Latency is measured from that due time, so when the cluster
cannot keep up the queueing delay shows up as latency > service time (coordinated omission made visible).

Rally's unit-aware throughput: a target in ops/s (or a plain number) paces requests. A target in another unit
(``"50000 docs/s"``) paces the runner's work: the per-client request rate is ``target / clients / weight``, the
weight being what the last request did in that unit (the documents of a bulk), re-read whenever it changes; the
first request goes at once, since its weight is not known before. A runner that reports another unit than the
target's is an error, as in Rally.

Schedulers are named (``"schedule": "poisson"``); ``register_scheduler`` adds names (a track's ``track.py``).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from bench.track.arrival import SCHEDULES
from bench.track.model import Task
from bench.util.errors import ConfigError, TrackError

OPS = "ops/s"


class Scheduler(Protocol):
    """Rally's simple scheduler: the next due offset (s from the client's start) after ``current``. A scheduler
    may also have Rally's ``before_request(now)`` / ``after_request(now, weight, unit, meta)``: then it is used
    as it is (it reads the target from the task itself) and fed the runner's results."""

    def next(self, current: float) -> float: ...


@runtime_checkable
class FeedbackScheduler(Scheduler, Protocol):
    """A scheduler fed every request's result (Rally's full scheduler API; ``before_request`` is optional)."""

    def after_request(self, now: float, weight: float, unit: str, meta: dict[str, Any] | None) -> None: ...


# (task, target requests/s of this client -- None when the task has no target) -> Scheduler
SchedulerFactory = Callable[[Task, float | None], Scheduler]


class _Deterministic:
    def __init__(self, rate: float) -> None:
        self.wait = 1.0 / rate

    def next(self, current: float) -> float:
        return current + self.wait


class _Poisson:
    def __init__(self, rate: float, rnd: random.Random) -> None:
        self.rate = rate
        self.rnd = rnd

    def next(self, current: float) -> float:
        return current + self.rnd.expovariate(self.rate)


BUILTIN = ("deterministic", "poisson")
# Open-model schedules: not a client's pacer but the worker's dispatcher (bench.driver.arrival_loop) runs them.
ARRIVAL = SCHEDULES
_lock = threading.Lock()
_SCHEDULERS: dict[str, SchedulerFactory] = {}


def register_scheduler(name: str, factory: SchedulerFactory) -> None:
    """Make ``"schedule": name`` usable in tracks. A built-in name, or a name already taken by another factory,
    is a ConfigError (which scheduler a race uses must not depend on load order)."""
    if name in BUILTIN or name in ARRIVAL:
        raise ConfigError(f"scheduler '{name}' is built into bench and cannot be registered again")
    with _lock:
        old = _SCHEDULERS.get(name)
        if old is not None and old is not factory:
            raise ConfigError(f"scheduler '{name}' is registered twice ({old!r} and {factory!r})")
        _SCHEDULERS[name] = factory


def scheduler_names() -> list[str]:
    return [*BUILTIN, *ARRIVAL, *sorted(_SCHEDULERS)]


def has_scheduler(name: str) -> bool:
    return name in BUILTIN or name in ARRIVAL or name in _SCHEDULERS


def _make(task: Task, name: str, rate: float | None, seed: Any) -> Scheduler:
    if name == "deterministic":
        assert rate is not None
        return _Deterministic(rate)
    if name == "poisson":
        assert rate is not None
        return _Poisson(rate, random.Random(seed))
    factory = _SCHEDULERS.get(name)
    if name in ARRIVAL:  # a client loop must never pace an open-model task as if it were a closed one
        raise TrackError(f"task '{task.name}': schedule '{name}' is run by the worker's dispatcher, not a client's "
                         "pacer")
    if factory is None:
        raise TrackError(f"task '{task.name}': unknown schedule '{name}': use one of {', '.join(scheduler_names())}")
    return factory(task, rate)


class Pacer:
    """The due offsets of one client's requests (``None`` = send now, unthrottled)."""

    def __init__(self, task: Task, seed: Any = 0) -> None:
        self.task = task
        self.name = task.schedule or "deterministic"
        self.seed = seed
        rate = task.ops_per_second
        self.unit = task.throughput_unit if task.target_interval is None else OPS
        self.per_client = rate / task.clients if rate is not None else None
        # Rally: without a target, built-in schedules run unthrottled; a custom one still decides.
        self.unthrottled = self.per_client is None and self.name in BUILTIN
        self.current = 0.0
        self.first = True
        self.weight: float | None = None
        self.scheduler: Scheduler | None = None
        if not self.unthrottled and (self.unit == OPS or self.name not in BUILTIN):
            self.scheduler = _make(task, self.name, self.per_client, seed)
        self.feedback = self.scheduler if isinstance(self.scheduler, FeedbackScheduler) else None

    def next_offset(self, now: float = 0.0) -> float | None:
        """When the next request is due (seconds from the client's start), or None to send it at once."""
        if self.unthrottled:
            return None
        if self.feedback is not None:
            before = getattr(self.feedback, "before_request", None)
            if before is not None:
                before(now)
        if self.first:
            self.first = False
            return 0.0
        if self.scheduler is None:  # unit-aware, weight not known yet
            return None
        self.current = self.scheduler.next(self.current)
        return self.current

    def after_request(self, now: float, units: float, unit: str, meta: dict[str, Any] | None = None) -> None:
        """Feed back what the request did: re-paces a unit-aware target when the weight changes."""
        if self.unthrottled:
            return
        if self.feedback is not None:
            self.feedback.after_request(now, units, unit, meta)
            return
        if self.unit == OPS or units <= 0 or units == self.weight:
            return
        if f"{unit}/s" != self.unit:
            raise TrackError(f"task '{self.task.name}': target-throughput is in {self.unit} but its operation "
                             f"'{self.task.operation.name}' reports {unit}/s: give the target in {unit}/s or ops/s")
        self.weight = units
        assert self.per_client is not None
        self.scheduler = _make(self.task, self.name, self.per_client / units, self.seed)
