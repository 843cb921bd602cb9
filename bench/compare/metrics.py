"""Which way is better for each report row, and the rows of one trial as comparable values.

Rows come from ``Summary.rows()`` (cluster totals, tasks, and -- where the telemetry issue's code filled
``Summary.telemetry`` -- telemetry), so compare shows exactly the metrics ``bench show`` shows.
"""

from __future__ import annotations

import re

from bench.summary import Summary

# First match wins. None: no better direction (counts that merely describe the run).
_DIRECTIONS: list[tuple[re.Pattern[str], bool | None]] = [(re.compile(p, re.IGNORECASE), d) for p, d in [
    (r"throughput", True),
    (r"latency|service time", False),  # includes "CCR lag time"
    (r"error rate|rejection|exception|failed", False),
    (r"\blag\b|catch[- ]?up", False),
    (r"driver cpu", None),  # the load generator: informative, not a property of the cluster
    (r"cpu", False),
    (r"gc (count|time)", False),
    (r"\bcumulative .* time", False),  # also the min/median/max across primary shards
    (r"^(refresh|merge|flush) time", False),
    (r"^disk |^network |store size|segment count|heap", False),
    (r"telemetry samples", None),
]]


def higher_is_better(metric: str) -> bool | None:
    """True/False for rows with a better direction; None for descriptive rows (doc counts, merge counts)."""
    for pattern, direction in _DIRECTIONS:
        if pattern.search(metric):
            return direction
    return None


RowKey = tuple[str, str]  # (metric, task)


def trial_values(summary: Summary | None) -> dict[RowKey, tuple[float, str]]:
    """(metric, task) -> (value, unit) of one trial, in report order (dicts keep insertion order)."""
    out: dict[RowKey, tuple[float, str]] = {}
    if summary is None:
        return out
    for r in summary.rows():
        out.setdefault((r.metric, r.task), (float(r.value), r.unit))
    return out
