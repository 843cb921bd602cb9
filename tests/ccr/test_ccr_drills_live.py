"""The CCR drills on the real OpenSearch 2.19.1 pair with the replication plugin (tests/support/ccr_pair.py, shared
by the session; each test has its own index): a measured bootstrap of an existing leader index, checked against the
clusters' own store sizes and settings; a failover drill that cuts the link, promotes the follower and writes to it,
checked against what the clusters say afterwards; and a drill whose point never comes, which fails the race."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.cli import main
from bench.results.exit_status import EXIT_UNMEASURED
from bench.trials.sqlite import TrialStore
from tests.support.ccr_pair import (
    LEADER_ALIAS,
    CcrPairInfo,
    count,
    http,
    os_ccr_pair,  # noqa: F401 (the session fixture)
)

pytestmark = pytest.mark.cluster

DRILL_TRACK = """{
  "version": 2,
  "description": "live CCR drills: a bootstrap of an existing leader index, a failover drill",
  "indices": [{"name": "{{ index }}", "body": "index.json"}],
  "corpora": [{"name": "c", "documents": [{"source-file": "docs.json", "document-count": {{ docs }},
                                           "target-index": "{{ index }}"}]}],
  "challenges": [
    {"name": "bootstrap", "default": true, "schedule": [
      {"operation": {"name": "create-leader", "operation-type": "create-index", "cluster": "leader"}},
      {"name": "index", "clients": 1,
       "operation": {"name": "bulk", "operation-type": "bulk", "cluster": "leader", "bulk-size": 1000}},
      {"operation": {"name": "flush", "operation-type": "raw-request", "cluster": "leader", "method": "POST",
                     "path": "/{{ index }}/_flush"}},
      {"operation": {"name": "boot", "operation-type": "ccr-bootstrap", "cluster": "follower",
                     "remote-cluster": "leader", "leader-index": "{{ index }}", "index": "{{ index }}",
                     "chunk-size": "1mb", "max-concurrent-file-chunks": 2}},
      {"operation": {"name": "sync", "operation-type": "wait-for-followers-to-sync", "cluster": "follower",
                     "indices": ["{{ index }}"], "timeout": 60}}
    ]},
    {"name": "failover", "schedule": [
      {"operation": {"name": "create-leader", "operation-type": "create-index", "cluster": "leader"}},
      {"operation": {"name": "follow", "operation-type": "ccr-follow", "cluster": "follower",
                     "remote-cluster": "leader", "leader-index": "{{ index }}", "index": "{{ index }}"}},
      {"parallel": {"tasks": [
        {"name": "index", "clients": 1,
         "operation": {"name": "bulk", "operation-type": "bulk", "cluster": "leader", "bulk-size": 250}},
        {"operation": {"name": "cut", "operation-type": "ccr-failover", "cluster": "follower",
                       "remote-cluster": "leader", "index": "{{ index }}", "mode": "{{ mode | default('cut-link') }}",
                       "after-docs": {{ after_docs }}, "timeout": 60}}
      ]}}
    ]}
  ]
}
"""


def write_drill_track(root: Path, docs: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "docs.json").write_text("".join(
        json.dumps({"n": i, "message": f"GET /item/{i} HTTP/1.1 200 {i * 7 % 5000}"}) + "\n" for i in range(docs)))
    (root / "index.json").write_text(json.dumps({
        # store stats uncached: the bootstrap's bytes are checked against the leader's store size
        "settings": {"number_of_shards": 2, "number_of_replicas": 0, "index.store.stats_refresh_interval": "0s"},
        "mappings": {"dynamic": "strict", "properties": {"n": {"type": "long"}, "message": {"type": "text"}}}}))
    (root / "track.json").write_text(DRILL_TRACK.replace("{{ docs }}", str(docs)))
    return root


def _race(pair: CcrPairInfo, track: Path, challenge: str, params: str,
          capsys: pytest.CaptureFixture[str]) -> tuple[int, str, dict[tuple[str, str], Any]]:
    rc = main(["--quiet", "race", f"--track-path={track}", f"--challenge={challenge}",
               f"--target-hosts={pair.target_hosts}", f"--track-params={params}", "--report-format=json"])
    out = capsys.readouterr().out
    report = json.loads(out[out.index("{"):out.rindex("}") + 1])
    return rc, out, {(r["metric"], r["task"]): r["value"] for r in report["rows"]}


def _drills(section: str = "ccr-drills") -> dict[str, Any]:
    with TrialStore() as store:
        [trial] = store.list_trials(1)
        summary = store.summary(trial.id)
    assert summary is not None
    return summary.sections.get(section, {})


@pytest.mark.timeout(300)
def test_bootstrap_of_an_existing_leader_index_is_measured(os_ccr_pair: CcrPairInfo, tmp_path: Path,  # noqa: F811
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    pair, index = os_ccr_pair, "drill-boot"
    pair.fresh(index)
    track = write_drill_track(tmp_path / "track", docs=20_000)
    try:
        rc, out, rows = _race(pair, track, "bootstrap", f"index:{index},after_docs:1", capsys)
        assert rc == 0, out
        scope = f"follower/{index}"
        [boot] = _drills()["bootstrap"]
        seconds, recovered = rows[("CCR bootstrap time to syncing", scope)], boot["recovered_bytes"]
        # The follower copied the leader's files: as many bytes as the flushed leader index stores.
        _, stats = http("GET", f"{pair.leader_url}/{index}/_stats/store")
        assert recovered == stats["indices"][index]["primaries"]["store"]["size_in_bytes"] > 100_000
        assert boot["mb_s"] == pytest.approx(recovered / 2**20 / seconds)
        assert 0 < boot["leader_cpu_pct"] and boot["leader_tx_bytes"] >= recovered
        assert boot["settings"] == {"plugins.replication.follower.index.recovery.chunk_size": "1mb",
                                    "plugins.replication.follower.index.recovery.max_concurrent_file_chunks": 2}
        assert rows[("CCR doc counts match", scope)] == 1 and count(pair.follower_url, index) == 20_000
        # the follower's recovery settings are as they were before the bootstrap
        _, settings = http("GET", f"{pair.follower_url}/_cluster/settings?flat_settings=true")
        assert not [k for k in settings["persistent"] if "recovery" in k], settings
        print(f"\nbootstrap: {recovered / 2**20:.2f} MB in {seconds:.2f} s ({boot['mb_s']:.2f} MB/s), leader CPU "
              f"{boot['leader_cpu_pct']:.0f} % of a core, leader transport out {boot['leader_tx_bytes'] / 2**20:.2f} MB")
    finally:
        pair.fresh(index)


@pytest.mark.timeout(300)
def test_failover_drill_cuts_the_link_promotes_and_measures(os_ccr_pair: CcrPairInfo, tmp_path: Path,  # noqa: F811
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    pair, index = os_ccr_pair, "drill-cut"
    pair.fresh(index)
    track = write_drill_track(tmp_path / "track", docs=30_000)
    try:
        rc, out, rows = _race(pair, track, "failover", f"index:{index},after_docs:5000", capsys)
        assert rc == 0, out
        [drill] = _drills()["failover"]
        scope = f"follower/{index} (cut-link)"
        assert drill["error"] is None and 5000 <= drill["cut_after_docs"] < 30_000
        rto, rpo = rows[("CCR failover RTO", scope)], rows[("CCR failover RPO", scope)]
        assert 0 < drill["promote_s"] <= rto < 60
        # RPO: the leader's operations at the cut (its primaries' max seq no) less the follower's checkpoints
        assert rpo == drill["leader_ops"] - drill["follower_ops"] >= 0
        # The leader kept what it acknowledged; the promoted follower has what it had replicated, the probe gone
        assert count(pair.leader_url, index) == drill["leader_docs_at_cut"] == drill["cut_after_docs"]
        assert count(pair.follower_url, index) == drill["follower_docs_after"] <= drill["leader_docs_at_cut"]
        assert rows[("CCR failover documents lost", scope)] == drill["leader_docs_at_cut"] - drill[
            "follower_docs_after"]
        # promoted: no longer a follower, and writable; the link is back as it was
        _, status = http("GET", f"{pair.follower_url}/_plugins/_replication/{index}/_status")
        assert status["status"] == "REPLICATION NOT IN PROGRESS"
        assert http("PUT", f"{pair.follower_url}/{index}/_doc/after", {"n": 1, "message": "x"})[0] == 201
        _, remote = http("GET", f"{pair.follower_url}/_remote/info")
        assert remote[LEADER_ALIAS]["seeds"] != [] and "127.0.0.1:" in remote[LEADER_ALIAS]["seeds"][0]
        _, leader_nodes = http("GET", f"{pair.leader_url}/_nodes/transport")
        assert remote[LEADER_ALIAS]["seeds"] == [n["transport"]["publish_address"]
                                                 for n in leader_nodes["nodes"].values()]
        print(f"\nfailover (cut-link): RTO {rto:.2f} s (promotion {drill['promote_s']:.2f} s), RPO {rpo:,.0f} ops, "
              f"cut after {drill['cut_after_docs']:,} docs")
    finally:
        pair.fresh(index)


@pytest.mark.timeout(300)
def test_a_drill_whose_point_never_comes_fails_the_race(os_ccr_pair: CcrPairInfo, tmp_path: Path,  # noqa: F811
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    pair, index = os_ccr_pair, "drill-never"
    pair.fresh(index)
    track = write_drill_track(tmp_path / "track", docs=2000)
    try:
        rc, out, rows = _race(pair, track, "failover", f"index:{index},after_docs:1000000", capsys)
        assert rc == EXIT_UNMEASURED, out
        assert "the indexing ended after 2,000 documents, before the drill's point" in out
        assert not [k for k in rows if k[0].startswith("CCR failover")]
    finally:
        pair.fresh(index)
