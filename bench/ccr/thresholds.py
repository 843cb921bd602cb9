"""The CCR metrics thresholds can name (``ccr:lag_p99<5s``): the slowest follower's lag from the CCR section, which
the ccr-stats telemetry fills. A race that measured no lag leaves such a threshold not evaluated, never passed."""

from __future__ import annotations

from collections.abc import Callable

from bench.ccr.section import SECTION
from bench.results.summary import Summary

SCOPE = "ccr"
# threshold metric -> (the CCR section's per-follower field, unit, what it is)
METRICS = {
    "lag_median": ("lag_s_median", "s", "median follower lag in seconds (the slowest follower's)"),
    "lag_p99": ("lag_s_p99", "s", "99th percentile follower lag in seconds (the slowest follower's)"),
    "lag_max": ("lag_s_max", "s", "maximum follower lag in seconds"),
    "lag_ops_p99": ("lag_ops_p99", "ops", "99th percentile follower lag in operations (the slowest follower's)"),
    "lag_ops_max": ("lag_ops_max", "ops", "maximum follower lag in operations"),
}


def lag_reader(field: str) -> Callable[[Summary], tuple[float | None, str]]:
    def read(summary: Summary) -> tuple[float | None, str]:
        followers = summary.section(SECTION).get("followers", [])
        if not followers:
            return None, "the race replicated no follower index (no CCR section)"
        values = [float(f[field]) for f in followers if f.get(field) is not None]
        if not values:
            return None, "no follower lag was measured: race with the ccr-stats telemetry (--telemetry=ccr-stats)"
        return max(values), ""

    return read


def register() -> None:
    from bench.api import register_threshold_metric

    for name, (field, unit, what) in METRICS.items():
        register_threshold_metric(SCOPE, name, unit=unit, read=lag_reader(field), help=what)
