"""The link sweep's table and plot (pure): rows in RTT order with bench's measured RTT, times in seconds, a failed
race said as what it is and left out of the means, never a partial mean."""

from __future__ import annotations

from bench.reporting.link_sweep import (
    LinkSweepRow,
    LinkSweepTable,
    LinkSweepTrial,
    link_sweep_plot,
    link_sweep_view,
    trial_values,
)


def _trial(tid: str, rtt: float, tp: float, lag_s: float, catch_ms: float, measured: float | None) -> LinkSweepTrial:
    values = trial_values({"Median Throughput (indexing)": (tp, "docs/s"),
                           "99th percentile CCR lag time [follower/logs]": (lag_s, "s"),
                           "99th percentile CCR lag time [follower/other]": (lag_s / 2, "s"),
                           "100th percentile CCR catch-up time (CCR catch-up)": (catch_ms, "ms")})
    link = "no link" if rtt == 0 else "follower->leader (emulated)"
    return LinkSweepTrial(trial_id=tid, rtt_ms=rtt, link=link, measured_rtt_ms=measured, **values)


def test_rows_in_rtt_order_with_means_and_failures_said() -> None:
    failed = LinkSweepTrial(trial_id="f" * 32, rtt_ms=100, link="follower->leader (emulated)",
                            problem="race failed: node leader-0 died")
    table = LinkSweepTable(experiment="x", run_id="r", rows=[
        LinkSweepRow(variant="rtt-100", trials=[_trial("a" * 32, 100, 800, 3, 4000, 101), failed]),
        LinkSweepRow(variant="rtt-0", trials=[_trial("b" * 32, 0, 1000, 1, 2000, None)]),
    ])
    view = link_sweep_view(table)
    assert view.rows[0] == ["rtt-0", "no link", "0 ms", "–", "1,000.00 docs/s", "1.00 s", "2.00 s", "1 of 1"]
    assert view.rows[1] == ["rtt-100", "follower->leader (emulated)", "100 ms", "101.0 ms", "800.00 docs/s", "3.00 s",
                            "4.00 s", "1 of 2 (ffffffff: race failed: node leader-0 died)"]
    plot = link_sweep_plot(table)
    assert plot is not None and plot.figure is not None
    lag, catch, tp = plot.figure.data
    assert list(lag.x) == [0, 100] and list(lag.y) == [1, 3] and list(catch.y) == [2, 4] and list(tp.y) == [1000, 800]


def test_a_value_missing_in_one_trial_is_no_value() -> None:
    a = _trial("a" * 32, 50, 900, 2, 3000, 52)
    b = _trial("b" * 32, 50, 700, 2, 3000, 54).model_copy(update={"lag_p99": None})
    view = link_sweep_view(LinkSweepTable(experiment="x", run_id="r", rows=[LinkSweepRow(variant="v", trials=[a, b])]))
    assert view.rows[0][3:7] == ["53.0 ms", "800.00 docs/s", "–", "3.00 s"]
