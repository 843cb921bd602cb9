"""A CCR race on a real OpenSearch 2.19.1 leader/follower pair (the replication plugin from
BENCH_OPENSEARCH_REPLICATION_PLUGIN) stores the facts of what ran and shows them: both clusters' car
defaults+512mheap, their heap, no Elasticsearch default version among the options, and -- the topology pinning
the leader to CPU 0, the follower and the load driver to CPU 1 -- each node's and worker's CPU set as the kernel
applies it (``/proc/<pid>/status``). ``bench show --report-format=json`` prints a document that parses, with the
facts beside the rows; the table says yes/no."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

import bench.race.race
from bench.cli import main
from bench.cloud import local as cloud_local
from bench.provision.cpus import allowed_cpus
from bench.trials.sqlite import TrialStore
from tests.support.checkout import ROOT

pytestmark = pytest.mark.usefixtures("local_engines")  # bench starts the pair

PLUGIN = os.environ.get("BENCH_OPENSEARCH_REPLICATION_PLUGIN")


@pytest.mark.timeout(1200)
@pytest.mark.skipif(not PLUGIN, reason="set BENCH_OPENSEARCH_REPLICATION_PLUGIN to the replication plugin zip")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0),
                    reason="needs CPUs 0 and 1")
def test_pinned_ccr_race_stores_and_shows_what_ran(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    topo = yaml.safe_load((ROOT / "topologies" / "ccr-local-opensearch.yml").read_text())
    topo.pop("pinning")
    topo["driver_cpus"] = "1"
    topo["clusters"][0]["cpus"] = "0"
    topo["clusters"][1]["cpus"] = "1"
    path = tmp_path / "ccr-pinned.yml"
    path.write_text(yaml.safe_dump(topo))

    seen: dict[str, Any] = {}

    def hook(topology, cluster, info, started):  # type: ignore[no-untyped-def]
        for n in info.nodes:  # while the node runs: what the kernel applies to its server JVM
            seen[n.name] = allowed_cpus(n.pid)

    pinned_workers: list[Any] = []
    pin = bench.race.race.pin_process

    def recording_pin(pid: int, cpus: frozenset[int]) -> None:
        pin(pid, cpus)
        pinned_workers.append(allowed_cpus(pid))

    monkeypatch.setattr(bench.race.race, "pin_process", recording_pin)
    cloud_local.register_after_start(hook)
    try:
        rc = main(["--quiet", "race", f"--topology={path}", "--track=http_logs", "--challenge=ccr", "--test-mode",
                   f"--plugin={PLUGIN}", "--telemetry=host", "--report-format=json"])
    finally:
        cloud_local._HOOKS.remove(hook)
    out = capsys.readouterr().out
    assert rc == 0, out
    doc = json.loads(out)  # the document and nothing else
    assert seen == {"leader-0": {0}, "follower-0": {1}}
    assert pinned_workers == [{1}]  # one worker, on the driver's CPU
    trial = doc["trial"]
    clusters = {c["name"]: c for c in trial["clusters"]}
    assert clusters["leader"]["cpus"] == {"leader-0": "0"} and clusters["follower"]["cpus"] == {"follower-0": "1"}
    for c in clusters.values():
        assert c["car"] == "defaults+512mheap" and c["heap_max_bytes"] == 512 * 2**20 and c["processors"] == 1
        assert c["host"]["cpu_count"] == os.cpu_count() and c["engine"] == "opensearch"
    assert trial["machine"]["cpus"] == "1"
    assert "distribution_version" not in trial["options"] and "distribution_version" not in trial["environment"]
    assert "pinned: leader CPU 0, follower CPU 1, load driver CPU 1" in trial["placement"]
    rows = {(r["metric"], r["task"]): r["value"] for r in doc["rows"]}
    assert rows[("CCR doc counts match", "follower/logs")] is True

    with TrialStore() as store:
        [stored] = store.list_trials(1)
    assert stored.car == ["defaults", "512mheap"] and "distribution_version" not in stored.options
    assert main(["show", stored.id, "--report-format=json"]) == 0
    shown = json.loads(capsys.readouterr().out)  # parses: no "Trial ...:" line before it
    assert shown["trial"]["clusters"] == trial["clusters"] and shown["rows"] == doc["rows"]
    assert main(["show", stored.id, "--all"]) == 0
    table = capsys.readouterr().out
    line = next(x for x in table.splitlines() if x.startswith("CCR doc counts match"))
    assert line.split()[-1] == "yes" and "bool" not in table
    assert main(["report", stored.id]) == 0
    report = capsys.readouterr().out
    assert "| Cluster leader | opensearch 2.19.1, 1 node(s), car defaults+512mheap, heap 512 MiB, processors 1, " \
           "pinned to CPU 0 |" in report
    assert "distribution_version" not in report
