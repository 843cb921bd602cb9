"""Stage 1 on real 3-node OpenSearch 2.19.1 clusters with the replication plugin (256m heaps, test mode): the
bundled experiments/ccr-stage1-opensearch.yml, run by ``bench experiment --test-mode --repetitions=1`` with its
tracks restricted to geopoint: two tracks × both variants took 396 s here, all three over 8 minutes, and no
experiment option selects tracks, so the test runs a copy of the file whose only change is its ``tracks`` line (the
study's row per track is tested on the null sink, tests/reporting/test_study_tracks.py). Every race's clusters are
inspected while they run: 3 nodes each, the leader's and the follower's indices with 3 primaries and 1 replica, all
shards started, a primary and its replica never on one node."""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.cli import main
from bench.race.experiment import load_experiment, runs_of
from bench.race.pipeline import RaceHook, RacePlan, RaceTargets, register_race_hook, unregister_race_hook
from bench.reporting.study import delta_text
from bench.reporting.study_tracks import tracks_study_table
from bench.results.summary import Summary
from bench.trials.sqlite import TrialStore
from tests.support.ccr_pair import need_plugin
from tests.support.study_checks import assert_study_reads_first

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
TRACKS = ["geopoint"]
INDICES = {"geopoint": "osmgeopoints", "pmc": "pmc", "http_logs": "logs"}


def _get(target: Any, path: str) -> Any:
    """GET over the race's own TLS and user: security is on in Stage 1 (HTTPS only, the race's CA)."""
    o = target.options
    assert o.use_ssl and o.ca_certs and o.basic_auth_user, f"cluster {target.name}: security is not on: {o}"
    request = urllib.request.Request(target.urls()[0] + path)
    token = base64.b64encode(f"{o.basic_auth_user}:{o.basic_auth_password.get_secret_value()}".encode()).decode()
    request.add_header("Authorization", f"Basic {token}")
    context = ssl.create_default_context(cafile=str(o.ca_certs))
    with urllib.request.urlopen(request, timeout=30, context=context) as r:
        return json.loads(r.read())


def _secured_nodes(plugins: list[dict[str, Any]]) -> set[str]:
    """The nodes running the security plugin. It refuses to start a node without transport TLS (its certificates
    are required unless it is disabled, and a disabled plugin answers no security API), and ``_get`` reached the
    node over HTTPS trusting the race's CA only: together, TLS on transport and HTTP."""
    return {p["name"] for p in plugins if p["component"] == "opensearch-security"}


class _Inspect(RaceHook):
    """What each race's clusters hold once the schedule ended (while they still run), and how long they took to
    start (from before provisioning to the clusters answering)."""

    seen: list[dict[str, Any]] = []

    def before_provisioning(self, race: RacePlan) -> None:
        self.started = time.monotonic()
        self.track = race.track.name

    def prepare(self, race: RaceTargets) -> Any:
        self.start_s = time.monotonic() - self.started
        return race.opts

    def finish(self, race: RaceTargets, summary: Summary | None) -> Summary | None:
        index = INDICES[self.track]
        clusters = {}
        for t in race.targets:
            shards = _get(t, f"/_cat/shards/{index}?format=json")
            settings = _get(t, f"/{index}/_settings")[index]["settings"]["index"]
            auth = _get(t, "/_plugins/_security/authinfo")
            clusters[t.name] = {"nodes": len(_get(t, "/_cat/nodes?format=json")), "roles": auth.get("roles", []),
                                "secured": len(_secured_nodes(_get(t, "/_cat/plugins?format=json"))),
                                "shards": settings["number_of_shards"], "replicas": settings["number_of_replicas"],
                                "started": sorted((s["shard"], s["prirep"]) for s in shards if s["state"] == "STARTED"),
                                "hosts": {s["shard"] + s["prirep"]: s["node"] for s in shards}}
        self.seen.append({"track": self.track, "challenge": race.challenge.name, "start_s": self.start_s,
                          "clusters": clusters})
        return summary


