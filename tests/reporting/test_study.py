"""The study table (bench/reporting/study.py), pure: variants whose indexing tasks and clusters are named
differently line up in one row each, with compare's verdicts; and its markdown."""

from __future__ import annotations

from datetime import UTC, datetime

from bench.compare import Side, TrialData
from bench.race.experiment import StudySpec
from bench.reporting.study import render_study_markdown, study_table, study_view
from bench.results.stats import ThroughputStats
from bench.results.summary import Summary, TaskSummary
from bench.telemetry.section import SECTION, NodeTelemetry, TelemetrySummary
from bench.trials.model import TrialInfo


def _trial(i: int, task: str, median: float, clusters: dict[str, float]) -> TrialData:
    tp = ThroughputStats(min=median * 0.8, mean=median, median=median, max=median * 1.2, unit="docs/s")
    nodes = [NodeTelemetry(cluster=c, node=f"{c}-0", cpu_median=cpu, disk_write_bytes=cpu * 2**20,
                           net_rx_bytes=cpu * 2 * 2**20, net_tx_bytes=cpu * 3e6, disk_read_bytes=0.0)
             for c, cpu in clusters.items()]
    summary = Summary(tasks=[TaskSummary(task="delete", operation_type="delete-index", unit="ops"),
                             TaskSummary(task=task, operation_type="bulk", unit="docs", throughput=tp)],
                      sections={SECTION: TelemetrySummary(nodes=nodes).model_dump(mode="json")})
    info = TrialInfo(id=f"t{i:07d}", status="complete", track="http_logs", challenge="x",
                     start_time=datetime(2026, 11, 23, tzinfo=UTC))
    return TrialData(info=info, summary=summary)


def _sides(spread: float) -> list[Side]:
    base = [_trial(i, "index-append", 1000 + spread * i, {"default": 50 + i}) for i in range(3)]
    ccr = [_trial(10 + i, "index-append-leader", 700 + spread * i, {"leader": 70 + i, "follower": 30})
           for i in range(3)]
    return [Side(label="baseline", selector="b", trials=base), Side(label="ccr", selector="c", trials=ccr)]


def test_differently_named_tasks_and_clusters_line_up_with_verdicts():
    spec = StudySpec(clusters={"default": "leader"})  # tasks: each variant's first bulk task
    table = study_table("s", "run1", spec, _sides(spread=10.0))
    rows = {r.label: r for r in table.rows}
    median = rows["Median Throughput (indexing)"]
    assert [c.value for c in median.cells] == [1010.0, 710.0]
    assert round(median.cells[1].diff_pct, 1) == -29.7 and median.cells[1].verdict == "regression"
    cpu = rows["CPU (median, node-stats) [default vs leader]"]
    assert [c.value for c in cpu.cells] == [51.0, 71.0] and cpu.cells[1].verdict == "regression"
    follower = rows["Disk write [follower]"]
    assert follower.cells[0].value is None and follower.cells[1].value == 30.0
    assert follower.reference == "ccr" and follower.cells[1].diff_pct is None
    assert [r.label for r in table.rows][:3] == ["Min Throughput (indexing)", "Median Throughput (indexing)",
                                                  "Max Throughput (indexing)"]
    md = render_study_markdown(table)
    assert "| Metric | Unit | Baseline: baseline (n=3) | ccr (n=3) | Δ % |" in md
    assert "| Median Throughput (indexing) | docs/s | 1,010 | 710 | -29.7 % regression (95 % CI" in md
    assert "Disk write [follower] (Δ against ccr)" in md
    # The HTML report colours each Δ % cell by its verdict (the label and unit cells stay plain).
    view = study_view(table)
    i = [r[0] for r in view.rows].index("Median Throughput (indexing)")
    assert view.classes[i] == ["", "", "num", "num", "num regression"]
    disk_read = [r[0] for r in view.rows].index("Disk read [default vs leader]")
    assert view.classes[disk_read][-1] == "num noise"  # zero on both sides: no change, grey


def test_the_named_indexing_task_wins_over_the_first_bulk():
    sides = _sides(spread=10.0)
    for t in sides[1].trials:
        t.summary.tasks.insert(0, TaskSummary(task="warm-bulk", operation_type="bulk", unit="docs",
                                              throughput=ThroughputStats(min=1, mean=1, median=1, max=1,
                                                                         unit="docs/s")))
    named = study_table("s", "r", StudySpec(indexing_task={"ccr": "index-append-leader"}), sides)
    first = study_table("s", "r", StudySpec(), sides)
    assert named.rows[1].cells[1].value == 710.0 and first.rows[1].cells[1].value == 1.0


def test_noise_is_within_noise_and_single_trials_are_not_judged():
    wide = study_table("s", "r", StudySpec(), [Side(label=s.label, selector="x", trials=s.trials)
                                                 for s in _sides(spread=400.0)])
    assert wide.rows[1].cells[1].verdict == "within noise"
    one = [Side(label=s.label, selector="x", trials=s.trials[:1]) for s in _sides(spread=10.0)]
    table = study_table("s", "r", StudySpec(), one)
    assert table.rows[1].cells[1].verdict == "not judged"
    assert table.lead == ["n = 1 per variant: fewer than 3 trials, so nothing is judged (\"not judged\"); run ≥ 3 "
                          "repetitions for a confidence verdict."]


def test_a_change_from_a_zero_baseline_shows_the_difference_and_rows_judge_like_compare():
    sides = _sides(spread=10.0)
    for t in sides[0].trials:  # a single-node baseline moves no transport bytes
        t.summary.sections[SECTION]["nodes"][0]["net_rx_bytes"] = 0.0
    rows = {r.label: r for r in study_table("s", "r", StudySpec(clusters={"default": "leader"}), sides).rows}
    rx = rows["Network in (rx) [default vs leader]"]
    assert rx.cells[0].value == 0.0 and rx.cells[1].diff_pct is None
    md = render_study_markdown(study_table("s", "r", StudySpec(clusters={"default": "leader"}), sides))
    assert "| Network in (rx) [default vs leader] | MB | 0.00 | 142 | +142.00 MB (from 0) |" in md
    from bench.compare.metrics import higher_is_better

    assert rows["Disk write [default vs leader]"].higher_is_better == higher_is_better("Disk write")
