"""The followers' lag in the live view: the ccr-stats device's rows of each follower index, as they are stored,
become one live row per follower (lag in seconds and operations, or why it is unknown)."""

from __future__ import annotations

from collections.abc import Sequence

from bench.driver.live_rows import LiveRow
from bench.driver.samples import TelemetryRow

DEVICE = "ccr-stats"
GROUP = "Follower lag"
COLUMNS = {"lag_seconds": "lag s", "lag_ops": "lag ops"}
STATES = {"paused": "paused: lag unknown", "missing": "missing: lag unknown"}


def follower_lag_rows(rows: Sequence[TelemetryRow]) -> list[LiveRow]:
    """One row per follower index the batch sampled (index-level rows only: shard rows are ``index[n]``). A lag
    the sample did not measure is None (shown "?"), never 0."""
    found: dict[tuple[str, str], LiveRow] = {}
    for r in rows:
        if r.device != DEVICE or not r.node or "[" in r.node or (r.metric not in COLUMNS and r.metric not in STATES):
            continue
        row = found.setdefault((r.cluster, r.node), LiveRow(group=GROUP, key=f"{r.cluster}/{r.node}", at=r.timestamp,
                                                            values=dict.fromkeys(COLUMNS.values())))
        if r.metric in COLUMNS:
            row.values[COLUMNS[r.metric]] = r.value
        elif r.value:
            row.note = STATES[r.metric]
    return list(found.values())
