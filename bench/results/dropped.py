"""Dropped iterations of arrival-rate tasks: the stored ``arrival-rate`` telemetry rows (``bench.driver.
arrival_counts``) summed per task into its summary's ``scheduled_iterations`` and ``dropped_iterations``, and a
note for each task that dropped any. Pure functions of the rows and the summary."""

from __future__ import annotations

import pandas as pd

from bench.driver.arrival_counts import DEVICE
from bench.results.summary import Summary, TaskSummary

SECTION = DEVICE  # the enricher's name


def arrival_counts(telemetry: pd.DataFrame) -> dict[str, tuple[str, int, int]]:
    """Task -> (operation type, scheduled, dropped) over every worker and step; {} when none was stored."""
    if telemetry.empty:
        return {}
    d = telemetry[telemetry["device"] == DEVICE]
    out: dict[str, tuple[str, int, int]] = {}
    for metric, value, raw in zip(d["metric"], d["value"], d["raw"]):
        raw = raw if isinstance(raw, dict) else {}
        task = str(raw.get("task", ""))
        op, scheduled, dropped = out.get(task, (str(raw.get("operation_type", "")), 0, 0))
        if metric == "scheduled_iterations":
            scheduled += int(value)
        elif metric == "dropped_iterations":
            dropped += int(value)
        out[task] = (op, scheduled, dropped)
    return out


def dropped_note(ts: TaskSummary) -> str | None:
    if ts.dropped_iterations <= 0:
        return None
    share = ts.dropped_iterations / max(1, ts.scheduled_iterations) * 100.0
    return (f"Task '{ts.task}' dropped {ts.dropped_iterations:,} of its {ts.scheduled_iterations:,} scheduled "
            f"iterations ({share:.2f} %): no client was free when they were due, so they were never sent; its "
            "throughput is what was sent, below the rate asked for. Raise max-clients or lower the rate.")


def with_arrivals(summary: Summary, counts: dict[str, tuple[str, int, int]]) -> Summary:
    """``summary`` with each arrival-rate task's counts and notes (again: the same summary). A task whose every
    iteration was dropped has no samples: it gets a task of its own, counts only."""
    if not counts:
        return summary
    tasks = []
    for ts in summary.tasks:
        if ts.task in counts:
            _, scheduled, dropped = counts[ts.task]
            ts = ts.model_copy(update={"scheduled_iterations": scheduled, "dropped_iterations": dropped})
        tasks.append(ts)
    known = {ts.task for ts in tasks}
    tasks += [TaskSummary(task=name, operation_type=op, unit="ops", scheduled_iterations=scheduled,
                          dropped_iterations=dropped)
              for name, (op, scheduled, dropped) in counts.items() if name not in known]
    notes = list(summary.notes)
    notes += [n for ts in tasks if (n := dropped_note(ts)) is not None and n not in notes]
    return summary.model_copy(update={"tasks": tasks, "notes": notes})
