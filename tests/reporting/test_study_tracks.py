"""An experiment over several tracks has one study table with each key row once per track
(bench/reporting/study_tracks.py), the tracks of a row side by side; pure."""

from __future__ import annotations

from datetime import UTC, datetime

from bench.compare import Side, TrialData
from bench.race.experiment import ExperimentFile, StudySpec
from bench.reporting.study import render_study_markdown, study_table
from bench.reporting.study_tracks import merge_track_tables, track_labels
from bench.results.stats import ThroughputStats
from bench.results.summary import Summary, TaskSummary
from bench.trials.model import TrialInfo


def _trial(i: int, median: float) -> TrialData:
    tp = ThroughputStats(min=median * 0.9, mean=median, median=median, max=median * 1.1, unit="docs/s")
    summary = Summary(tasks=[TaskSummary(task="index-append", operation_type="bulk", unit="docs", throughput=tp)])
    info = TrialInfo(id=f"t{i:07d}", status="complete", track="x", challenge="x",
                     start_time=datetime(2026, 11, 28, tzinfo=UTC))
    return TrialData(info=info, summary=summary)


def _table(base: list[float], ccr: list[float], variants: tuple[str, str] = ("baseline", "ccr")):
    sides = [Side(label=variants[0], selector="b", trials=[_trial(i, v) for i, v in enumerate(base)]),
             Side(label=variants[1], selector="c", trials=[_trial(10 + i, v) for i, v in enumerate(ccr)])]
    return study_table("stage1", "run1", StudySpec(), sides)


def test_each_key_row_once_per_track_with_that_tracks_numbers() -> None:
    geo = _table([1000, 1010, 990], [900, 910, 890])
    pmc = _table([200, 202, 198], [190, 191, 189])
    table = merge_track_tables([("geopoint", geo), ("pmc", pmc)])
    labels = [r.label for r in table.rows]
    assert labels == ["geopoint: Min Throughput (indexing)", "pmc: Min Throughput (indexing)",
                      "geopoint: Median Throughput (indexing)", "pmc: Median Throughput (indexing)",
                      "geopoint: Max Throughput (indexing)", "pmc: Max Throughput (indexing)"]
    rows = {r.label: r for r in table.rows}
    assert [c.value for c in rows["geopoint: Median Throughput (indexing)"].cells] == [1000.0, 900.0]
    assert [c.value for c in rows["pmc: Median Throughput (indexing)"].cells] == [200.0, 190.0]
    assert round(rows["pmc: Median Throughput (indexing)"].cells[1].diff_pct, 1) == -5.0
    assert table.variants == ["baseline", "ccr"] and table.trials == [3, 3]
    assert "| pmc: Median Throughput (indexing) | docs/s | 200 | 190 | -5.0 % regression" in \
        render_study_markdown(table)


def test_a_track_with_other_variants_adds_no_rows_and_says_so() -> None:
    geo = _table([1000, 1010, 990], [900, 910, 890])
    pmc = _table([200, 202], [190, 191, 189], variants=("baseline", "other"))
    table = merge_track_tables([("geopoint", geo), ("pmc", pmc)])
    assert all(r.label.startswith("geopoint: ") for r in table.rows)
    assert any(n.startswith("pmc: no rows here") for n in table.notes)


def test_trial_counts_that_differ_by_track_are_said() -> None:
    table = merge_track_tables([("geopoint", _table([1, 2, 3], [1, 2, 3])), ("pmc", _table([1, 2], [1, 2, 3]))])
    assert table.trials == [3, 3]
    assert any("Trials per variant differ by track: geopoint: baseline 3, ccr 3; pmc: baseline 2, ccr 3" in n
               for n in table.notes)


def test_track_labels_name_each_entry() -> None:
    exp = ExperimentFile.model_validate({"name": "e", "variants": ["a"],
                                         "tracks": ["geopoint", {"track": "pmc", "challenge": "ccr"}, "geopoint"]})
    assert track_labels(exp) == ["geopoint #0", "pmc/ccr", "geopoint #2"]


def test_bench_experiment_over_two_tracks_reports_a_row_per_track(tmp_path, capsys) -> None:
    """The whole path: ``bench experiment`` over geopoint and pmc (test mode, the null sink as the cluster) prints
    one study table with each key row once per track, in the first track's report."""
    import yaml

    from bench.cli import main
    from benchmarks.nullsink import free_port, start_in_background

    port = free_port()
    spec = {"name": "two-tracks", "baseline": "eight-clients", "repetitions": 1, "tracks": ["geopoint", "pmc"],
            "race": {"challenge": "baseline", "test-mode": True, "target-hosts": f"127.0.0.1:{port}",
                     "exclude-tasks": ["check-cluster-health"]},  # the sink has no cluster health
            "variants": {"eight-clients": {"track-params": {"bulk_indexing_clients": 8}},
                         "two-clients": {"track-params": {"bulk_indexing_clients": 2}}},
            "study": {"indexing-task": {"eight-clients": "index-append", "two-clients": "index-append"}}}
    path = tmp_path / "two-tracks.yml"
    path.write_text(yaml.safe_dump(spec))
    procs = start_in_background(port)
    try:
        rc = main(["--quiet", "experiment", str(path), f"--report-file={tmp_path / 'r.md'}"])
    finally:
        for p in procs:
            p.terminate()
            p.join(10)
    assert rc == 0, capsys.readouterr()
    first, second = (tmp_path / "r-0.md").read_text(), (tmp_path / "r-1.md").read_text()
    labels = [line.split(" | ")[0].removeprefix("| ") for line in first.splitlines() if line.startswith("| ")
              and "Throughput (indexing)" in line.split(" | ")[0]]
    assert labels == [f"{t}: {m} Throughput (indexing)" for m in ("Min", "Median", "Max") for t in ("geopoint", "pmc")]
    assert "## Study:" not in second  # one study, in the first track's report
