"""Dropped iterations of arrival-rate tasks: the stored ``arrival-rate`` telemetry rows (``bench.driver.
arrival_counts``) summed per task into its summary's ``scheduled_iterations``, ``dropped_iterations`` and
``dropped_late_iterations``, and a note for each task that dropped any. Pure functions of the rows and the
summary."""

from __future__ import annotations

import pandas as pd
from pydantic import BaseModel

from bench.driver.arrival_counts import DEVICE
from bench.results.summary import Summary, TaskSummary

SECTION = DEVICE  # the enricher's name
_FIELDS = {"scheduled_iterations", "dropped_iterations", "dropped_late_iterations"}


class Counts(BaseModel):
    operation_type: str = ""
    scheduled_iterations: int = 0
    dropped_iterations: int = 0
    dropped_late_iterations: int = 0


def arrival_counts(telemetry: pd.DataFrame) -> dict[str, Counts]:
    """Task -> its counts over every worker and step; {} when none was stored."""
    if telemetry.empty:
        return {}
    d = telemetry[telemetry["device"] == DEVICE]
    out: dict[str, Counts] = {}
    for metric, value, raw in zip(d["metric"], d["value"], d["raw"]):
        raw = raw if isinstance(raw, dict) else {}
        c = out.setdefault(str(raw.get("task", "")), Counts(operation_type=str(raw.get("operation_type", ""))))
        if metric in _FIELDS:
            setattr(c, str(metric), getattr(c, str(metric)) + int(value))
    return out


def dropped_note(ts: TaskSummary) -> str | None:
    if ts.dropped_iterations <= 0:
        return None
    share = ts.dropped_iterations / max(1, ts.scheduled_iterations) * 100.0
    late = ts.dropped_late_iterations
    whose = (f"; at least {late:,} of them were the load driver's, not the cluster's: due while one of its clients "
             "was still free, which took an earlier iteration only after they were due because the driver ran "
             "behind its schedule (see the load driver's rows)" if late else "")
    return (f"Task '{ts.task}' dropped {ts.dropped_iterations:,} of its {ts.scheduled_iterations:,} scheduled "
            f"iterations ({share:.2f} %): no client was free when they were due, so they were never sent; its "
            f"throughput is what was sent, below the rate asked for{whose}. Raise max-clients or lower the rate.")


def with_arrivals(summary: Summary, counts: dict[str, Counts]) -> Summary:
    """``summary`` with each arrival-rate task's counts and notes (again: the same summary). A task whose every
    iteration was dropped has no samples: it gets a task of its own, counts only."""
    if not counts:
        return summary
    tasks = []
    for ts in summary.tasks:
        if ts.task in counts:
            ts = ts.model_copy(update=counts[ts.task].model_dump(exclude={"operation_type"}))
        tasks.append(ts)
    known = {ts.task for ts in tasks}
    tasks += [TaskSummary(task=name, unit="ops", **c.model_dump()) for name, c in counts.items() if name not in known]
    notes = list(summary.notes)
    notes += [n for ts in tasks if (n := dropped_note(ts)) is not None and n not in notes]
    return summary.model_copy(update={"tasks": tasks, "notes": notes})
