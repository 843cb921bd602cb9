"""Arrival-rate counts from stored telemetry rows into the summary: summed over workers and steps, idempotent,
a task whose every iteration was dropped still reported, and the note says which drops were the driver's."""

from __future__ import annotations

import pandas as pd

from bench.driver.arrival_counts import arrival_rows
from bench.driver.messages import Arrivals
from bench.results.dropped import arrival_counts, with_arrivals
from bench.results.summary import Summary, TaskSummary


def _telemetry(*msgs: Arrivals) -> pd.DataFrame:
    rows = [r for i, m in enumerate(msgs) for r in arrival_rows(m, step=i, now=1.0)]
    return pd.DataFrame([r._asdict() for r in rows])


def test_counts_add_up_over_workers_and_a_task_with_only_drops_is_still_reported():
    tel = _telemetry(Arrivals(0, "q", "search", 1000, 100, 10), Arrivals(1, "q", "search", 1000, 300, 0),
                     Arrivals(0, "all-dropped", "search", 50, 50, 0))
    summary = Summary(tasks=[TaskSummary(task="q", operation_type="search", unit="ops", requests=1600)])
    once = with_arrivals(summary, arrival_counts(tel))
    q = once.task("q")
    assert q is not None and (q.scheduled_iterations, q.dropped_iterations, q.dropped_late_iterations) == (2000, 400, 10)
    gone = once.task("all-dropped")
    assert gone is not None and (gone.scheduled_iterations, gone.dropped_iterations, gone.requests) == (50, 50, 0)
    assert with_arrivals(once, arrival_counts(tel)) == once  # a stored summary enriched again is unchanged
    note = next(n for n in once.notes if n.startswith("Task 'q'"))
    assert "dropped 400 of its 2,000 scheduled iterations (20.00 %)" in note
    assert "at least 10 of them were the load driver's, not the cluster's" in note
    rows = {r.metric: r.value for r in once.rows() if r.task == "q"}
    assert (rows["scheduled iterations"], rows["dropped iterations"], rows["dropped iterations (driver late)"]) == (
        2000, 400, 10)


def test_a_closed_loop_race_has_no_counts_rows_or_notes():
    summary = Summary(tasks=[TaskSummary(task="q", operation_type="search", unit="ops", requests=5)])
    assert with_arrivals(summary, arrival_counts(pd.DataFrame())) == summary
    assert not any("iterations" in r.metric for r in summary.rows())
