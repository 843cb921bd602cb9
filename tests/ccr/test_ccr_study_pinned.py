"""The CCR study with CPU pinning on real OpenSearch 2.19.1 clusters (replication plugin from
BENCH_OPENSEARCH_REPLICATION_PLUGIN), in test mode, one repetition: the baseline's cluster and the CCR leader
pinned to CPU 0, the follower and the load driver to CPU 1 (explicit sets: this 2-core machine is below auto
pinning's 4 CPUs). The study's placement line says so per variant, with what each cluster used while indexing.

The same races show that a CCR trial stores the facts of what ran: both clusters' car defaults+512mheap, their heap,
no Elasticsearch default version among the options, and each node's and worker's CPU set as the kernel applies it
(``/proc/<pid>/status``). ``bench show --report-format=json`` prints a document that parses, with the facts beside
the rows; the table says yes/no; the report names each cluster."""

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
from bench.race.experiment import load_experiment, runs_of
from bench.reporting.study import load_study_table, render_study_markdown
from bench.trials.sqlite import TrialStore
from tests.support.checkout import ROOT
from tests.support.study_checks import assert_study_reads_first

pytestmark = pytest.mark.usefixtures("local_engines")  # the experiment's races start the clusters

PLUGIN = os.environ.get("BENCH_OPENSEARCH_REPLICATION_PLUGIN")


def _pinned_files(folder: Path) -> Path:
    ccr = yaml.safe_load((ROOT / "topologies" / "ccr-local-opensearch.yml").read_text())
    ccr.pop("pinning")
    ccr.update(driver_cpus="1")
    ccr["clusters"][0]["cpus"], ccr["clusters"][1]["cpus"] = "0", "1"
    single = {"name": "single-os", "provider": "local", "driver_cpus": "1",
              "clusters": [{**ccr["clusters"][0], "name": "default", "cpus": "0"}]}
    (folder / "ccr.yml").write_text(yaml.safe_dump(ccr))
    (folder / "single.yml").write_text(yaml.safe_dump(single))
    exp = yaml.safe_load((ROOT / "experiments" / "ccr-overhead-opensearch.yml").read_text())
    exp["race"].pop("pinning")
    exp["variants"] = {"soft-deletes-on": {"challenge": "baseline", "topology": "single.yml"},
                       "ccr": {"challenge": "ccr", "topology": "ccr.yml", "telemetry": ["node-stats", "host", "ccr-stats"]}}
    exp.update(baseline="soft-deletes-on", name="ccr-overhead-pinned")
    exp["study"] = {**exp["study"], "indexing-task": {"soft-deletes-on": "index-append", "ccr": "index-append"}}
    for key in ("soft-deletes-off", "baseline-if-refused"):
        exp["study"].pop(key)
    path = folder / "ccr-overhead-pinned.yml"
    path.write_text(yaml.safe_dump(exp))
    return path


@pytest.mark.timeout(2400)
@pytest.mark.skipif(not PLUGIN, reason="set BENCH_OPENSEARCH_REPLICATION_PLUGIN to the replication plugin zip")
@pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0), reason="needs CPUs 0 and 1")
def test_pinned_study_says_where_each_cluster_ran_and_the_trials_store_what_ran(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    file = _pinned_files(tmp_path)
    report = tmp_path / "study.md"
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
        rc = main(["--quiet", "experiment", str(file), "--test-mode", "--repetitions=1", f"--plugin={PLUGIN}",
                   f"--report-file={report}"])
    finally:
        cloud_local._HOOKS.remove(hook)
    out = capsys.readouterr().out
    assert rc == 0, out
    exp = load_experiment(file)
    with TrialStore() as store:
        [run_id] = runs_of(store, exp.name)
        table = load_study_table(store, exp, run_id)
    print("\n" + render_study_markdown(table))
    placement = table.lead[0]
    assert placement.startswith("Placement: soft-deletes-on: default and the load driver shared one host (")
    assert "pinned: default CPU 0, load driver CPU 1; ccr: leader, follower and the load driver shared" in placement
    assert "pinned: leader CPU 0, follower CPU 1, load driver CPU 1." in placement
    assert "ccr (1 trial): leader " in placement and "; follower " in placement
    text = report.read_text()
    assert_study_reads_first(text, table)
    assert seen == {"default-0": {0}, "leader-0": {0}, "follower-0": {1}}, seen
    assert pinned_workers == [{1}, {1}]  # one worker a race, on the driver's CPU
    _ccr_trial_shows_what_ran(capsys)


def _ccr_trial_shows_what_ran(capsys: pytest.CaptureFixture[str]) -> None:
    with TrialStore() as store:
        [stored] = [t for t in store.list_trials(10) if t.challenge == "ccr"]
    assert stored.car == ["defaults", "512mheap"] and "distribution_version" not in stored.options
    capsys.readouterr()
    assert main(["show", stored.id, "--report-format=json"]) == 0
    doc = json.loads(capsys.readouterr().out)  # parses: no "Trial ...:" line before it
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
    assert main(["show", stored.id, "--all"]) == 0
    table = capsys.readouterr().out
    line = next(x for x in table.splitlines() if x.startswith("CCR doc counts match"))
    assert line.split()[-1] == "yes" and "bool" not in table
    assert main(["report", stored.id]) == 0
    report = capsys.readouterr().out
    assert "| Cluster leader | opensearch 2.19.1, 1 node(s), car defaults+512mheap, heap 512 MiB, processors 1, " \
           "pinned to CPU 0 |" in report
    assert "distribution_version" not in report
