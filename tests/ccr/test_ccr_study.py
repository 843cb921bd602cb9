"""The CCR overhead study end to end on real clusters: experiments/ccr-overhead-opensearch.yml in test mode, one
repetition per variant (the file's 3 stay), OpenSearch 2.19.1 with the replication plugin: the baseline (soft
deletes on: OpenSearch 2 refuses them off, so that variant is dropped) on one cluster, CCR and CCR with
transport compression each on a leader/follower pair bench provisions from the topologies. The study table must
have every row filled. Skipped unless BENCH_OPENSEARCH_REPLICATION_PLUGIN names the plugin."""

from __future__ import annotations

import os
import time

import pytest

from bench.cli import main
from bench.race.experiment import load_experiment, runs_of
from bench.reporting.study import StudyTable, delta_text, load_study_table, render_study_markdown
from bench.trials.sqlite import TrialStore
from tests.support.checkout import ROOT

pytestmark = pytest.mark.cluster

FILE = ROOT / "experiments" / "ccr-overhead-opensearch.yml"


@pytest.mark.timeout(2400)
@pytest.mark.skipif(not os.environ.get("BENCH_OPENSEARCH_REPLICATION_PLUGIN"),
                    reason="set BENCH_OPENSEARCH_REPLICATION_PLUGIN to the replication plugin zip or folder")
def test_ccr_overhead_study_on_opensearch_fills_every_row(tmp_path, capsys):
    report = tmp_path / "study.md"
    started = time.monotonic()
    rc = main(["--quiet", "experiment", str(FILE), "--test-mode", "--repetitions=1",
               f"--plugin={os.environ['BENCH_OPENSEARCH_REPLICATION_PLUGIN']}", f"--report-file={report}"])
    elapsed = time.monotonic() - started
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "3 races planned, 3 run now, 0 done before, 0 failed" in out
    assert "Variant soft-deletes-off is dropped: OpenSearch 2.19.1 refuses" in out

    exp = load_experiment(FILE)
    assert exp.repetitions >= 3 and exp.order == "interleaved"
    with TrialStore() as store:
        [run_id] = runs_of(store, exp.name)
        table = load_study_table(store, exp, run_id)
    print(f"\nstudy run took {elapsed:.0f} s\n" + render_study_markdown(table))
    assert table.variants == ["soft-deletes-on", "ccr", "ccr-tcp-compression"]
    labels = [r.label for r in table.rows]
    for what in ("Min", "Median", "Max"):
        row = table.rows[labels.index(f"{what} Throughput (indexing)")]
        assert all(c.value and c.value > 0 for c in row.cells)  # index-append and index-append-leader alike
        assert all(c.diff_pct is not None and c.verdict == "not judged" for c in row.cells[1:])
    catch_up = table.rows[labels.index("100th percentile CCR catch-up time (CCR catch-up)")]
    assert catch_up.cells[0].value is None and all(c.value is not None for c in catch_up.cells[1:])
    assert catch_up.reference == "ccr" and catch_up.cells[2].diff_pct is not None
    for metric in ("CPU (median, node-stats)", "Disk read (node processes)", "Disk write (node processes)",
                   "Network in (transport)", "Network out (transport)"):
        leader = table.rows[labels.index(f"{metric} [default vs leader]")]
        assert all(c.value is not None for c in leader.cells)
        assert all(delta_text(c) != "–" for c in leader.cells[1:])  # a % or, from a 0 baseline, the difference
        follower = table.rows[labels.index(f"{metric} [follower]")]
        assert all(c.value is not None for c in follower.cells[1:])
    text = report.read_text()
    assert "## Study: ccr-overhead-opensearch" in text and "Baseline: soft-deletes-on" in text
    assert "## Comparison" in text
    assert_study_reads_first(text, table)


def assert_study_reads_first(text: str, table: StudyTable) -> None:
    """The study comes first and opens with the placement line; what the variants differ in by design is its
    design note, not a warning; repeated warnings are one line."""
    body = text.split("## Study: ", 1)[1]
    assert text.index("## Study: ") < text.index("## Comparison") and "## Headline" not in text[:text.index("## Study")]
    assert body.split("\n")[2] == table.lead[0] and table.lead[0].startswith("Placement: ")
    assert "load driver shared one host" in table.lead[0] and "While each variant indexed" in table.lead[0]
    assert table.lead[1].startswith("n = 1 per variant")
    assert table.notes[0].startswith("Design: the variants differ in challenge")
    for unplanned in ("Trials differ in cars", "Trials of different tracks or challenges", "Cluster roles:"):
        assert unplanned not in text
    assert text.count("per side are needed") <= 1
