"""Open-model (arrival-rate) schedules of a task, as k6's constant- and ramping-arrival-rate executors.

An arrival-rate task starts iterations at a rate whatever the answers do: each iteration is due at its time and
is sent by whichever of the task's clients is free then; when none is, it is dropped and counted (never sent
late). Its keys (beside ``schedule``):

- ``rate`` (constant): iterations per ``time-unit``;
- ``start-rate`` and ``stages`` (ramping): ``[{"target": rate, "duration": "30s"}, ...]``, the rate moving
  linearly to each stage's target over its duration, from ``start-rate`` (default 0);
- ``time-unit``: what ``rate`` and ``target`` count per (default ``1s``);
- ``pre-allocated-clients``: the clients that take iterations first (``clients`` when not given);
- ``max-clients``: the most clients busy at once (default ``pre-allocated-clients``); bench opens a connection
  for each at the start, so none is opened while measuring;
- ``distribution``: ``even`` (due times evenly spaced, default) or ``poisson`` (exponential gaps, the same mean).

A constant-arrival-rate task runs for its ``warmup-time-period`` + ``time-period``; a ramping one for the sum of
its stages (its first ``warmup-time-period`` seconds are warmup).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal, NoReturn

from pydantic import BaseModel, Field

CONSTANT = "constant-arrival-rate"
RAMPING = "ramping-arrival-rate"
SCHEDULES = (CONSTANT, RAMPING)
KEYS = ("rate", "time-unit", "start-rate", "stages", "pre-allocated-clients", "max-clients", "distribution")
# Task keys that describe a closed loop (Rally's schedule) and mean nothing for an arrival rate.
CLOSED_LOOP_KEYS = ("target-throughput", "target-interval", "iterations", "warmup-iterations",
                    "ramp-up-time-period", "ramp-down-time-period")

_DURATION = re.compile(r"^\s*(\d*\.?\d+)\s*(ms|s|m|h)?\s*$")
# (field, why) -> raises: the loader's one line naming the file, the task and the field
Fail = Callable[[str, str], NoReturn]
_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


class Stage(BaseModel):
    target: float = Field(ge=0)  # iterations per time unit at the end of the stage
    duration: float = Field(gt=0)  # seconds


class ArrivalRate(BaseModel):
    """An arrival-rate schedule, its rates already per second."""

    kind: Literal["constant-arrival-rate", "ramping-arrival-rate"]
    rate: float = 0.0  # constant: iterations/s
    start_rate: float = 0.0  # ramping: iterations/s at the start
    stages: list[Stage] = []  # ramping: targets in iterations/s
    pre_allocated_clients: int = Field(ge=1)
    max_clients: int = Field(ge=1)
    distribution: Literal["even", "poisson"] = "even"

    def segments(self, warmup: float, time_period: float | None) -> list[tuple[float, float, float]]:
        """(seconds, rate at its start, rate at its end) of each linear piece of the rate, from the task's start."""
        if self.kind == CONSTANT:
            assert time_period is not None
            return [(warmup + time_period, self.rate, self.rate)]
        out, rate = [], self.start_rate
        for s in self.stages:
            out.append((s.duration, rate, s.target))
            rate = s.target
        return out

    def duration(self, warmup: float, time_period: float | None) -> float:
        return sum(d for d, _, _ in self.segments(warmup, time_period))

    def shortened(self, seconds: float) -> "ArrivalRate":
        """The same rates for at most ``seconds`` in all (test mode)."""
        if self.kind == CONSTANT:
            return self
        left, stages = seconds, []
        for s in self.stages:
            if left <= 0:
                break
            stages.append(Stage(target=s.target, duration=min(s.duration, left)))
            left -= s.duration
        return self.model_copy(update={"stages": stages})


