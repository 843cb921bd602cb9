"""The Doc count rows on a real OpenSearch leader/follower pair (tests/support/ccr_pair.py): one per cluster, named,
read after a refresh. The index never refreshes on its own (refresh_interval -1), as a bulk into search-idle shards
does not: ``_stats`` read without a refresh counts what the last refresh made visible, not what was indexed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main
from bench.trials.sqlite import TrialStore
from tests.support.ccr_pair import CcrPairInfo, http, os_ccr_pair, write_ccr_track  # noqa: F401 (the fixture)

pytestmark = pytest.mark.cluster
DOCS = 2000
INDEXED = DOCS // 2 + DOCS  # the track's first task indexes half the corpus, its second all of it
INDEX = "doc-counts"


def _refreshed_docs(url: str) -> int:
    status, body = http("POST", f"{url}/_refresh")
    assert status == 200, body
    status, body = http("GET", f"{url}/_stats/docs")
    assert status == 200, body
    return int(body["_all"]["primaries"].get("docs", {}).get("count", 0))  # no index yet: {}


@pytest.mark.timeout(600)
def test_doc_count_is_per_cluster_named_and_refreshed(os_ccr_pair: CcrPairInfo, tmp_path: Path,  # noqa: F811
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    track = write_ccr_track(tmp_path / "track", docs=DOCS)
    (track / "index.json").write_text(json.dumps({"settings": {"number_of_shards": 2, "number_of_replicas": 0,
                                                               "refresh_interval": "-1"}}))
    os_ccr_pair.fresh(INDEX)
    # the pair is shared: other tests' indices count too (Doc count is every index of the cluster, as in OSB)
    before = {"leader": _refreshed_docs(os_ccr_pair.leader_url), "follower": _refreshed_docs(os_ccr_pair.follower_url)}
    try:
        rc = main(["--quiet", "race", f"--track-path={track}", f"--target-hosts={os_ccr_pair.target_hosts}",
                   f"--track-params=index:{INDEX}", "--report-format=json",
                   "--telemetry-params=ccr-stats-sample-interval:0.5"])
        out = capsys.readouterr().out
        assert rc == 0, out
        rows = {(r["metric"], r["task"]): r["value"] for r in json.loads(out[out.index("{"):out.rindex("}") + 1])["rows"]}
        assert rows[("CCR doc counts match", f"follower/{INDEX}")] == 1
        assert rows[("CCR follower docs", f"follower/{INDEX}")] == INDEXED
        assert rows[("Doc count", "leader")] == before["leader"] + INDEXED
        assert rows[("Doc count", "follower")] == before["follower"] + INDEXED
        assert not [k for k in rows if k[0].startswith("Doc count") and k[1] not in ("leader", "follower")], rows
        with TrialStore() as store:
            [trial] = store.list_trials(1)
            cluster = store.summary(trial.id).cluster  # type: ignore[union-attr]
        assert cluster is not None and cluster.docs_after_refresh == {"leader": before["leader"] + INDEXED,
                                                                      "follower": before["follower"] + INDEXED}
        # what _stats said before the refresh, of the first cluster (the row as it was)
        print(f"\nDoc count before the refresh ({cluster.cluster}): {cluster.primaries.docs_count:,}; after: "
              f"leader {rows[('Doc count', 'leader')]:,.0f}, follower {rows[('Doc count', 'follower')]:,.0f}")
    finally:
        os_ccr_pair.stop_replication(INDEX)
