"""Study rows of races with one or several followers: the catch-up time of all followers together and each
follower's lag.

With several follower clusters a CCR challenge's wait runs once per follower (``<task>-<cluster>``, see
bench/ccr/followers.py), all started when indexing ended: the followers have caught up when the slowest copy has,
so the study's catch-up is the largest of them -- and none at all when any copy has no catch-up time (a failed
wait), because the others alone would understate it.
"""

from __future__ import annotations

from bench.compare.metrics import trial_values
from bench.results.summary import Summary

SYNC_OPERATION = "wait-for-followers-to-sync"
CATCH_UP_METRIC = "100th percentile CCR catch-up time"
# Per-follower rows of the CCR section the study shows (scope cluster/index), in this order.
LAG_METRICS = ("Max CCR lag", "99th percentile CCR lag time")


def sync_task_names(summary: Summary, name: str | None) -> list[str]:
    """The catch-up tasks: ``name`` and its per-follower copies, or (no name) every wait-for-followers-to-sync."""
    syncs = [t.task for t in summary.tasks if t.operation_type == SYNC_OPERATION]
    if not name:
        return syncs
    return [t for t in syncs if t == name or t.startswith(f"{name}-")]


def catch_up(summary: Summary, name: str | None) -> tuple[float, str] | None:
    """The slowest follower's catch-up time (value, unit); None when a wait has none."""
    rows = trial_values(summary)
    values = [rows.get((CATCH_UP_METRIC, task)) for task in sync_task_names(summary, name)]
    if not values or any(v is None for v in values):
        return None
    return max((v for v in values if v is not None), key=lambda v: v[0])


def follower_lags(summary: Summary) -> dict[str, tuple[float, str]]:
    """Each follower's lag rows, labelled ``<metric> [<cluster>/<index>]``."""
    rows = trial_values(summary)
    return {f"{metric} [{scope}]": rows[(metric, scope)] for metric in LAG_METRICS
            for (m, scope) in sorted(rows) if m == metric and "/" in scope}
