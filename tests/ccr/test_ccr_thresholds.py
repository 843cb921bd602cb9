"""``ccr:lag_*`` thresholds: registered by the CCR extension through bench.api (the core names no CCR), read from the
CCR section's followers (the slowest one), an error when no lag was measured; and judged on a real race of the
OpenSearch pair with the ccr-stats telemetry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main
from bench.results.summary import Summary
from bench.results.threshold_spec import parse_cli
from bench.results.thresholds import evaluate, understand
from tests.support.ccr_pair import CcrPairInfo, os_ccr_pair, write_ccr_track  # noqa: F401 (the session fixture)


def _judge(text: str, summary: Summary):
    [r] = evaluate([understand(parse_cli(text), ["index"])], summary, None)
    return r


def test_lag_thresholds_read_the_slowest_follower_and_refuse_to_pass_without_a_lag() -> None:
    ccr = {"followers": [{"cluster": "f1", "index": "a", "lag_s_p99": 0.5, "lag_ops_max": 10},
                         {"cluster": "f2", "index": "a", "lag_s_p99": 7.25, "lag_ops_max": 3},
                         {"cluster": "f3", "index": "b", "lag_s_p99": None}]}
    s = Summary(sections={"ccr": ccr})
    r = _judge("ccr:lag_p99<5s", s)
    assert (r.result, r.value, r.unit, r.task) == ("failed", 7.25, "s", "ccr")
    assert _judge("ccr:lag_p99<10000ms", s).result == "passed"  # units convert to the metric's (s)
    assert _judge("ccr:lag_ops_max<=10", s).result == "passed"
    unknown = _judge("ccr:lag_p99<5s", Summary(sections={"ccr": {"followers": [{"cluster": "f", "index": "a"}]}}))
    assert unknown.result == "error" and "no follower lag was measured" in unknown.reason
    assert _judge("ccr:lag_p99<5s", Summary()).result == "error"  # a race without CCR


@pytest.mark.timeout(600)
def test_a_lag_threshold_is_judged_on_a_real_pair(os_ccr_pair: CcrPairInfo, tmp_path: Path,  # noqa: F811
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    track = write_ccr_track(tmp_path / "track")
    os_ccr_pair.fresh("thr-lag")
    try:
        rc = main(["--quiet", "race", f"--track-path={track}", f"--target-hosts={os_ccr_pair.target_hosts}",
                   "--track-params=index:thr-lag", "--report-format=json",
                   "--telemetry-params=ccr-stats-sample-interval:0.5",
                   "--threshold", "ccr:lag_max<600s", "--threshold", "ccr:lag_ops_max<0"])
        out = capsys.readouterr().out
        doc = json.loads(out[out.index("{"):out.rindex("}") + 1])
    finally:
        os_ccr_pair.stop_replication("thr-lag")
    verdicts = {r["threshold"]: r for r in doc["thresholds"]}
    rows = {(r["metric"], r["task"]): r["value"] for r in doc["rows"]}
    # the measured value is the CCR section's own row; a lag of 0 ops would need a follower that never lagged
    assert verdicts["ccr:lag_max<600s"]["result"] == "passed"
    assert verdicts["ccr:lag_max<600s"]["value"] == rows[("Max CCR lag time", "follower/thr-lag")]
    assert verdicts["ccr:lag_ops_max<0"]["result"] == "failed"
    assert verdicts["ccr:lag_ops_max<0"]["value"] == rows[("Max CCR lag", "follower/thr-lag")] >= 0
    assert rc == 99
