"""The CCR study with CPU pinning on real OpenSearch 2.19.1 clusters (replication plugin from
BENCH_OPENSEARCH_REPLICATION_PLUGIN), in test mode, one repetition: the baseline's cluster and the CCR leader
pinned to CPU 0, the follower and the load driver to CPU 1 (explicit sets: this 2-core machine is below auto
pinning's 4 CPUs). The study's placement line says so per variant, with what each cluster used while indexing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from bench.cli import main
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
def test_pinned_study_says_where_each_cluster_ran(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = _pinned_files(tmp_path)
    report = tmp_path / "study.md"
    rc = main(["--quiet", "experiment", str(file), "--test-mode", "--repetitions=1", f"--plugin={PLUGIN}",
               f"--report-file={report}"])
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
