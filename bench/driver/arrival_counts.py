"""The iterations an arrival-rate task's dispatchers scheduled and dropped, stored with the trial as telemetry rows
(one per worker, step and task) that ``bench.results.dropped`` sums into the summary's task rows."""

from __future__ import annotations

import time

from bench.driver.messages import Arrivals
from bench.driver.samples import TelemetryRow

DEVICE = "arrival-rate"  # the telemetry rows' device
METRICS = ("scheduled_iterations", "dropped_iterations", "dropped_late_iterations")


def arrival_rows(msg: Arrivals, step: int, now: float | None = None) -> list[TelemetryRow]:
    """The rows of one worker's dispatcher of one task."""
    now = time.time() if now is None else now
    raw = {"step": step, "task": msg.task, "operation_type": msg.operation_type}
    values = {"scheduled_iterations": float(msg.scheduled), "dropped_iterations": float(msg.dropped),
              "dropped_late_iterations": float(msg.dropped_late)}
    return [TelemetryRow(now, "driver", f"bench-worker-{msg.wid}", DEVICE, m, values[m], raw) for m in METRICS]
