"""Whether the load driver itself limited a race: each worker measures, from a step's start to its end, the CPU
its event-loop thread used and how late the loop ran a probe that wakes every ``PROBE_INTERVAL``. A loop that
is late runs every request's callbacks late too, so the latency and throughput of that step are partly the
driver's. Cheap (twenty wake-ups a second, two clock reads each), always on, whatever ``--telemetry`` says.

The worker sends its ``LoopLoad`` with ``StepDone``; the coordinator keeps them as telemetry rows of the trial
(``rows``); ``bench.results.driver_loop`` judges the stored rows (the summary's ``driver-loop`` section and its
note), so the race output, ``bench show``, reports and compare all say so.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from bench.driver.samples import TelemetryRow

PROBE_INTERVAL = 0.05  # s between the probe's wake-ups
# The probe's lateness is counted in buckets, not kept per wake-up: a step of hours would otherwise hold 20 floats
# a second. Below FINE_LIMIT the buckets are FINE_STEP wide; above it each is GROWTH times the one before (within
# 0.5 % of the value), so there are at most a few thousand whatever the step's length.
FINE_STEP = 1e-5  # s
FINE_LIMIT = 0.01  # s
GROWTH = 1.01
_FINE = round(FINE_LIMIT / FINE_STEP)
DEVICE = "driver-loop"  # the telemetry rows' device
METRICS = ("seconds", "cpu_share", "lag_p50_ms", "lag_p99_ms", "lag_max_ms", "clients")


@dataclass(frozen=True, slots=True)
class LoopLoad:
    """One worker's event loop during one step's measured part (from its common start to its end)."""

    seconds: float
    cpu_seconds: float  # of the loop's thread
    lag_p50_ms: float
    lag_p99_ms: float
    lag_max_ms: float
    clients: int
    tasks: tuple[str, ...] = ()

    @property
    def cpu_share(self) -> float:
        return self.cpu_seconds / self.seconds if self.seconds > 0 else 0.0


@dataclass
class LoopProbe:
    """Started on the worker's loop at the step's common start; ``result`` once the step's clients are done."""

    clients: int
    tasks: tuple[str, ...]
    _lags: Counter[int] = field(default_factory=Counter)  # bucket -> wake-ups (see lag_bucket)
    _max: float = 0.0
    _wall: float = 0.0
    _cpu: float = 0.0
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._wall, self._cpu = time.monotonic(), time.thread_time()
        self._task = asyncio.get_running_loop().create_task(self._probe())

    async def _probe(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(PROBE_INTERVAL)
            self.record(max(0.0, time.monotonic() - before - PROBE_INTERVAL))

    def record(self, lag: float) -> None:
        self._lags[lag_bucket(lag)] += 1
        self._max = max(self._max, lag)

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def result(self) -> LoopLoad:
        self.stop()
        return LoopLoad(seconds=time.monotonic() - self._wall, cpu_seconds=time.thread_time() - self._cpu,
                        lag_p50_ms=1000.0 * bucket_percentile(self._lags, 50),
                        lag_p99_ms=1000.0 * bucket_percentile(self._lags, 99),
                        lag_max_ms=1000.0 * self._max, clients=self.clients, tasks=self.tasks)


def lag_bucket(lag: float) -> int:
    """The bucket of a lateness in seconds (see FINE_STEP, GROWTH)."""
    if lag < FINE_LIMIT:
        return int(lag / FINE_STEP)
    return _FINE + int(math.log(lag / FINE_LIMIT) / math.log(GROWTH))


def bucket_value(bucket: int) -> float:
    """The middle of a bucket, in seconds."""
    if bucket < _FINE:
        return (bucket + 0.5) * FINE_STEP
    return FINE_LIMIT * GROWTH ** (bucket - _FINE + 0.5)


def bucket_percentile(counts: Counter[int], q: float) -> float:
    """numpy's (linear) percentile of the counted lags, each taken as its bucket's middle; 0 without any."""
    if not counts:
        return 0.0
    keys = sorted(counts)
    values = np.array([bucket_value(k) for k in keys])
    ends = np.cumsum([counts[k] for k in keys])  # ends[i]: rank just past bucket i
    rank = q / 100.0 * (int(ends[-1]) - 1)
    lo, hi = math.floor(rank), math.ceil(rank)
    at = lambda r: float(values[int(np.searchsorted(ends, r, side="right"))])
    return at(lo) + (at(hi) - at(lo)) * (rank - lo)


def rows(wid: int, step: int, load: LoopLoad, now: float | None = None) -> list[TelemetryRow]:
    """The telemetry rows of one worker's step (stored with the trial)."""
    now = time.time() if now is None else now
    raw = {"step": step, "tasks": list(load.tasks)}
    values = {"seconds": load.seconds, "cpu_share": load.cpu_share, "lag_p50_ms": load.lag_p50_ms,
              "lag_p99_ms": load.lag_p99_ms, "lag_max_ms": load.lag_max_ms, "clients": float(load.clients)}
    return [TelemetryRow(now, "driver", f"bench-worker-{wid}", DEVICE, m, values[m], raw) for m in METRICS]
