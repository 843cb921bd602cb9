"""The headline (the short summary shown first), report numbers, and tables fitted to the terminal."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from bench.http.cluster_stats import ClusterTotals, ShardTotals
from bench.results.fit_table import fit
from bench.results.headline import race_headline
from bench.results.report import render_summary, shown_rows
from bench.results.stats import ThroughputStats
from bench.results.summary import Summary, TaskSummary
from bench.telemetry.section import NodeTelemetry, TelemetrySummary
from bench.util.numbers import compact, plain, rescale


def _summary() -> Summary:
    bulk = TaskSummary(task="index-append", operation_type="bulk", unit="docs", requests=600,
                       throughput=ThroughputStats(min=39081.2, mean=41000.0, median=40712.9, max=45703.4,
                                                  unit="docs/s"),
                       latency={50.0: 812.3, 90.0: 1500.0, 99.0: 2345.6, 100.0: 3000.0},
                       service_time={50.0: 800.1, 90.0: 1400.0, 99.0: 2300.0, 100.0: 2900.0})
    once = TaskSummary(task="create-index", operation_type="create-index", unit="ops", requests=1,
                       throughput=ThroughputStats(min=2.0, mean=2.0, median=2.0, max=2.0, unit="ops/s"),
                       latency={100.0: 500.0}, service_time={100.0: 500.0})
    failed = TaskSummary(task="term", operation_type="search", unit="ops", requests=20, failed_requests=20,
                         error_rate=1.0)
    tel = TelemetrySummary(nodes=[NodeTelemetry(cluster="default", node="default-0", cpu_median=87.34,
                                                process_write_bytes=5 * 1024 ** 3, gc_young_count=12)])
    cluster = ClusterTotals(primaries=ShardTotals(index_time_ms=60000, docs_count=1000),
                            total=ShardTotals(store_size_bytes=134))
    return Summary(tasks=[once, bulk, failed], cluster=cluster).with_section("telemetry", tel.model_dump(mode="json"))


def test_headline_has_the_working_tasks_and_the_rows_extensions_mark():
    h = race_headline(_summary())
    assert [t.task for t in h.tasks] == ["index-append", "term"]  # create-index ran once: full table only
    bulk = h.tasks[0]
    assert bulk.throughput == (39081.2, 40712.9, 45703.4)
    assert bulk.latency == (812.3, 2345.6) and bulk.service_time == (800.1, 2300.0) and bulk.high_label == "p99"
    assert h.tasks[1].throughput is None and h.tasks[1].failed_requests == 20
    # Telemetry marks CPU and disk writes, not GC counts.
    assert [(r.metric, r.task) for _, r in h.other] == [("Median CPU usage (node-stats)", "default/default-0"),
                                                        ("Disk write (node processes)", "default/default-0")]


@pytest.mark.parametrize("width", [80, 120])
def test_terminal_headline_fits_and_shows_whole_numbers(width):
    text = render_summary(_summary(), "table", full=False, width=width)
    lines = text.splitlines()
    assert lines[0] == "Headline"
    assert max(len(line) for line in lines) <= width, text
    assert "39,081 / 40,713 / 45,703" in text
    assert "812 / 2,346" in text and "none: all failed" in text and "100% (20)" in text
    assert "87.3 %" in text and "5.00 GB" in text  # 5,120 MB read as GB
    assert "…" not in text
    assert text.rstrip().endswith("add --all to see them)")
    assert "Cumulative indexing time" not in text  # the full table only with --all


def test_full_table_rescales_sizes_and_drops_per_shard_rows_that_repeat_the_total():
    s = _summary()
    rows = {(r.metric, r.task): (r.value, r.unit) for r in shown_rows(s)}
    assert len(shown_rows(s, collapse=False)) == len(s.rows())  # markdown keeps them
    assert rows[("Store size", "")] == (134.0, "B")  # not 1.25e-07 GB
    assert ("Cumulative indexing time of primary shards", "") in rows
    # One shard: Rally's min/median/max across primary shards are the total again.
    assert not any(m.startswith(("Min cumulative", "Median cumulative", "Max cumulative")) for m, _ in rows)
    text = render_summary(s, "table")
    assert "e-0" not in text and "134.00" in text
    # csv and json keep every row, raw.
    assert len(render_summary(s, "csv").splitlines()) == len(s.rows()) + 1 + 0


def test_numbers_never_in_scientific_notation():
    assert plain(2.8e-05) == "0.0000280"
    assert plain(0.001234) == "0.00123"
    assert plain(12345.678) == "12,345.68"
    assert compact(42512.3) == "42,512" and compact(87.34) == "87.3" and compact(2.4123) == "2.41"
    assert rescale(0.000128, "MB") == pytest.approx((134.217728, "B"))
    assert rescale(2048.0, "MB/s") == (2.0, "GB/s")
    assert rescale(12.0, "%") == (12.0, "%")


def test_fitted_table_wraps_text_drops_low_priority_columns_and_never_cuts_numbers():
    headers = ["Metric", "Task", "Baseline", "Candidate", "Δ %", "Unit", "CI"]
    rows = [["99th percentile service time of a long metric name", "index-append", "1,234,567.89", "1,300,000.00",
             "+5.30%", "ms", "+1.20% … +9.40%"]]
    numeric = [False, False, True, True, True, False, True]
    for width, dropped in ((200, []), (80, ["CI"]), (60, ["CI", "Unit"])):
        table, gone, need = fit(headers, rows, numeric, width, drop_order=["CI", "Unit"])
        console = Console(file=io.StringIO(), width=max(width, need), record=True, color_system=None)
        console.print(table)
        text = console.export_text()
        assert gone == dropped, (width, text)
        assert max(len(line.rstrip()) for line in text.splitlines()) <= width, text
        for number in ("1,234,567.89", "1,300,000.00", "+5.30%"):
            assert number in text, (width, text)
        assert "…" not in text.replace("+1.20% … +9.40%", "")


def _trial(i: int, tput: float, cpu: float, p99: float):
    from datetime import UTC, datetime

    from bench.compare.core import TrialData
    from bench.trials.model import TrialInfo

    bulk = TaskSummary(task="index-append", operation_type="bulk", unit="docs", requests=600,
                       throughput=ThroughputStats(min=tput * 0.9, mean=tput, median=tput, max=tput * 1.1,
                                                  unit="docs/s", rule="running-mean"),
                       latency={50.0: 800.0 + i, 99.0: p99}, service_time={50.0: 790.0 + i, 99.0: p99 - 10},
                       error_rate=0.0)
    create = TaskSummary(task="create-index", operation_type="create-index", unit="ops", requests=1,
                         throughput=ThroughputStats(min=2.0, mean=2.0, median=2.0, max=2.0, unit="ops/s",
                                                    rule="running-mean"))
    tel = TelemetrySummary(nodes=[NodeTelemetry(cluster="leader", node="leader-0", cpu_median=cpu, gc_old_count=i,
                                                process_write_bytes=(3 + i) * 1024 ** 3)])
    summary = Summary(tasks=[create, bulk]).with_section("telemetry", tel.model_dump(mode="json"))
    info = TrialInfo(id=f"{i + 1}{i:031x}", track="nginx", challenge="index-only", status="complete",
                     start_time=datetime(2026, 11, 23, tzinfo=UTC))
    return TrialData(info=info, summary=summary)


def _comparison():
    from bench.compare import compare
    from bench.compare.core import Side

    base = Side(label="baseline", selector="tag:variant=baseline",
                trials=[_trial(i, t, 60.0 + i, 2000.0 + 5 * i) for i, t in enumerate([42000.0, 42400.0, 41800.0])])
    cand = Side(label="ccr", selector="tag:variant=ccr",
                trials=[_trial(3 + i, t, 70.0 + i, 2600.0 + 5 * i) for i, t in enumerate([40200.0, 40100.0, 40500.0])])
    return compare(base, [cand])


@pytest.mark.parametrize("width", [80, 120])
def test_compare_of_two_groups_fits_the_terminal_and_starts_with_the_headline(width):
    from bench.compare import comparison_renderable

    cmp = _comparison()
    console = Console(file=io.StringIO(), width=width, record=True, color_system=None)
    console.print(comparison_renderable(cmp, width=width, full=False))
    text = console.export_text()
    lines = text.splitlines()
    assert lines[0] == "Headline: ccr (3 trials) vs baseline baseline (3 trials)"
    assert max(len(line.rstrip()) for line in lines) <= width, text
    assert not re.search(r"\d…|…\d", text)  # no number cut short (" … " is only between CI bounds)
    # The key rows, whole: the baseline's mean median throughput and the candidate's.
    assert "42,066.67" in text and "40,266.67" in text and "-4.28%" in text
    assert "p99 latency" in text and "throughput" in text
    assert "create-index" not in text  # ran once: not a headline task
    assert "Median Old GC count" not in text and "Old GC count" not in text  # full table only
    sentence = " ".join(text.split("ccr vs baseline:", 1)[1].split("\n\n")[0].split())
    assert sentence.startswith("median throughput of index-append −4.3 % (95 % CI −5.8 … −2.8 %, significant, "
                               "worse); p99 latency of index-append +29.9 % (worse);"), sentence
    assert "min throughput" not in sentence and "p50 latency" not in sentence
    assert "rows in the full comparison: add --all to see them" in text
    full = Console(file=io.StringIO(), width=width, record=True, color_system=None)
    full.print(comparison_renderable(cmp, width=width, full=True))
    full_text = full.export_text()
    assert max(len(line.rstrip()) for line in full_text.splitlines()) <= width, full_text
    assert "Old GC count" in full_text


def test_piped_compare_prints_the_headline_and_the_full_table_only_with_all():
    from bench.compare import render_comparison

    cmp = _comparison()
    short, full = render_comparison(cmp, "table", full=False), render_comparison(cmp, "table")
    assert short.startswith("Headline: ccr (3 trials)") and "add --all to see them" in short
    assert "Old GC count" not in short and "Old GC count" in full
    # A row that is zero on every side (no transport traffic on one node) is not a headline row.
    assert "Network" not in short
