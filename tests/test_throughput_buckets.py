"""Per-second throughput of real races whose true throughput is known from their schedule."""

from __future__ import annotations

import pytest

from bench.stats import throughput_series, throughput_stats
from bench.store import TrialStore
from tests.test_race import only_trial, race, write_track


def test_paced_search_shows_its_target_in_every_second(tmp_path, es_target):
    # One client paced at 20 searches/s for 100 searches (a deterministic schedule): every second of the
    # series, and so min/median/max, is 20 ops/s. The last second used to read ~20.8 (20 requests over
    # the 0.96 s up to the last completion).
    index = "paced-throughput"
    track = write_track(tmp_path / "t", [
        {"operation": {"name": "drop", "operation-type": "delete-index", "index": index}},
        {"operation": {"name": "make", "operation-type": "create-index", "index": index}},
        {"operation": {"name": "q", "operation-type": "search", "index": index,
                       "body": {"query": {"match_all": {}}}},
         "clients": 1, "iterations": 100, "target-throughput": 20}],
        indices=[{"name": index}])
    assert race(f"--track-path={track}", f"--target-hosts={es_target}") == 0
    with TrialStore() as store:
        trial = only_trial(store)
        df = store.samples(trial.id)
    assert (df.loc[df["task"] == "q", "success"]).all()
    series = throughput_series(df, "q")
    series = series[series["phase"] == "measurement"]
    assert len(series) >= 4
    assert series["throughput"].between(20 * 0.98, 20 * 1.02).all(), list(series["throughput"])
    assert series["complete"].all()
    st = throughput_stats(df, "q")
    assert st is not None
    assert (st.min, st.median, st.max) == pytest.approx((20.0, 20.0, 20.0), rel=0.02)
