"""`bench race --challenge=ccr` end to end against a CCR-capable pair replayed from the recorded answers
(tests/support/ccr_replay.py): both engines, the CCR report section, doc counts, and the catch-up time."""

from __future__ import annotations

import json

import pytest

from bench.cli import main
from bench.trials.sqlite import TrialStore
from tests.support.ccr_replay import CcrPair


def _race(pair: CcrPair, *extra: str, track: str = "http_logs", challenge: str = "ccr") -> tuple[int, str]:
    rc = main(["--quiet", "race", f"--track={track}", f"--challenge={challenge}", "--test-mode",
               f"--target-hosts={pair.target_hosts}", "--report-format=json", *extra])
    return rc, ""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("engine,track", [("elasticsearch", "http_logs"), ("opensearch", "nginx")])
def test_ccr_race_produces_the_ccr_section(engine: str, track: str, capsys: pytest.CaptureFixture[str]) -> None:
    with CcrPair(engine, lag_polls=4) as pair:
        rc, _ = _race(pair, "--telemetry=ccr-stats", "--telemetry-params=ccr-stats-sample-interval:0.05",
                      track=track)
        out = capsys.readouterr().out
        assert rc == 0, out
        index = "logs" if track == "http_logs" else "nginx"
        assert pair.following[index]["leader"] == index
        assert pair.leader_indices[index].docs == 1000
        # the follower's remote cluster was pointed at the leader's transport address
        assert pair.remote_seeds == [f"127.0.0.1:{pair.ports['leader'] + 1}"]
    report = json.loads(out[out.index("{"):out.rindex("}") + 1])
    rows = {(r["metric"], r["task"]): r["value"] for r in report["rows"]}
    assert rows[("CCR leader docs", f"leader/{index}")] == 1000
    assert rows[("CCR follower docs", f"follower/{index}")] == 1000
    assert rows[("CCR doc counts match", f"follower/{index}")] == 1
    assert rows[("100th percentile CCR catch-up time", "wait-for-followers-to-sync")] > 0
    assert rows[("Max CCR lag", f"follower/{index}")] > 0  # the follower lagged during the race
    assert ("error rate", "wait-for-followers-to-sync") in rows and rows[("error rate", "wait-for-followers-to-sync")] == 0
    trial_id = report["trial"]["id"]  # json: stdout is the document alone
    with TrialStore() as store:
        trial = store.get_trial(trial_id)
        stored = store.summary(trial_id)
    assert trial.status == "complete" and stored is not None and stored.ccr["followers"][0]["follower_docs"] == 1000


@pytest.mark.timeout(300)
def test_ccr_race_adds_ccr_stats_telemetry(capsys: pytest.CaptureFixture[str]) -> None:
    with CcrPair("elasticsearch", lag_polls=1) as pair:
        rc, _ = _race(pair, track="nginx")
        out = capsys.readouterr().out
        assert rc == 0, out
    trial_id = json.loads(out)["trial"]["id"]  # json: stdout is the document alone
    with TrialStore() as store:
        telemetry = store.telemetry(trial_id)
    assert set(telemetry["device"]) >= {"ccr-stats"}  # added for the lag report without --telemetry
