"""A study's main row, read per variant: the median throughput of each variant's indexing task, which a variant's
challenge may name differently (``index-append`` / ``index-append-leader``). The study table
(bench/reporting/study.py) and adaptive repetitions (bench/race/adaptive.py) both read it from here."""

from __future__ import annotations

from bench.compare.core import Side
from bench.results.summary import Summary, TaskSummary

MAIN_ROW = "Median Throughput (indexing)"


def find_task(summary: Summary, name: str | None, operation_type: str) -> TaskSummary | None:
    """The task ``name``, else the first of ``operation_type``."""
    if name:
        return next((t for t in summary.tasks if t.task == name), None)
    return next((t for t in summary.tasks if t.operation_type == operation_type), None)


def indexing_medians(side: Side, task: str | None) -> list[float]:
    """The main row's values of a side: each trial's median throughput of its indexing task (``task``, else its
    first bulk task); a trial without one has no value."""
    out = []
    for t in side.trials:
        found = find_task(t.summary, task, "bulk") if t.summary is not None else None
        if found is not None and found.throughput is not None:
            out.append(found.throughput.median)
    return out
