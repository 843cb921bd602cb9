"""The failover drill's kill mode, for real: ``bench race --topology`` starts a 1-node OpenSearch 2.19.1 leader and
follower (256m heaps, the replication plugin from BENCH_OPENSEARCH_REPLICATION_PLUGIN), indexes into the leader and
SIGKILLs the leader's node at the drill's point. The race that killed its own leader on purpose is complete (exit
0) with an RTO and an RPO; the killed node is gone, its logs kept with the trial, and the follower bench started is
stopped too."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import psutil
import pytest

from bench.cli import main
from bench.cloud import local as cloud_local
from bench.trials.sqlite import TrialStore
from bench.util.home import trials_dir
from tests.ccr.test_ccr_drills_live import write_drill_track

pytestmark = pytest.mark.usefixtures("local_engines", "fault_injection")  # bench starts the pair, kills a node

PLUGIN = os.environ.get("BENCH_OPENSEARCH_REPLICATION_PLUGIN")
TOPOLOGY = """name: ccr-kill-drill
provider: local
clusters:
  - {name: leader, nodes: 1, engine: opensearch, version: 2.19.1, car: [defaults, 256mheap]}
  - {name: follower, nodes: 1, engine: opensearch, version: 2.19.1, car: [defaults, 256mheap], remote_clusters: [leader]}
"""


@pytest.mark.timeout(900)
@pytest.mark.skipif(not PLUGIN, reason="set BENCH_OPENSEARCH_REPLICATION_PLUGIN to the replication plugin zip")
def test_killing_the_leader_on_purpose_measures_rto_and_rpo(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    topology = tmp_path / "topology.yml"
    topology.write_text(TOPOLOGY)
    track = write_drill_track(tmp_path / "track", docs=30_000)
    pids: dict[str, list[int]] = {}

    def seen(topo: Any, cluster: Any, info: Any, started: Any) -> None:  # while the nodes run
        pids[info.name] = [n.pid for n in info.nodes]

    cloud_local.register_after_start(seen)
    try:
        rc = main(["--quiet", "race", f"--topology={topology}", f"--track-path={track}", "--challenge=failover",
                   "--track-params=index:drill-kill,after_docs:5000,mode:kill", f"--plugin={PLUGIN}",
                   "--report-format=json"])
    finally:
        cloud_local._HOOKS.remove(seen)
    out = capsys.readouterr().out
    assert rc == 0, out
    doc = json.loads(out[out.index("{"):out.rindex("}") + 1])
    rows = {(r["metric"], r["task"]): r["value"] for r in doc["rows"]}
    scope = "follower/drill-kill (kill)"
    rto, rpo = rows[("CCR failover RTO", scope)], rows[("CCR failover RPO", scope)]
    with TrialStore() as store:
        [trial] = store.list_trials(1)
        summary = store.summary(trial.id)
    assert trial.status == "complete" and summary is not None and not summary.unmeasured
    [drill] = summary.sections["ccr-drills"]["failover"]
    assert drill["error"] is None and 0 < rto < 60 and rpo == drill["leader_ops"] - drill["follower_ops"] >= 0
    assert drill["leader_docs_at_cut"] == drill["cut_after_docs"] >= 5000
    # the leader is dead (no leader count in the CCR section), and no request failed because of the planned kill
    assert ("CCR leader docs", "leader/drill-kill") not in rows and rows[("error rate", "index")] == 0
    # every node bench started is gone, the killed one's logs are kept with the trial
    assert sorted(pids) == ["follower", "leader"]
    assert not [p for ps in pids.values() for p in ps if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
    assert (trials_dir() / trial.id / "logs" / "leader" / "leader-0").is_dir()
    print(f"\nfailover (kill): RTO {rto:.2f} s (promotion {drill['promote_s']:.2f} s), RPO {rpo:,.0f} ops after "
          f"{drill['cut_after_docs']:,} docs")
