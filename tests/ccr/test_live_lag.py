"""The followers' lag in the live view, made from the ccr-stats rows as the device stores them; and the core's
seam that offers stored telemetry to the registered sources without naming any."""

from __future__ import annotations

import io

from rich.console import Console

from bench import extensions
from bench.ccr.live_lag import follower_lag_rows
from bench.driver.live_rows import live_rows, register_live_rows, unregister_live_rows
from bench.driver.progress import Progress
from bench.driver.samples import TelemetryRow
from bench.race.live_telemetry import LiveTelemetry
from bench.trials.sqlite import TrialInfo, TrialStore, utcnow


def _rows(ts: float) -> list[TelemetryRow]:
    d = "ccr-stats"
    return [TelemetryRow(ts, "follower", "logs", d, "lag_ops", 1200.0),
            TelemetryRow(ts, "follower", "logs", d, "lag_seconds", 2.5),
            TelemetryRow(ts, "follower", "logs[0]", d, "lag_seconds", 9.0),  # a shard row: not the index's
            TelemetryRow(ts, "follower", "fresh", d, "lag_ops", 0.0),  # lag_seconds unknown at the first sample
            TelemetryRow(ts, "follower", "gone", d, "missing", 1.0),
            TelemetryRow(ts, "follower", "", d, "followers", 3.0),
            TelemetryRow(ts, "follower", "logs", "node-stats", "lag_ops", 5.0)]  # another device


def test_each_follower_is_one_row_and_an_unknown_lag_is_none_never_zero():
    got = {r.key: r for r in follower_lag_rows(_rows(100.0))}
    assert set(got) == {"follower/logs", "follower/fresh", "follower/gone"}
    assert got["follower/logs"].values == {"lag s": 2.5, "lag ops": 1200.0} and got["follower/logs"].group == \
        "Follower lag"
    assert got["follower/fresh"].values == {"lag s": None, "lag ops": 0.0}
    assert got["follower/gone"].values == {"lag s": None, "lag ops": None}
    assert got["follower/gone"].note == "missing: lag unknown"


def test_stored_telemetry_reaches_the_live_view_through_the_registered_source(tmp_path):
    extensions.load()  # the ccr extension registers follower_lag_rows through bench.api
    out = io.StringIO()
    progress = Progress(Console(file=out, force_terminal=False, width=200))
    with TrialStore(tmp_path / "bench.db") as store:
        store.create_trial(TrialInfo(id="t1", track="x", challenge="y", start_time=utcnow(), status="running"))
        tee = LiveTelemetry(store, progress.extension_rows)
        tee.add_telemetry("t1", _rows(100.0))
        assert len(store.telemetry("t1")) == 7  # stored as before, all of them
    shown = progress._extras
    assert shown[("Follower lag", "follower/logs")].values["lag s"] == 2.5

    def broken(rows):
        raise ValueError("boom")

    register_live_rows(broken)  # a failing source is logged and skipped: the view never fails the race
    try:
        assert {r.key for r in live_rows(_rows(1.0))} >= {"follower/logs"}
    finally:
        unregister_live_rows(broken)
