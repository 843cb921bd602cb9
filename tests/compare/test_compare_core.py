"""compare() and its renderings on known summaries (pure; the real-trial tests are in test_compare_real.py)."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime

from bench.compare import compare, render_comparison
from bench.compare.core import Side, TrialData
from bench.compare.metrics import higher_is_better
from bench.results.stats import ThroughputStats
from bench.results.summary import Summary, TaskSummary
from bench.trials.sqlite import TrialInfo


def _trial(i: int, tput: float, p50: float, *, track: str = "nginx", extra_task: bool = False) -> TrialData:
    tasks = [TaskSummary(task="index", operation_type="bulk", unit="docs",
                         throughput=ThroughputStats(min=tput * .9, mean=tput, median=tput, max=tput * 1.1,
                                                    unit="docs/s"),
                         latency={50.0: p50}, service_time={50.0: p50}, requests=10)]
    if extra_task:
        tasks.append(TaskSummary(task="search", operation_type="search", unit="ops", latency={50.0: 3.0},
                                 requests=5))
    info = TrialInfo(id=f"{i:032x}", track=track, challenge="index-only", status="complete",
                     start_time=datetime(2024, 1, 1, tzinfo=UTC), user_tags={"variant": str(i)})
    return TrialData(info=info, summary=Summary(tasks=tasks))


def _side(label: str, trials: list[TrialData]) -> Side:
    return Side(label=label, selector=label, trials=trials)


def _row(cmp, metric: str, task: str = "index"):
    return next(r for r in cmp.rows if r.metric == metric and r.task == task)


def test_directions_of_the_rows():
    assert higher_is_better("Mean Throughput") is True
    assert higher_is_better("99th percentile latency") is False
    assert higher_is_better("error rate") is False
    assert higher_is_better("Cumulative indexing time of primary shards") is False
    assert higher_is_better("Max cumulative merge time across primary shards") is False
    assert higher_is_better("Total Young Gen GC time") is False
    assert higher_is_better("Median CPU usage (node-stats)") is False
    assert higher_is_better("Max CCR lag time") is False
    assert higher_is_better("Doc count") is None


def test_single_trials_are_shown_but_not_judged():
    cmp = compare(_side("base", [_trial(1, 1000, 10)]), [_side("cand", [_trial(2, 961, 12)])])
    row = _row(cmp, "Mean Throughput")
    cell = row.candidates[0]
    assert row.baseline == 1000 and cell.value == 961 and cell.diff == -39
    assert round(cell.diff_pct, 2) == -3.9 and cell.ci is None and cell.verdict == "not judged"
    assert any("significance cannot be judged" in w for w in cmp.warnings)
    md = render_comparison(cmp, "markdown")
    line = next(x for x in md.splitlines() if x.startswith("| Mean Throughput"))
    assert [c.strip() for c in line.strip("|").split("|")] == [
        "Mean Throughput", "index", "1,000.00", "961.00", "-39.00", "-3.90%", "docs/s", "worse, not judged"]


def test_groups_get_a_confidence_interval_and_verdicts():
    base = _side("base", [_trial(i, t, 10) for i, t in enumerate([1000, 1010, 990], 1)])
    same = _side("same", [_trial(i, t, 10) for i, t in enumerate([1005, 995, 1012], 4)])
    slow = _side("slow", [_trial(i, t, 20 + i) for i, t in enumerate([500, 505, 498], 7)])
    cmp = compare(base, [same, slow])
    tput = _row(cmp, "Mean Throughput")
    assert tput.candidates[0].verdict == "within noise" and tput.candidates[0].ci is not None
    assert tput.candidates[1].verdict == "regression"
    assert _row(cmp, "50th percentile latency").candidates[1].verdict == "regression"  # latency up
    # Several candidates: one value and Δ % pair per candidate, the result inside the Δ % cell.
    md = render_comparison(cmp, "markdown")
    header = md.splitlines()[md.splitlines().index(next(line for line in md.splitlines() if line.startswith("| Metric")))]
    assert [h.strip() for h in header.strip("|").split("|")] == ["Metric", "Task", "base", "same", "Δ %", "slow",
                                                                 "Δ %", "Unit"]
    assert "**regression**" in md and "within noise" in md


def test_rows_on_one_side_only_are_listed_and_tracks_warn():
    cmp = compare(_side("base", [_trial(1, 1000, 10)]),
                  [_side("cand", [_trial(2, 1000, 10, track="http_logs", extra_task=True)])])
    assert {"metric": "50th percentile latency", "task": "search", "sides": ["cand"]} in cmp.only_in
    assert any("different tracks" in w for w in cmp.warnings)
    text = render_comparison(cmp, "table")
    assert "Only in cand: 50th percentile latency (search)" in text


def test_csv_and_json_carry_raw_values():
    base = _side("base", [_trial(i, t, 10) for i, t in enumerate([1000, 1010, 990], 1)])
    cand = _side("cand", [_trial(i, t, 10) for i, t in enumerate([1200, 1190, 1210], 4)])
    cmp = compare(base, [cand], noise_threshold_pct=1.0)
    recs = list(csv.DictReader(io.StringIO(render_comparison(cmp, "csv"))))
    mean = next(r for r in recs if r["metric"] == "Mean Throughput")
    assert float(mean["baseline_value"]) == 1000 and float(mean["candidate_value"]) == 1200
    assert mean["result"] == "improvement" and mean["ci_method"] == "welch"
    data = json.loads(render_comparison(cmp, "json"))
    row = next(r for r in data["rows"] if r["metric"] == "Mean Throughput")
    assert row["candidate_values"] == [1200, 1190, 1210] and row["ci_low"] > 0
    assert data["noise_threshold_pct"] == 1.0


def test_ccr_catch_up_time_is_compared_lower_is_better():
    from bench.ccr.section import CatchUp, CcrSection

    def with_catch_up(i: int, ms: float) -> TrialData:
        t = _trial(i, 1000, 10)
        section = CcrSection(catch_up=[CatchUp(task="wait-for-sync", cluster="follower", service_time_ms={100.0: ms})])
        t.summary.sections["ccr"] = section.model_dump(mode="json")
        return t

    cmp = compare(_side("base", [with_catch_up(1, 2000.0)]), [_side("cand", [with_catch_up(2, 3000.0)])])
    row = _row(cmp, "100th percentile CCR catch-up time", "wait-for-sync")
    assert row.higher_is_better is False and row.unit == "ms"
    assert row.baseline == 2000.0 and row.candidates[0].diff == 1000.0


def test_rows_of_a_task_with_errors_never_read_as_a_plain_verdict():
    base = _side("base", [_trial(i, t, 10) for i, t in enumerate([1000, 1010, 990], 1)])
    slow = [_trial(i, t, 20 + i) for i, t in enumerate([500, 505, 498], 7)]
    slow[1].summary.tasks[0] = slow[1].summary.tasks[0].model_copy(update={"failed_requests": 4})
    cmp = compare(base, [_side("slow", slow)])
    tput = _row(cmp, "Mean Throughput")
    assert tput.candidates[0].verdict == "regression" and tput.task_failed == 4
    assert cmp.warnings[0].startswith("slow: complete, with errors") and "task 'index': 4 of 10" in cmp.warnings[0]
    for fmt in ("table", "markdown"):
        line = next(x for x in render_comparison(cmp, fmt).splitlines() if x.lstrip("| ").startswith("Mean Thr"))
        assert "regression** (task had errors: 4 failed)" in line or "regression (task had errors: 4 failed)" in line
    rows = list(csv.DictReader(io.StringIO(render_comparison(cmp, "csv"))))
    assert next(r for r in rows if r["metric"] == "Mean Throughput")["task_failed_requests"] == "4"
    md = render_comparison(cmp, "markdown")
    assert "**regression** (task had errors: 4 failed)" in md
    rec = next(r for r in json.loads(render_comparison(cmp, "json"))["rows"] if r["metric"] == "Mean Throughput")
    assert rec["task_failed_requests"] == 4


def test_report_templates_name_the_errors_of_a_row_only_one_side_has():
    from bench.reporting.context import compare_context
    from bench.reporting.render import render_template

    base = _trial(1, 1000, 10)
    broken = _trial(2, 1000, 10)
    broken.summary.tasks[0] = TaskSummary(task="index", operation_type="bulk", unit="docs", requests=10,
                                          failed_requests=10, error_rate=1.0)
    cmp = compare(_side("base", [base]), [_side("cand", [broken])])
    assert {"metric": "Mean Throughput", "task": "index", "sides": ["base"], "task_failed": 10} in cmp.only_in
    for fmt in ("markdown", "html"):
        text = render_template(dict(compare_context(cmp), plots=[], plotly_js="", png_files=[]), fmt)
        assert "Mean Throughput (index) (task had errors: 10 failed)" in text, fmt
