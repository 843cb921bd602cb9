"""Per-second throughput of real races whose true throughput is known from their schedule."""

from __future__ import annotations

import json

import pytest

from bench.results.stats import throughput_series, throughput_stats
from bench.trials.sqlite import TrialStore
from benchmarks.nullsink import free_port, start_in_background
from tests.race.test_race import only_trial, race, write_track


def test_paced_search_shows_its_target_in_every_second(tmp_path, es_target):
    # One client paced at 2 searches/s for 12 measured searches (a deterministic schedule; slots 0.5 s apart
    # leave each search 0.5 s to finish inside its second on this busy machine, and the warmup takes the cold
    # first searches): every second of the series, and so min/median/max, is 2 ops/s. The last second used
    # to read ~3.9 (2 requests over the ~0.51 s up to the last completion; at 20 ops/s: 20.8).
    index = "paced-throughput"
    track = write_track(tmp_path / "t", [
        {"operation": {"name": "drop", "operation-type": "delete-index", "index": index}},
        {"operation": {"name": "make", "operation-type": "create-index", "index": index}},
        {"operation": {"name": "q", "operation-type": "search", "index": index,
                       "body": {"query": {"match_all": {}}}},
         "clients": 1, "warmup-iterations": 4, "iterations": 12, "target-throughput": 2}],
        indices=[{"name": index}])
    assert race(f"--track-path={track}", f"--target-hosts={es_target}") == 0
    with TrialStore() as store:
        trial = only_trial(store)
        df = store.samples(trial.id)
    assert (df.loc[df["task"] == "q", "success"]).all()
    series = throughput_series(df, "q")
    series = series[series["phase"] == "measurement"]
    assert len(series) >= 4
    assert series["throughput"].between(2 * 0.98, 2 * 1.02).all(), list(series["throughput"])
    assert series["complete"].all()
    st = throughput_stats(df, "q")
    assert st is not None
    assert (st.min, st.median, st.max) == pytest.approx((2.0, 2.0, 2.0), rel=0.02)


def test_paced_bulks_of_known_size_show_their_target_in_every_second(tmp_path, es_target):
    # 12 bulks of 250 documents, paced at 2 bulks/s: 500 docs/s in every second (slots 0.5 s apart leave
    # each bulk 0.5 s to finish inside its second).
    data = tmp_path / "docs.json"
    data.write_text("".join(json.dumps({"n": i, "msg": f"line {i}"}) + "\n" for i in range(3000)))
    index = "paced-bulk"
    track = write_track(
        tmp_path / "t",
        [{"operation": {"name": "drop", "operation-type": "delete-index"}},
         {"operation": {"name": "make", "operation-type": "create-index"}},
         # An unmeasured first load of the fresh index takes its cold start (a slow first bulk would make the
         # paced schedule fall behind, which is what the cluster did, not a bucketing artefact).
         {"operation": {"name": "warm", "operation-type": "bulk", "bulk-size": 100, "corpora": "w"}, "clients": 1},
         {"operation": {"name": "load", "operation-type": "bulk", "bulk-size": 250, "corpora": "c"}, "clients": 1,
          "target-throughput": 2}],
        indices=[{"name": index}],
        corpora=[{"name": "c", "documents": [{"source-file": str(data), "document-count": 3000,
                                              "target-index": index}]},
                 {"name": "w", "documents": [{"source-file": str(data), "document-count": 3000,
                                              "target-index": index}]}])
    assert race(f"--track-path={track}", f"--target-hosts={es_target}") == 0
    with TrialStore() as store:
        df = store.samples(only_trial(store).id)
    load = df[df["task"] == "load"]
    assert len(load) == 12 and load["success"].all() and set(load["units"]) == {250}
    series = throughput_series(df, "load")
    series = series[series["phase"] == "measurement"]
    assert len(series) >= 4
    assert series["throughput"].between(500 * 0.98, 500 * 1.02).all(), list(series["throughput"])
    st = throughput_stats(df, "load")
    assert st is not None and st.unit == "docs/s"
    assert (st.min, st.median, st.max) == pytest.approx((500.0, 500.0, 500.0), rel=0.02)


@pytest.fixture(scope="module")
def slow_sink():
    """The null sink answering every request after 150 ms: a server whose service time is known."""
    port = free_port()
    procs = start_in_background(port, delay=0.15)
    yield f"127.0.0.1:{port}"
    for p in procs:
        p.terminate()
        p.join(10)


def test_known_throughput_reads_its_target_in_every_second_and_in_min_median_max(tmp_path, slow_sink, sustained_load):
    # Bulks of 100 documents paced at 20/s over 4 clients (2,000 docs/s), and searches paced at 20/s over 4
    # clients, each request answered after 150 ms: the true throughput is known in advance, in every second.
    # The ramp-up starts the clients 50 ms apart, so requests are in flight at every instant, also when the
    # warmup ends and when the time period does: the seconds there must read the target too.
    data = tmp_path / "docs.json"
    data.write_text("".join(json.dumps({"n": i}) + "\n" for i in range(30000)))
    track = write_track(
        tmp_path / "t",
        [{"operation": {"name": "load", "operation-type": "bulk", "bulk-size": 100, "corpora": "c"},
          "clients": 4, "target-throughput": 20, "warmup-time-period": 2, "time-period": 8,
          "ramp-up-time-period": 0.2},
         {"operation": {"name": "q", "operation-type": "search", "index": "known",
                        "body": {"query": {"match_all": {}}}},
          "clients": 4, "target-throughput": 20, "warmup-time-period": 2, "time-period": 6,
          "ramp-up-time-period": 0.2}],
        indices=[{"name": "known"}],
        corpora=[{"name": "c", "documents": [{"source-file": str(data), "document-count": 30000,
                                              "target-index": "known"}]}])
    assert race(f"--track-path={track}", f"--target-hosts={slow_sink}") == 0
    with TrialStore() as store:
        df = store.samples(only_trial(store).id)
    for task, target in (("load", 2000.0), ("q", 20.0)):
        assert df.loc[df["task"] == task, "success"].all()
        series = throughput_series(df, task)
        m = series[(series["phase"] == "measurement") & series["full_load"]]
        assert len(m) >= 5, series
        assert m["throughput"].between(target * 0.98, target * 1.02).all(), (task, list(m["throughput"]))
        st = throughput_stats(df, task)
        assert st is not None
        assert (st.min, st.median, st.max) == pytest.approx((target, target, target), rel=0.02), (task, st)
        # The mean runs to the last answer, 150 ms after the last request was due.
        assert st.mean == pytest.approx(target, rel=0.03), (task, st)
