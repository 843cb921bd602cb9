"""Several followers of one leader, on real OpenSearch 2.19.1 clusters with the replication plugin: the shared pair
(``os_ccr_pair``: leader + follower) plus a second follower started here. An experiment over no follower and two
followers (``--target-hosts`` naming them ``follower-1``, ``follower-2``) runs the built-in http_logs ``ccr``
challenge, written for one cluster named ``follower``, on both followers; both replicate every document, and the
study table has the leader's overhead rows and each follower's lag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from bench.cli import main
from bench.race.experiment import load_experiment, runs_of
from bench.reporting.study import StudyTable
from bench.reporting.study_tracks import tracks_study_table
from bench.trials.sqlite import TrialStore
from tests.support.ccr_pair import (
    CcrPairInfo,
    connect,
    count,
    http,
    os_ccr_pair,  # noqa: F401 (the session fixture)
    plugin_path,
)
from tests.support.esnode import LocalEngines

pytestmark = pytest.mark.cluster
INDEX = "logs"  # the http_logs track's index


def _seeds(url: str) -> list[str]:
    _status, body = http("GET", f"{url}/_nodes/_all/transport?filter_path=nodes.*.transport.publish_address")
    return [n["transport"]["publish_address"] for n in body["nodes"].values()]


def _experiment(tmp_path: Path, pair: CcrPairInfo, follower_2: str) -> Path:
    hosts = {"no-follower": f"default:{pair.leader_url.removeprefix('http://')}",
             "2-followers": f"leader:{pair.leader_url.removeprefix('http://')},"
                            f"follower-1:{pair.follower_url.removeprefix('http://')},"
                            f"follower-2:{follower_2.removeprefix('http://')}"}
    spec = {"name": "several-followers-live", "baseline": "no-follower", "repetitions": 1,
            "race": {"track": "http_logs", "test-mode": True, "telemetry": ["node-stats"],
                     "telemetry-params": {"ccr-stats-sample-interval": 0.5}},
            "variants": {"no-follower": {"challenge": "baseline", "target-hosts": hosts["no-follower"]},
                         "2-followers": {"challenge": "ccr", "target-hosts": hosts["2-followers"],
                                         "telemetry": ["node-stats", "ccr-stats"]}},
            "study": {"sync-task": "wait-for-followers-to-sync", "clusters": {"default": "leader"}}}
    path = tmp_path / "several-followers.yml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _study(path: Path) -> tuple[StudyTable, dict]:
    exp = load_experiment(path)
    with TrialStore() as store:
        [(run_id, trials)] = runs_of(store, exp.name).items()
        ccr = next(t for t in trials if t.challenge == "ccr")
        return tracks_study_table(store, exp, run_id), (store.summary(ccr.id).ccr or {})


@pytest.mark.timeout(900)
def test_two_followers_replicate_and_the_study_shows_the_leaders_cost(
        os_ccr_pair: CcrPairInfo, local_engines: LocalEngines, tmp_path: Path,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    pair = os_ccr_pair
    plugin = plugin_path()
    assert plugin is not None  # os_ccr_pair skipped otherwise
    provisioner, follower_2 = local_engines.start_cluster(
        tmp_path / "follower-2", car=["defaults", "512mheap"], name="follower-2", engine="opensearch",
        version="2.19.1", plugins=[plugin], timeout=300)
    try:
        connect(follower_2.hosts[0], _seeds(pair.leader_url))
        pair.fresh(INDEX)
        path = _experiment(tmp_path, pair, follower_2.hosts[0])
        rc = main(["--quiet", "experiment", str(path), f"--report-file={tmp_path / 'study.md'}"])
        out = capsys.readouterr()
        assert rc == 0, out.out + out.err
        # Every follower holds every document the leader indexed (test mode: 1,000).
        assert count(pair.leader_url, INDEX) == 1000
        assert count(pair.follower_url, INDEX) == 1000 and count(follower_2.hosts[0], INDEX) == 1000
        table, ccr = _study(path)
    finally:
        pair.stop_replication(INDEX)
        http("POST", f"{follower_2.hosts[0]}/_plugins/_replication/{INDEX}/_stop", {})
        provisioner.stop_all()
        pair.fresh(INDEX)
    # The summary: a follower section per follower cluster, and one catch-up per follower's wait.
    assert sorted((f["cluster"], f["follower_docs"]) for f in ccr["followers"]) == [("follower-1", 1000),
                                                                                     ("follower-2", 1000)]
    assert sorted(c["task"] for c in ccr["catch_up"]) == ["wait-for-followers-to-sync-follower-1",
                                                          "wait-for-followers-to-sync-follower-2"]
    slowest = max(c["service_time_ms"]["100.0"] for c in ccr["catch_up"])
    rows = {r.label: r for r in table.rows}
    assert table.variants == ["no-follower", "2-followers"]
    # The study's catch-up is the slowest follower's.
    assert rows["100th percentile CCR catch-up time (CCR catch-up)"].cells[1].value == pytest.approx(slowest)
    for label in ("Median Throughput (indexing)", "CPU (median, node-stats) [default vs leader]",
                  "Network out (transport) [default vs leader]"):
        assert all(c.value is not None for c in rows[label].cells), label  # the leader, with and without
    # Replicating to two followers sends the operations out twice: more transport bytes out of the leader.
    net = rows["Network out (transport) [default vs leader]"].cells
    assert net[1].value > net[0].value  # type: ignore[operator]
    for follower in ("follower-1", "follower-2"):
        lag = rows[f"Max CCR lag [{follower}/{INDEX}]"]
        assert lag.cells[0].value is None and lag.cells[1].value is not None and lag.cells[1].value >= 0
    report = (tmp_path / "study.md").read_text()
    assert "Max CCR lag [follower-2/logs]" in report and "[default vs leader]" in report
    json.dumps(ccr)  # the stored section is plain data
