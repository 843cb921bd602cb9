"""What the ccr extension registers with bench's seams (published as a ``bench.extensions`` entry point)."""

from __future__ import annotations

from bench.api import (
    register_live_rows,
    register_metric,
    register_race_hook,
    register_section,
    register_step_objective,
)
from bench.ccr.drill_section import DIRECTIONS, DRILLS_SECTION, drill_rows
from bench.ccr.drills import register as register_drills
from bench.ccr.lag_objective import EXAMPLE, KEY, parse_lag_objective
from bench.ccr.live_lag import follower_lag_rows
from bench.ccr.race_hook import CcrHook
from bench.ccr.runners import register as register_ccr_operations
from bench.ccr.section import SECTION, ccr_rows, ccr_tables, is_ccr_headline_metric, is_ccr_telemetry_row
from bench.ccr.thresholds import register as register_thresholds


def setup() -> None:
    register_race_hook(CcrHook)
    register_ccr_operations()
    register_drills()
    # --redline=...,ccr-lag:p99:5s: the follower's lag judges every redline step
    register_step_objective(KEY, parse_lag_objective, EXAMPLE)
    register_thresholds()  # --threshold 'ccr:lag_p99<5s'
    # The CCR section repeats the telemetry's follower lag next to catch-up time and doc counts.
    register_section(SECTION, rows=ccr_rows, hides=is_ccr_telemetry_row, title="CCR", order=20,
                     headline=is_ccr_headline_metric, tables=ccr_tables)
    register_section(DRILLS_SECTION, rows=drill_rows, title="CCR drills", order=21)
    for pattern, higher in DIRECTIONS:
        register_metric(pattern, higher_is_better=higher)
    register_metric(r"\blag\b|catch[- ]?up", higher_is_better=False)
    register_live_rows(follower_lag_rows)  # the followers' lag beside the tasks while the race runs
