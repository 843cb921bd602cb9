"""Real clusters: two local Elasticsearch 8.19.21 clusters (leader + follower, 512m heap each) provisioned by
``bench race --topology``, remote seeds connected per ``_remote/info``, trial license active; the Maven Central
zip has no CCR module, so the follow call gives the clear no-CCR error and the race is stored failed with both
clusters stopped. Plus the live end-to-end tests, skipped unless a CCR-capable pair is available:
BENCH_CCR_LEADER / BENCH_CCR_FOLLOWER (host:port of existing clusters) or BENCH_OPENSEARCH_REPLICATION_PLUGIN
(a replication plugin zip/folder: bench provisions an OpenSearch 2.19.1 pair with it)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import urllib.request
from pathlib import Path

import psutil
import pytest

from bench.ccr.engine import NO_CCR, ElasticsearchCcr, NoCcrSupport
from bench.ccr.remote import ensure_remote
from bench.cli import main
from bench.cloud import local as cloud_local
from bench.http.client import ClusterTarget, RawHttp
from bench.trials.sqlite import TrialStore
from bench.util.home import bench_home
from tests.support.esnode import default_cache
from tests.support.official_archives import official_archive, release_ini, release_site

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.cluster  # real clusters


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


@pytest.mark.timeout(900)
def test_es_pair_connects_then_stops_with_the_no_ccr_error(capsys: pytest.CaptureFixture[str]) -> None:
    seen: dict = {}

    def hook(topo, cluster, info, started):  # type: ignore[no-untyped-def]
        seen.setdefault("pids", []).extend(n.pid for n in info.nodes if n.pid)
        seen.setdefault("ports", []).extend(n.http_port for n in info.nodes)
        if cluster.name != "follower":
            return
        seen["license"] = _get(f"{info.hosts[0]}/_license")["license"]

        async def checks() -> None:
            target = ClusterTarget(name="follower", hosts=[h.removeprefix("http://") for h in info.hosts])
            async with RawHttp(target, connections=1) as http:
                seen["remote"] = await ensure_remote(http, "follower", "leader", None, None, timeout=60)
                try:
                    await ElasticsearchCcr(http, "follower").follow("nginx", remote="leader", leader_index="nginx",
                                                                    parameters={})
                except NoCcrSupport as e:
                    seen["follow_error"] = str(e)

        asyncio.run(checks())
        seen["leader_transport"] = started["leader"].transport_addresses

    cloud_local.register_after_start(hook)
    try:
        rc = main(["--quiet", "race", "--topology", str(ROOT / "topologies" / "ccr-local.yml"), "--track=nginx",
                   "--challenge=ccr", "--test-mode"])
    finally:
        cloud_local._HOOKS.remove(hook)
    captured = capsys.readouterr()
    assert rc != 0
    # remote seeds = the leader's transport address, connected; trial license active on the follower
    assert seen["remote"]["connected"] is True and seen["remote"]["seeds"] == seen["leader_transport"]
    assert seen["license"]["type"] == "trial" and seen["license"]["status"] == "active"
    assert NO_CCR in seen["follow_error"] and "no handler found" in seen["follow_error"]
    assert "remote cluster leader connected" in captured.out and "trial license active" in captured.out
    assert NO_CCR in captured.err
    with TrialStore() as store:
        [trial] = store.list_trials(1)
    assert trial.status == "failed" and NO_CCR in (trial.error or "") and trial.challenge == "ccr"
    # both clusters are stopped: no JVM left, nothing listening on their HTTP ports
    assert len(seen["pids"]) == 2 and not any(psutil.pid_exists(p) for p in seen["pids"])
    for port in seen["ports"]:
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0


def _live_race(*args: str, capsys: pytest.CaptureFixture[str]) -> dict:
    rc = main(["--quiet", "race", "--track=http_logs", "--challenge=ccr", "--test-mode", "--report-format=json",
               *args])
    out = capsys.readouterr().out
    assert rc == 0, out
    report = json.loads(out[out.index("{"):out.rindex("}") + 1])
    return {(r["metric"], r["task"]): r["value"] for r in report["rows"]}


@pytest.mark.timeout(1200)
@pytest.mark.skipif(not (os.environ.get("BENCH_CCR_LEADER") and os.environ.get("BENCH_CCR_FOLLOWER")),
                    reason="set BENCH_CCR_LEADER and BENCH_CCR_FOLLOWER (host:port) to a CCR-capable pair")
def test_live_pair_from_environment(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _live_race(f"--target-hosts=leader:{os.environ['BENCH_CCR_LEADER']},"
                      f"follower:{os.environ['BENCH_CCR_FOLLOWER']}", capsys=capsys)
    assert rows[("CCR doc counts match", "follower/logs")] == 1
    assert ("100th percentile CCR catch-up time", "wait-for-followers-to-sync") in rows


@pytest.mark.timeout(1200)
@pytest.mark.skipif(not os.environ.get("BENCH_OPENSEARCH_REPLICATION_PLUGIN"),
                    reason="set BENCH_OPENSEARCH_REPLICATION_PLUGIN to the replication plugin zip or folder")
def test_live_opensearch_bundle_replicates_without_a_plugin_flag(capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenSearch's release bundle ships the replication plugin: the example topology runs CCR from the release
    repository with no --plugin. The bundle is the official layout served locally (tests/support/official_archives.py),
    with the real plugin inside as the bundle has it."""
    folder = Path(default_cache()) / "test-official-archives"
    plugin = Path(os.environ["BENCH_OPENSEARCH_REPLICATION_PLUGIN"])
    official_archive("opensearch", "2.19.1", folder, extra_plugins={"opensearch-cross-cluster-replication": plugin})
    monkeypatch.delenv("BENCH_DISTRIBUTION_REPOSITORY", raising=False)
    with release_site(folder) as base:
        (bench_home() / "bench.ini").write_text(release_ini(base))
        rows = _live_race(f"--topology={ROOT / 'topologies' / 'ccr-local-opensearch.yml'}", capsys=capsys)
    assert rows[("CCR doc counts match", "follower/logs")] == 1
    assert ("100th percentile CCR catch-up time", "wait-for-followers-to-sync") in rows
    with TrialStore() as store:
        [trial] = store.list_trials(1)
    for cluster in trial.clusters:
        dist = cluster["distribution"]
        assert dist["repository"] == "release" and "opensearch-cross-cluster-replication" in dist["plugins"]
        assert cluster["java"]["source"] == "bundled" and cluster["car"] == "defaults+512mheap"
    assert trial.car == ["defaults", "512mheap"]  # what both clusters ran, not --car's default
