"""summarize() and Rally-style rows, against hand-computed data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.driver.samples import RequestSample
from bench.http.cluster_stats import cluster_totals
from bench.results.stats import samples_frame
from bench.results.summary import Summary, summarize

RECORDED = Path(__file__).parents[1] / "data" / "recorded"


def s(task, op_type, start, latency, service, *, units=1, unit="ops", success=True, warmup=False, failed=0):
    return RequestSample(task, task, op_type, 0, start, start + latency, latency, service, units, unit, 10,
                         success, None if success else "http 500", warmup, failed)


def trial_samples():
    out = []
    # index-append: 2 warmup bulks, then 20 bulks of 500 docs, 10 per second, latency 10..29 ms.
    out += [s("index-append", "bulk", 1000 + i * 0.1, 0.5, 0.5, units=500, unit="docs", warmup=True)
            for i in range(2)]
    out += [s("index-append", "bulk", 1001 + i * 0.1, (10 + i) / 1000, (5 + i) / 1000, units=500, unit="docs",
              failed=(2 if i == 3 else 0)) for i in range(20)]
    # term query afterwards: 5 requests, one failing.
    out += [s("term", "search", 1010 + i * 0.2, 0.004, 0.002, success=(i != 4)) for i in range(5)]
    return out


def test_summarize_tasks_in_schedule_order_with_warmup_excluded():
    summary = summarize(samples_frame(trial_samples()))
    assert [t.task for t in summary.tasks] == ["index-append", "term"]
    idx = summary.task("index-append")
    assert idx.warmup_requests == 2 and idx.requests == 20
    assert idx.operation_type == "bulk" and idx.unit == "docs"
    assert idx.units == 10000 and idx.failed_units == 2 and idx.failed_requests == 1
    assert idx.error_rate == pytest.approx(1 / 20)
    # 20 samples -> p50, p90, p100 (Rally's rule); latencies 10..29 ms, linear interpolation.
    assert sorted(idx.latency) == [50.0, 90.0, 100.0]
    assert idx.latency[50.0] == pytest.approx(19.5)
    assert idx.latency[90.0] == pytest.approx(10 + 0.9 * 19)
    assert idx.latency[100.0] == pytest.approx(29.0)
    assert idx.service_time[100.0] == pytest.approx(24.0)
    # Measured from 1001.0 to the last completion 1002.9 + 0.029 = 1002.929.
    assert idx.duration_s == pytest.approx(1.929)
    # Throughput counts successful work only: the 2 documents that failed in bulk #3 are not in it. The measured
    # part's rate is over the one whole measured second (10 bulks of 500 at 10 per second), as the buckets.
    assert idx.throughput.rate == pytest.approx(4998 / 1)
    assert idx.throughput.unit == "docs/s"
    # Only one complete measured second (10 bulks in [1001, 1002), one with 2 failed documents); min/max are
    # Rally's running mean since the task's first request at its end: the 1,000 warmup documents and 4,998
    # measured ones over the 2 s since 1000.0.
    assert idx.throughput.min == idx.throughput.max == pytest.approx((1000 + 4998) / 2)
    assert idx.throughput.mean == pytest.approx((1000 + 4998) / 2)  # Rally's mean: of those running means

    term = summary.task("term")
    assert term.requests == 5 and term.failed_requests == 1 and term.error_rate == pytest.approx(0.2)
    assert sorted(term.latency) == [50.0, 100.0]
    assert any("term" in n and "20.00%" in n for n in summary.notes)


def test_rows_use_rally_names_and_units_with_cluster_rows_first():
    stats = json.loads((RECORDED / "es-8.19.21-stats-after-indexing.json").read_text())
    summary = summarize(samples_frame(trial_samples()), cluster_totals(stats))
    rows = summary.rows()
    metrics = [(r.metric, r.task) for r in rows]
    assert metrics[0] == ("Cumulative indexing time of primary shards", "")
    first_task_row = next(i for i, r in enumerate(rows) if r.task)
    assert all(not r.task for r in rows[:first_task_row])
    by_name = {(r.metric, r.task): r for r in rows}
    assert by_name[("Cumulative indexing time of primary shards", "")].value == pytest.approx(2823 / 60000)
    assert by_name[("Cumulative indexing time of primary shards", "")].unit == "min"
    assert by_name[("Cumulative refresh count of primary shards", "")].value == 26
    assert by_name[("Store size", "")].unit == "GB"
    assert by_name[("Store size", "")].value == pytest.approx(468660 / 1024 ** 3)
    assert by_name[("Segment count", "")].value == 2
    assert by_name[("Doc count (not refreshed)", "")].value == 20000  # no refreshed count in these totals
    for m in ("Min Throughput", "Mean Throughput", "Median Throughput", "Max Throughput"):
        assert by_name[(m, "index-append")].unit == "docs/s"
    assert by_name[("Mean Throughput", "term")].unit == "ops/s"
    assert [m for m, t in metrics if t == "index-append" and "latency" in m] == [
        "50th percentile latency", "90th percentile latency", "100th percentile latency"]
    assert ("50th percentile service time", "term") in by_name
    assert by_name[("error rate", "term")].value == pytest.approx(20.0)
    assert by_name[("error rate", "term")].unit == "%"


def test_percentile_names_for_large_samples():
    samples = [s("q", "search", 1000 + i * 0.001, 0.001, 0.001) for i in range(10000)]
    names = [r.metric for r in summarize(samples_frame(samples)).rows() if "latency" in r.metric]
    assert names == ["50th percentile latency", "90th percentile latency", "99th percentile latency",
                     "99.9th percentile latency", "99.99th percentile latency", "100th percentile latency"]


def test_warmup_only_task_is_noted_and_has_no_stats():
    summary = summarize(samples_frame([s("w", "search", 1.0, 0.1, 0.1, warmup=True)]))
    t = summary.tasks[0]
    assert t.requests == 0 and t.warmup_requests == 1 and t.throughput is None and t.latency == {}
    assert summary.rows() == []
    assert "only warmup" in summary.notes[0]


def test_summary_round_trips_through_json():
    summary = summarize(samples_frame(trial_samples()))
    again = Summary.model_validate_json(summary.model_dump_json())
    assert again == summary
    assert summarize(samples_frame([])) == Summary()


def test_error_note_names_error_types_and_whose_side_they_came_from():
    rejected = [s("q", "search", 1.0 + i, 0.01, 0.01, success=False)._replace(error_type="http-429", status=429)
                for i in range(3)]
    ok = [s("q", "search", 10.0 + i, 0.01, 0.01)._replace(status=200) for i in range(7)]
    note = summarize(samples_frame(rejected + ok)).notes[0]
    assert "3 of 10 requests failed" in note and ": 3 http-429;" in note and "the cluster answered every one" in note
    assert "HTTP 429 means the cluster rejected requests" in note
    lost = [s("q", "search", 20.0, 0.01, 0.01, success=False)._replace(error_type="connection")]
    t = summarize(samples_frame(rejected + ok + lost)).tasks[0]
    assert t.errors_by_type == {"connection": 1, "http-429": 3} and t.unanswered_requests == 1
    assert "1 got no HTTP answer" in summarize(samples_frame(rejected + ok + lost)).notes[0]


def test_gc_and_translog_rows_follow_rally():
    from bench.http.cluster_stats import ClusterTotals, GcTotals, ShardTotals

    totals = ClusterTotals(total=ShardTotals(translog_size_bytes=1024 ** 3 // 2),
                           gc=GcTotals(young_count=12, young_time_ms=1500, old_count=0, old_time_ms=0))
    rows = [(r.metric, r.value, r.unit) for r in Summary(cluster=totals).rows()]
    names = [m for m, _, _ in rows]
    assert ("Total Young Gen GC time", 1.5, "s") in rows and ("Total Young Gen GC count", 12, "") in rows
    assert ("Total Old Gen GC count", 0, "") in rows and ("Translog size", 0.5, "GB") in rows
    assert names.index("Cumulative flush count of primary shards") < names.index("Total Young Gen GC time") \
        < names.index("Store size") < names.index("Translog size") < names.index("Segment count")
    # Not read (e.g. trials stored by an older bench): no row, rather than a made-up zero.
    old = [r.metric for r in Summary(cluster=ClusterTotals()).rows()]
    assert "Total Young Gen GC time" not in old and "Translog size" not in old


def test_spread_across_primary_shards_follows_each_cumulative_time():
    from bench.http.cluster_stats import ClusterTotals, Spread

    totals = ClusterTotals(per_shard={"merge_time_ms": Spread(min=60000, median=120000, max=180000)})
    names = [r.metric for r in Summary(cluster=totals).rows()]
    i = names.index("Cumulative merge time of primary shards")
    assert names[i + 1:i + 5] == ["Cumulative merge count of primary shards",
                                  "Min cumulative merge time across primary shards",
                                  "Median cumulative merge time across primary shards",
                                  "Max cumulative merge time across primary shards"]
    values = {r.metric: r.value for r in Summary(cluster=totals).rows()}
    assert values["Median cumulative merge time across primary shards"] == 2.0  # minutes, as Rally shows them
    assert not any("across primary shards" in n for n in [r.metric for r in Summary(cluster=ClusterTotals()).rows()])


def failing(task, start, message, *, warmup=False):
    return s(task, "search", start, 0.003, 0.002, success=False, warmup=warmup)._replace(
        error_type="http-404", status=404, error=message)


def test_task_whose_requests_all_failed_shows_errors_not_timings():
    missing = "HTTP 404: index_not_found_exception: no such index [nope]"
    samples = [failing("q", 1.0 + i * 0.1, missing) for i in range(30)]
    samples += [failing("q", 4.0, "request timed out")._replace(error_type="timeout", status=0)]
    samples += [s("ok", "search", 5.0 + i * 0.1, 0.01, 0.01) for i in range(20)]
    summary = summarize(samples_frame(samples))
    q = summary.task("q")
    assert q.throughput is None and q.latency == {} and q.service_time == {} and q.k6 == {}
    assert q.failed_requests == 31 and q.error_rate == 1.0
    assert [(e.message, e.count) for e in q.error_messages] == [(missing, 30), ("request timed out", 1)]
    metrics = {r.metric for r in summary.rows() if r.task == "q"}
    assert metrics == {"error rate", "failed requests"}
    assert summary.task("ok").throughput is not None  # the healthy task keeps its numbers
    note = next(n for n in summary.notes if "'q'" in n)
    assert "Every request of task 'q' failed" in note and f"30× {missing}" in note and "1× request timed out" in note
    assert summary.failed_requests == 31


def test_throughput_counts_successful_requests_only():
    # 10 requests per second for 2 s; every other one fails: 5 ops/s of successful work, not 10.
    samples = [s("q", "search", 1.0 + i * 0.1, 0.01, 0.01, success=(i % 2 == 0)) for i in range(20)]
    q = summarize(samples_frame(samples)).task("q")
    assert q.throughput is not None and q.throughput.median == pytest.approx(5.0)
    assert q.latency  # the task did work: its timings stay (failed requests included, as in Rally)


def test_status_label_says_complete_with_errors():
    from bench.results.summary import status_label

    clean = summarize(samples_frame([s("q", "search", 1.0, 0.01, 0.01)]))
    dirty = summarize(samples_frame([s("q", "search", 1.0, 0.01, 0.01),
                                     failing("q", 2.0, "boom", warmup=True)]))
    assert status_label("complete", clean) == "complete"
    assert status_label("complete", dirty) == "complete, with errors (1 failed request)"
    assert status_label("failed", dirty) == "failed" and status_label("complete", None) == "complete"
    assert any("warmup request(s) of task 'q' failed: 1× boom" in n for n in dirty.notes)


def test_throughput_plot_leaves_out_a_trial_whose_task_failed_every_request():
    import pandas as pd

    from bench.reporting.plots import PlotTrial, throughput_plots

    good = [s("q", "search", 1.0 + i * 0.1, 0.01, 0.01) for i in range(30)]
    bad = [failing("q", 1.0 + i * 0.1, "boom") for i in range(30)]
    trials = [PlotTrial(side=name, side_index=i, trial_id=f"{i:032x}", samples=samples_frame(rows),
                        telemetry=pd.DataFrame(), summary=summarize(samples_frame(rows)))
              for i, (name, rows) in enumerate((("base", good), ("cand", bad)))]
    [plot] = throughput_plots(trials)
    assert [trace.name for trace in plot.figure.data] == [trials[0].name]  # no line of zeros for "cand"


def test_a_small_error_rate_is_never_printed_as_zero():
    from bench.driver.samples import RequestSample
    from bench.results.report import render_summary
    from bench.results.stats import samples_frame
    from bench.util.numbers import percent

    assert (percent(10 / 73786 * 100), percent(0.0), percent(20.0, 2), percent(100.0)) == ("0.0136", "0", "20.00",
                                                                                          "100")
    samples = [RequestSample("q", "q", "search", 0, 1000.0 + i * 0.001, 0.001 * (i + 1), 0.001, 0.001, 1, "ops", 0,
                             i % 7375 != 0, None if i % 7375 else "connection", False) for i in range(73750)]
    summary = summarize(samples_frame(samples))
    assert summary.tasks[0].failed_requests == 10
    assert any("Error rate is 0.0136% for task 'q' (10 of 73,750 requests failed" in n for n in summary.notes), \
        summary.notes
    text = render_summary(summary)
    assert "0.0136%" in text and " 0%" not in text, text
