"""Schedulers a track's ``track.py`` registers (``"schedule": "<name>"`` on a task), as Rally drives them.

A scheduler says when a client's next request is due: ``next(current)`` gets the previous due time (seconds since
the client started; 0 before the first request) and returns the next one. Rally's forms:

- simple: ``__init__(self, task, target_throughput)`` + ``next(current)``. ``target_throughput`` is the client's
  share in requests/s (the task's target-throughput / clients / the weight of one request when the runner reports
  ops); the first request goes out at once, and the scheduler is made once that request reports its weight;
- full: ``__init__(self, task)`` + ``before_request(now)``, ``after_request(now, weight, unit, request_meta_data)``
  and ``next(current)``: it computes its own rate from ``task`` and sees every response; with a
  ``parameter_source`` attribute it gets the client's parameter source;
- legacy: ``__init__(self, params)`` + ``next(current)`` (Rally still accepts it);
- a function ``current -> next``.

``task`` is Rally's view of the task (``bench.track.rally_view.RallyTask``); ``now`` is ``time.perf_counter()``.
"""

from __future__ import annotations

import inspect
from typing import Any

from bench.track.model import Task
from bench.track.rally_view import RallyTask
from bench.util.errors import TrackError


class _Unthrottled:
    def next(self, current: float) -> float:
        return 0.0


class _Function:
    def __init__(self, fn: Any) -> None:
        self._fn = fn

    def next(self, current: float) -> float:
        return self._fn(current)


def scheduler_kind(cls: Any) -> str:
    """function, legacy, full or simple (see the module docstring)."""
    if inspect.isfunction(cls):
        return "function"
    init = inspect.signature(cls.__init__).parameters
    if "params" in init:
        return "legacy"
    names = {n for n, _ in inspect.getmembers(cls, inspect.isfunction)}
    return "full" if {"before_request", "after_request", "next"} <= names else "simple"


class RallySchedule:
    """Due offsets for one client from a track's scheduler; the client loop reports each request to it."""

    def __init__(self, name: str, scheduler: Any, task: Task, parameter_source: Any = None) -> None:
        self._name = name
        self._cls = scheduler
        self._task = RallyTask(task)
        self._clients = task.clients
        self._target = task.ops_per_second
        self._kind = scheduler_kind(scheduler)
        self._weight: float | None = None
        self._current = 0.0
        where = f"task '{task.name}': scheduler '{name}'"
        try:
            if self._kind == "function":
                self._sched: Any = _Function(scheduler)
            elif self._kind == "legacy":
                self._sched = scheduler(self._task.params)
            elif self._kind == "full":
                self._sched = scheduler(self._task)
                if hasattr(self._sched, "parameter_source"):
                    self._sched.parameter_source = parameter_source
            else:
                # Until the first response says what one request weighs; for good without a target throughput (the
                # track loader refuses that, so only --test-mode, which drops throttling, gets here).
                self._sched = _Unthrottled()
        except TrackError:
            raise
        except Exception as e:  # noqa: BLE001 - track code: one line naming the scheduler and the error
            raise TrackError(f"{where} failed to start: {type(e).__name__}: {e}") from None

    def __iter__(self) -> "RallySchedule":
        return self

    def __next__(self) -> float:
        self._current = float(self._sched.next(self._current))
        return self._current

    def before_request(self, now: float) -> None:
        if self._kind == "full":
            self._sched.before_request(now)

    def after_request(self, now: float, weight: int, unit: str, meta: dict[str, Any]) -> None:
        if self._kind == "full":
            self._sched.after_request(now, weight, unit, meta)
        elif self._kind == "simple" and weight > 0 and self._target is not None:
            # The target is in requests/s unless the runner reports ops: then each op counts (Rally's rule).
            w = weight if unit == "ops" else 1
            if w != self._weight:
                self._weight = w
                assert self._target is not None
                self._sched = self._cls(self._task, self._target / self._clients / w)