def seconds_of(value: Any) -> float | None:
    """A duration: a number of seconds or ``"500ms"``, ``"30s"``, ``"2m"``, ``"1h"``; None when unreadable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    m = _DURATION.match(value) if isinstance(value, str) else None
    return float(m.group(1)) * _SECONDS[m.group(2)] if m else None


def _number(spec: dict[str, Any], key: str, fail: Fail, *, positive: bool) -> float:
    v = spec[key]
    if isinstance(v, bool) or not isinstance(v, int | float) or v < 0 or (positive and v == 0):
        fail(key, f"must be a {'positive' if positive else 'non-negative'} number, got {v!r}")
    return float(v)


def _count(spec: dict[str, Any], key: str, fail: Fail) -> int:
    v = spec[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        fail(key, f"must be a whole number of at least 1, got {v!r}")
    return int(v)


def _at(fail: Fail, prefix: str) -> Fail:
    def inner(key: str, why: str) -> NoReturn:
        fail(prefix + key, why)

    return inner


def _stages(spec: dict[str, Any], per: float, fail: Fail) -> list[Stage]:
    raw = spec.get("stages")
    if not isinstance(raw, list) or not raw:
        fail("stages", f"must be a non-empty list of {{\"target\": rate, \"duration\": \"30s\"}}, got {raw!r}")
    out = []
    for i, s in enumerate(raw):
        if not isinstance(s, dict) or set(s) != {"target", "duration"}:
            fail(f"stages[{i}]", f"must be {{\"target\": rate, \"duration\": \"30s\"}}, got {s!r}")
        target = _number(s, "target", _at(fail, f"stages[{i}]."), positive=False)
        d = seconds_of(s["duration"])
        if d is None or d <= 0:
            fail(f"stages[{i}].duration", f"must be a positive duration (seconds, or '30s', '2m'), got "
                                          f"{s['duration']!r}")
        out.append(Stage(target=target / per, duration=d))
    return out


def parse(spec: dict[str, Any], fail: Fail) -> ArrivalRate:
    """The arrival-rate schedule of a task's keys ``spec`` (its ``schedule`` one of SCHEDULES). ``fail(field,
    why)`` raises (the loader's one line naming the file, the task and the field)."""
    kind = spec["schedule"]
    for key in CLOSED_LOOP_KEYS:
        if key in spec:
            fail(key, f"does not apply to schedule '{kind}' (an open model: iterations start at its rate); "
                      "remove it")
    per = seconds_of(spec.get("time-unit", "1s"))
    if per is None or per <= 0:
        fail("time-unit", f"must be a positive duration such as '1s' or '1m', got {spec.get('time-unit')!r}")
    assert per is not None
    if "pre-allocated-clients" in spec and "clients" in spec:
        fail("clients", "give pre-allocated-clients (and max-clients) instead of clients to an arrival-rate task")
    pre = _count(spec, "pre-allocated-clients", fail) if "pre-allocated-clients" in spec else (
        _count(spec, "clients", fail) if "clients" in spec else None)
    if pre is None:
        fail("pre-allocated-clients", f"is required by schedule '{kind}' (how many clients send its iterations)")
    assert pre is not None
    most = _count(spec, "max-clients", fail) if "max-clients" in spec else pre
    if most < pre:
        fail("max-clients", f"({most}) must be at least pre-allocated-clients ({pre})")
    dist = spec.get("distribution", "even")
    if dist not in ("even", "poisson"):
        fail("distribution", f"must be 'even' or 'poisson', got {dist!r}")
    common = {"kind": kind, "pre_allocated_clients": pre, "max_clients": most, "distribution": dist}
    if kind == CONSTANT:
        for key in ("stages", "start-rate"):
            if key in spec:
                fail(key, f"belongs to schedule '{RAMPING}'; a '{CONSTANT}' task has a rate")
        if "rate" not in spec:
            fail("rate", f"is required by schedule '{CONSTANT}' (iterations per time-unit)")
        if "time-period" not in spec:
            fail("time-period", f"is required by schedule '{CONSTANT}' (how long it runs at its rate, seconds)")
        return ArrivalRate(rate=_number(spec, "rate", fail, positive=True) / per, **common)
    if "rate" in spec:
        fail("rate", f"belongs to schedule '{CONSTANT}'; a '{RAMPING}' task has start-rate and stages")
    if "time-period" in spec:
        fail("time-period", f"does not apply to schedule '{RAMPING}': its stages say how long it runs")
    start = _number(spec, "start-rate", fail, positive=False) / per if "start-rate" in spec else 0.0
    stages = _stages(spec, per, fail)
    arrival = ArrivalRate(start_rate=start, stages=stages, **common)
    warmup = spec.get("warmup-time-period")
    if isinstance(warmup, int | float) and warmup >= arrival.duration(0.0, None):
        fail("warmup-time-period", f"({warmup:g} s) must be shorter than the stages "
                                   f"({arrival.duration(0.0, None):g} s in all)")
    if not any(r0 > 0 or r1 > 0 for _, r0, r1 in arrival.segments(0.0, None)):
        fail("stages", "never rise above a rate of 0: nothing would be sent")
    return arrival
