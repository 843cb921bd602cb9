"""The lag-budget redline (``--redline=...,ccr-lag:p99:...``) for real: against a stand-in pair whose follower
applies a known number of documents per second (benchmarks/ccr_standin.py: the knee is known in advance), with a
follower paused by the replication pause API in the middle of a step, and on the real OpenSearch pair."""

from __future__ import annotations

import json
import threading
import time

import pytest

from bench import extensions
from bench.redline.redline_extension import setup as redline_setup
from bench.redline.section import SECTION, RedlineSection
from bench.trials.sqlite import TrialStore
from benchmarks.ccr_standin import running
from tests.race.test_race import only_trial, race, write_track
from tests.support.ccr_pair import CcrPairInfo, http, os_ccr_pair  # noqa: F401 - the session fixture

RATE = 2000.0  # docs/s the stand-in follower applies
BULK = 20


@pytest.fixture(autouse=True)
def _redline_extension():
    extensions.register("redline", redline_setup)


def _track(tmp_path, index: str, docs: int = 2000, setup: list[dict] | None = None):
    data = tmp_path / "docs.json"
    data.write_text("".join(json.dumps({"n": i, "message": f"GET /item/{i} HTTP/1.1 200"}) + "\n"
                            for i in range(docs)))
    return write_track(
        tmp_path / "t",
        [*(setup or []),
         {"operation": {"name": "load", "operation-type": "bulk", "bulk-size": BULK, "corpora": "c",
                        "cluster": "leader"}, "clients": 4}],
        indices=[{"name": index}],
        corpora=[{"name": "c", "documents": [{"source-file": str(data), "document-count": docs,
                                              "target-index": index}]}])


def _section() -> RedlineSection:
    with TrialStore() as store:
        summary = store.summary(only_trial(store).id)
    assert summary is not None
    return RedlineSection.model_validate(summary.sections[SECTION])


def test_lag_redline_finds_the_known_apply_rate_of_the_follower_within_10_percent(tmp_path, sustained_load):
    knee = RATE / BULK  # 100 requests/s: above it the follower's backlog grows by the excess every second
    with running("knee", RATE) as (leader, follower):
        assert race(f"--track-path={_track(tmp_path, 'knee')}", f"--target-hosts=leader:{leader},follower:{follower}",
                    "--redline=task:load,ccr-lag:p99:150ms,warmup:0.5s,measure:2s,start:60,steps:8") == 0
    s = _section()
    steps = [(st.target, st.met, st.why) for st in s.steps]
    best, failing = s.best(), s.first_failing()
    assert best is not None and failing is not None, steps
    # The answer in leader docs/s, within 10 % of the follower's apply rate.
    assert 0.9 * RATE <= best.throughput <= 1.1 * RATE, steps
    assert failing.throughput > best.throughput and failing.target <= 1.25 * knee, steps
    assert s.latency_ms is None and "follower time lag p99 ≤ 0.15 s" in s.objective
    for st in s.steps:
        lag = next(o for o in st.objectives if o.key == "ccr-lag")
        measured = [p for p in lag.curve if p.phase == "measured"]
        assert len(measured) >= 2 and all(p.value is not None for p in measured), st
        # Every step above the follower's rate failed on its lag (or catch-up), none below it did.
        if st.target > 1.1 * knee:
            assert not st.met and st.miss in ("lag", "catch-up"), steps
        if st.target < 0.9 * knee:
            assert st.met, steps
    growth = [p.value for p in next(o for o in failing.objectives).curve if p.phase == "measured"]
    assert growth[-1] > growth[0], growth  # above the knee the lag grows during the step


def test_a_step_whose_follower_is_paused_fails_with_its_reason_and_ends_the_search(tmp_path):
    with running("paused", RATE) as (leader, follower):
        def pause() -> None:
            deadline = time.monotonic() + 60
            # Once the first step has indexed: the pause lands in a step, not before the redline.
            while http("GET", f"http://{leader}/paused/_stats?level=shards")[1]["indices"]["paused"]["shards"][
                    "0"][0]["docs"]["count"] < 200 and time.monotonic() < deadline:
                time.sleep(0.1)
            http("POST", f"http://{follower}/_plugins/_replication/paused/_pause", {})

        threading.Thread(target=pause, daemon=True).start()
        assert race(f"--track-path={_track(tmp_path, 'paused')}",
                    f"--target-hosts=leader:{leader},follower:{follower}",
                    "--redline=task:load,ccr-lag:p99:1s,warmup:0.5s,measure:3s,start:10,steps:3") == 0
    s = _section()
    first = s.steps[0]
    assert not first.met and first.miss == "lag unknown", first
    assert "lag unknown in" in first.why and "follower follower/paused" in first.why, first.why
    assert "paused (User initiated)" in first.why
    lag = first.objectives[0]
    assert lag.figures["lag p99 s"] is None and any(p.value is None for p in lag.curve)
    assert s.sustained is None
    assert "paused" in s.reason, s.reason  # the search stopped: the next step would inherit the pause


def test_lag_redline_on_the_real_opensearch_pair_reports_an_answer(tmp_path, os_ccr_pair: CcrPairInfo):  # noqa: F811
    index = "lag-redline"
    os_ccr_pair.fresh(index)
    setup = [
        {"operation": {"name": "create", "operation-type": "create-index", "cluster": "leader",
                       "body": {"settings": {"number_of_shards": 1, "number_of_replicas": 0}}}},
        {"operation": {"name": "health", "operation-type": "cluster-health", "cluster": "leader", "index": index,
                       "request-params": {"wait_for_status": "yellow"}, "retry-until-success": True}},
        {"operation": {"name": "follow", "operation-type": "ccr-follow", "cluster": "follower",
                       "remote-cluster": "leader", "leader-index": index, "index": index}},
    ]
    try:
        assert race(f"--track-path={_track(tmp_path, index, 4000, setup)}",
                    f"--target-hosts={os_ccr_pair.target_hosts}",
                    # A budget above the plugin's poll back-off after idle (10 s, then longer), so a step can meet it
                    "--redline=task:load,ccr-lag:p99:12s,warmup:1s,measure:2s,start:5,steps:1") == 0
    finally:
        os_ccr_pair.stop_replication(index)
    s = _section()
    assert len(s.steps) == 1
    for st in s.steps:
        lag = next(o for o in st.objectives if o.key == "ccr-lag")
        measured = [p for p in lag.curve if p.phase == "measured"]
        assert len(measured) >= 2 and lag.figures["readings"] == len(measured), lag
        assert st.met == (st.why == "met")
        if st.met:
            assert lag.figures["lag p99 s"] is not None and lag.figures["lag p99 s"] <= 5
            assert lag.figures["catch-up s"] is not None
    assert s.best() is not None or s.steps[0].miss, [(st.target, st.why) for st in s.steps]
