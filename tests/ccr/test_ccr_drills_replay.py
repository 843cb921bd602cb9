"""The failover drill on Elasticsearch, whose CCR module no engine here has: a whole ``bench race`` of http_logs'
ccr-failover challenge (mode cut-link) against the replay pair built from the recorded answers
(tests/support/ccr_replay.py). The drill points the follower's seeds elsewhere (the replayed follower then
replicates nothing), promotes it the way Elasticsearch wants (pause-follow, close, unfollow, open), writes the probe
and restores the seeds."""

from __future__ import annotations

import json

import pytest

from bench.cli import main
from bench.trials.sqlite import TrialStore
from tests.support.ccr_replay import CcrPair


@pytest.mark.timeout(300)
def test_elasticsearch_failover_drill_against_the_replayed_pair(capsys: pytest.CaptureFixture[str]) -> None:
    # lag_polls: the follower never catches up on its own within the race, so RPO is every operation at the cut.
    # Enough bulks that the indexing outlasts a few of the workers' sample flushes (0.5 s), when the drill sees its
    # point, even into this instant stand-in.
    with CcrPair("elasticsearch", lag_polls=10_000) as pair:
        pair.answer_leader_search = True
        rc = main(["--quiet", "race", "--track=http_logs", "--challenge=ccr-failover",
                   f"--target-hosts={pair.target_hosts}", "--report-format=json",
                   "--track-params=doc_count:400000,bulk_size:20,bulk_indexing_clients:1,failover_after_docs:500"])
        out = capsys.readouterr().out
        follower_calls = [(m, p) for c, m, p in pair.requests if c == "follower"]
        leader_docs, seeds = pair.leader_indices["logs"].docs, pair.remote_seeds
        leader_seeds = [f"127.0.0.1:{pair.ports['leader'] + 1}"]
        promoted = pair.promoted.get("logs")
    assert rc == 0, out
    rows = {(r["metric"], r["task"]): r["value"] for r in json.loads(out[out.index("{"):out.rindex("}") + 1])["rows"]}
    scope = "follower/logs (cut-link)"
    with TrialStore() as store:
        [trial] = store.list_trials(1)
        summary = store.summary(trial.id)
    assert summary is not None
    [drill] = summary.sections["ccr-drills"]["failover"]
    assert drill["error"] is None and 500 <= drill["cut_after_docs"] == leader_docs < 400_000
    assert rows[("CCR failover RPO", scope)] == leader_docs  # leader max seq no + 1, the follower at -1
    assert rows[("CCR failover documents lost", scope)] == leader_docs and promoted == 0  # the probe deleted
    assert 0 < rows[("CCR failover RTO", scope)] < 30
    # Elasticsearch's order, then the probe; the cut seeds put back as they were
    start = follower_calls.index(("POST", "/logs/_ccr/pause_follow"))
    assert follower_calls[start:start + 5] == [("POST", "/logs/_ccr/pause_follow"), ("POST", "/logs/_close"),
                                               ("POST", "/logs/_ccr/unfollow"), ("POST", "/logs/_open"),
                                               ("PUT", "/logs/_doc/bench-failover-probe")]
    assert seeds == leader_seeds
    cut = [i for i, c in enumerate(follower_calls) if c == ("PUT", "/_cluster/settings")]
    assert len(cut) == 3 and cut[1] < start < cut[2]  # wired before the race, cut before promoting, restored
