"""Report rendering in all formats."""

from __future__ import annotations

import csv
import io
import json

import pytest

from bench.http.cluster_stats import ClusterTotals, ShardTotals
from bench.results.report import format_value, render_summary, write_report
from bench.results.stats import ThroughputStats
from bench.results.summary import Summary, TaskSummary
from bench.util.errors import BenchError, ConfigError
from bench.util.redact import register_secret


def make_summary(notes=()) -> Summary:
    task = TaskSummary(task="index-append", operation_type="bulk", unit="docs",
                       throughput=ThroughputStats(min=41234.5, mean=45678.123, median=45000.0, max=50123.0,
                                                  unit="docs/s"),
                       latency={50.0: 12.3456, 100.0: 1234.5}, service_time={50.0: 10.0, 100.0: 900.0},
                       error_rate=0.0125, requests=800, failed_requests=10, units=400000, failed_units=12,
                       duration_s=8.76)
    cluster = ClusterTotals(primaries=ShardTotals(index_time_ms=90000, segment_count=1234, docs_count=400000),
                            total=ShardTotals(store_size_bytes=3 * 1024 ** 3))
    return Summary(tasks=[task], cluster=cluster, notes=list(notes))


def test_format_value():
    assert format_value(1234567) == "1,234,567"
    assert format_value(45678.123) == "45,678.12"
    assert format_value(0.0) == "0.00"
    assert format_value(0.000436) == "0.000436"
    assert format_value(12.3456) == "12.35"


def test_table_has_rally_columns_and_readable_values():
    text = render_summary(make_summary(), "table")
    lines = text.splitlines()
    # The headline first: one line per task with min/median/max throughput, p50/p100 latency and service time.
    assert lines[0] == "Headline"
    task_line = next(line for line in lines if line.startswith("index-append"))
    assert task_line.split() == ["index-append", "41,234", "/", "45,000", "/", "50,123", "12.3", "/", "1,234",
                                 "10.0", "/", "900", "1.25%", "(10)"]
    start = next(i for i, line in enumerate(lines) if line.split() == ["Metric", "Task", "Value", "Unit"])
    lines = lines[start:]
    assert set(lines[1].replace(" ", "")) == {"-"}
    row = next(line for line in lines if line.startswith("Mean Throughput"))
    assert row.split()[-3:] == ["index-append", "45,678.12", "docs/s"]
    assert any(line.startswith("Cumulative indexing time of primary shards") and line.split()[-2:] == ["1.50", "min"]
               for line in lines)
    assert any(line.startswith("Store size") and line.split()[-2:] == ["3.00", "GB"] for line in lines)
    assert any(line.startswith("error rate") and line.split()[-2:] == ["1.25", "%"] for line in lines)
    assert any(line.startswith("Segment count") and line.split()[-1] == "1,234" for line in lines)
    # Cluster rows come before task rows.
    assert text.index("Store size") < text.index("Min Throughput")


def test_markdown_is_a_github_pipe_table_with_notes():
    text = render_summary(make_summary(notes=["Error rate is 1.25% for task 'index-append'"]), "markdown")
    assert text.startswith("## Headline\n\n| Task ")
    lines = text.split("## All metrics\n\n", 1)[1].splitlines()
    assert lines[0].startswith("| Metric") and lines[0].rstrip().endswith("|")
    assert lines[1].startswith("|--")
    body = [line for line in lines[2:] if line.startswith("|")]
    assert all(line.count("|") == 5 for line in body)
    assert len(body) == len(make_summary().rows())
    assert "Error rate is 1.25%" in text.split("## All metrics", 1)[1]


def test_csv_and_json_carry_raw_values():
    s = make_summary(notes=["a note"])
    rows = list(csv.reader(io.StringIO(render_summary(s, "csv"))))
    assert rows[0] == ["Metric", "Task", "Value", "Unit", "Partial"]  # Partial: why a value is incomplete
    mean = next(r for r in rows if r[0] == "Mean Throughput")
    assert mean[1:] == ["index-append", "45678.123", "docs/s", ""]
    assert len(rows) == len(s.rows()) + 1
    data = json.loads(render_summary(s, "json"))
    assert data["notes"] == ["a note"]
    assert {"metric": "50th percentile latency", "task": "index-append", "value": 12.3456, "unit": "ms"} \
        in data["rows"]
    assert len(data["rows"]) == len(s.rows())


def test_unknown_format_is_config_error():
    with pytest.raises(ConfigError, match="unknown report format 'xml'"):
        render_summary(make_summary(), "xml")  # type: ignore[arg-type]


def test_secrets_in_notes_are_redacted():
    register_secret("hunter2-report-secret")
    text = render_summary(make_summary(notes=["login failed with hunter2-report-secret"]), "table")
    assert "hunter2-report-secret" not in text and "*****" in text


def test_write_report(tmp_path):
    p = write_report("hello\n", tmp_path / "a" / "b" / "report.md")
    assert p.read_text() == "hello\n"
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(BenchError, match="cannot write report to") as e:
        write_report("x", blocker / "report.md")
    assert "\n" not in str(e.value)
