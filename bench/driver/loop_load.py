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
import time
from dataclasses import dataclass, field

import numpy as np

from bench.driver.samples import TelemetryRow

PROBE_INTERVAL = 0.05  # s between the probe's wake-ups
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
    _lags: list[float] = field(default_factory=list)
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
            self._lags.append(max(0.0, time.monotonic() - before - PROBE_INTERVAL))

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def result(self) -> LoopLoad:
        self.stop()
        lags = np.array(self._lags or [0.0]) * 1000.0
        return LoopLoad(seconds=time.monotonic() - self._wall, cpu_seconds=time.thread_time() - self._cpu,
                        lag_p50_ms=float(np.percentile(lags, 50)), lag_p99_ms=float(np.percentile(lags, 99)),
                        lag_max_ms=float(lags.max()), clients=self.clients, tasks=self.tasks)


def rows(wid: int, step: int, load: LoopLoad, now: float | None = None) -> list[TelemetryRow]:
    """The telemetry rows of one worker's step (stored with the trial)."""
    now = time.time() if now is None else now
    raw = {"step": step, "tasks": list(load.tasks)}
    values = {"seconds": load.seconds, "cpu_share": load.cpu_share, "lag_p50_ms": load.lag_p50_ms,
              "lag_p99_ms": load.lag_p99_ms, "lag_max_ms": load.lag_max_ms, "clients": float(load.clients)}
    return [TelemetryRow(now, "driver", f"bench-worker-{wid}", DEVICE, m, values[m], raw) for m in METRICS]