def _stage1_copy(tmp_path: Path) -> Path:
    spec = yaml.safe_load((ROOT / "experiments" / "ccr-stage1-opensearch.yml").read_text())
    spec["tracks"] = TRACKS
    spec["variants"]["ccr"]["topology"] = str(ROOT / spec["variants"]["ccr"]["topology"])
    path = tmp_path / "ccr-stage1-opensearch.yml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.mark.timeout(1500)
@pytest.mark.usefixtures("local_engines")
def test_stage1_replicates_3p1r_indices_between_3_node_clusters(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    plugin = need_plugin()
    path = _stage1_copy(tmp_path)
    _Inspect.seen = []
    register_race_hook(_Inspect)
    try:
        rc = main(["--quiet", "experiment", str(path), "--test-mode", "--repetitions=1", f"--plugin={plugin}",
                   f"--report-file={tmp_path / 'study.md'}"])
    finally:
        unregister_race_hook(_Inspect)
    out = capsys.readouterr()
    assert rc == 0, out.out + out.err
    seen = _Inspect.seen
    assert sorted((s["track"], s["challenge"]) for s in seen) == [(t, c) for t in TRACKS for c in ("baseline", "ccr")]
    want = sorted((str(n), p) for n in (0, 1, 2) for p in ("p", "r"))
    for race in seen:
        names = ["leader", "follower"] if race["challenge"] == "ccr" else ["default"]
        assert sorted(race["clusters"]) == sorted(names), race
        for name, c in race["clusters"].items():
            # 3 nodes; 3 primaries + 3 replicas started, a primary and its replica never on one node
            assert (c["nodes"], c["shards"], c["replicas"], c["started"]) == (3, "3", "1", want), (race, name)
            assert all(c["hosts"][f"{n}p"] != c["hosts"][f"{n}r"] for n in ("0", "1", "2")), (race, name)
            # security on: the race's user (with the replication roles on a CCR pair), TLS on transport and HTTP
            assert c["secured"] == 3, (race, name)
            if race["challenge"] == "ccr":
                assert any("cross_cluster_replication" in r for r in c["roles"]), (race, name, c["roles"])
    exp = load_experiment(path)
    with TrialStore() as store:
        [(run_id, trials)] = runs_of(store, exp.name).items()
        table = tracks_study_table(store, exp, run_id)
        for t in trials:
            if t.challenge == "ccr":
                ccr = store.summary(t.id).ccr  # type: ignore[union-attr]
                assert [(f["leader_docs"], f["follower_docs"]) for f in ccr["followers"]] == [(1000, 1000)]
    rows = {r.label: r for r in table.rows}
    assert table.variants == ["soft-deletes-on", "ccr"]  # soft deletes off: refused by OpenSearch 2, dropped
    assert all(c.value and c.value > 0 for c in rows["Median Throughput (indexing)"].cells)
    assert rows["100th percentile CCR catch-up time (CCR catch-up)"].cells[1].value is not None
    assert all(c.value is not None for c in rows["CPU (median, node-stats) [default vs leader]"].cells)
    for what in ("Min", "Median", "Max"):
        assert all(c.diff_pct is not None and c.verdict == "not judged"
                   for c in rows[f"{what} Throughput (indexing)"].cells[1:])
    for metric in ("CPU (median, node-stats)", "Disk read (node processes)", "Disk write (node processes)",
                   "Network in (transport)", "Network out (transport)"):
        assert all(delta_text(c) != "–" for c in rows[f"{metric} [default vs leader]"].cells[1:]), metric
        assert rows[f"{metric} [follower]"].cells[1].value is not None, metric
    text = (tmp_path / "study.md").read_text()
    assert "## Study: ccr-stage1-opensearch" in text and "Baseline: soft-deletes-on" in text
    assert "Variant soft-deletes-off is dropped: OpenSearch 2.19.1 refuses" in out.out
    assert_study_reads_first(text, table)
    print("start times (s):", [(s["track"], s["challenge"], round(s["start_s"], 1)) for s in seen])
