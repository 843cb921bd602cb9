"""The CCR section's lag-over-time table (bench/ccr/section.py): what each cell says, from a stored section."""

from __future__ import annotations

from bench.ccr.section import LAG_TABLE_HEADERS, ccr_tables
from bench.telemetry.over_time import windows


def test_the_table_has_a_row_per_window_and_says_unknown_or_no_samples() -> None:
    ws = windows([(0.0, 3.0), (10.0, 4.25), (100.0, 4.0)], unknown=[45.0])
    section = {"followers": [{"cluster": "follower", "index": "logs", "lag_over_time": [w.model_dump() for w in ws]},
                             {"cluster": "follower", "index": "quiet"}]}
    [table] = ccr_tables(section)  # a follower without windows gets no table
    assert table.name == "CCR lag time per interval of 0:00:10: follower/logs"
    assert table.headers == LAG_TABLE_HEADERS and len(table.rows) == 10
    assert table.rows[0] == ["0:00:00", "0:00:10", "1", "0", "3.00", "3.00", "3.00", "3.00"]
    assert table.rows[1][2:] == ["1", "0", "4.25", "4.25", "4.25", "4.25"]
    assert table.rows[4][2:] == ["0", "1", "unknown", "unknown", "unknown", "unknown"]
    assert table.rows[2][4:] == ["no samples"] * 4
    assert ccr_tables({}) == []
