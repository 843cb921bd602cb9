"""The seams results are extended through: summary sections, summary enrichers, compare metric kinds, and the
store protocol -- exercised in-process with a section no bench extension knows, and with the real SQLite store."""

from __future__ import annotations

import inspect
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from bench import extensions
from bench.ccr.section import CatchUp, CcrSection, FollowerSection
from bench.compare import compare, render_comparison
from bench.compare import metrics as compare_metrics
from bench.compare.core import Side, TrialData
from bench.compare.metrics import register_metric
from bench.driver.samples import TelemetryRow
from bench.reporting.context import compare_context, trial_context
from bench.results.report import render_summary
from bench.results.stats import ThroughputStats
from bench.results.summary import MetricRow, Summary, TaskSummary, register_section
from bench.telemetry.section import DeviceCount, FollowerLag, NodeTelemetry, TelemetrySummary
from bench.trials import summary as trial_summary
from bench.trials.model import TrialInfo, TrialReader, Trials
from bench.trials.sqlite import TrialStore

T0 = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def power_section(monkeypatch):
    """A third-party "power" section registered through the seams for one test only."""
    import bench.results.sections as sections_mod

    extensions.load()  # bench's own first, so the copies restored afterwards hold them
    monkeypatch.setattr(sections_mod, "_SECTIONS", dict(sections_mod._SECTIONS))
    monkeypatch.setattr(compare_metrics, "_METRICS", list(compare_metrics._METRICS))
    monkeypatch.setattr(trial_summary, "_ENRICHERS", dict(trial_summary._ENRICHERS))

    def rows(data: dict[str, Any]) -> list[MetricRow]:
        return [MetricRow(metric="Mean power draw", task=node, value=watts, unit="W")
                for node, watts in data["watts"].items()]

    register_section("power", rows=rows, hides=lambda m: m == "Mean Throughput", title="Power", order=50)
    register_metric(r"power draw", higher_is_better=False, unit="watt")


def _task(tput: float) -> TaskSummary:
    return TaskSummary(task="index", operation_type="bulk", unit="docs", requests=10, latency={50.0: 10.0},
                       throughput=ThroughputStats(min=tput, mean=tput, median=tput, max=tput, unit="docs/s"))


def _info(i: int) -> TrialInfo:
    return TrialInfo(id=f"{i:032x}", track="nginx", challenge="index-only", status="complete", start_time=T0)


def test_a_registered_section_is_in_rows_report_and_compare(power_section):
    summary = Summary(tasks=[_task(1000.0)]).with_section("power", {"watts": {"node-0": 210.0}}, ["power note"])
    rows = [(r.metric, r.task, r.value, r.unit) for r in summary.rows()]
    # its row comes after the task's, and the row it hides is gone
    assert rows[-1] == ("Mean power draw", "node-0", 210.0, "W")
    assert ("Mean Throughput", "index", 1000.0, "docs/s") not in rows and rows[0][0] == "Min Throughput"
    assert summary.notes == ["power note"]
    md = render_summary(summary, "markdown")
    assert "| Mean power draw" in md and "| node-0" in md and "Mean Throughput" not in md

    ctx = trial_context(_info(1), summary)
    power = next(s for s in ctx["sections"] if s["name"] == "Power")
    assert power["rows"] == [["Mean power draw", "node-0", "210.00", "W"]]

    def trial(i: int, watts: float) -> TrialData:
        return TrialData(info=_info(i), summary=Summary(tasks=[_task(1000.0)]).with_section(
            "power", {"watts": {"node-0": watts}}))

    cmp = compare(Side(label="base", selector="b", trials=[trial(1, 200.0)]),
                  [Side(label="cand", selector="c", trials=[trial(2, 260.0)])])
    row = next(r for r in cmp.rows if r.metric == "Mean power draw")
    assert row.higher_is_better is False and row.unit == "watt" and row.candidates[0].diff == 60.0
    assert "| Mean power draw" in render_comparison(cmp, "markdown")
    assert [s["name"] for s in compare_context(cmp)["sections"]] == ["Task index", "Power"]


def test_a_section_nothing_renders_is_kept_but_not_shown():
    summary = Summary.model_validate({"tasks": [], "nosuch": {"x": 1}})
    assert summary.rows() == [] and summary.section("nosuch") == {"x": 1}
    assert json.loads(summary.model_dump_json())["sections"] == {"nosuch": {"x": 1}}


def _telemetry() -> dict[str, Any]:
    return TelemetrySummary(
        devices=[DeviceCount(device="node-stats", cluster="follower", samples=12, failed=1)],
        nodes=[NodeTelemetry(cluster="follower", node="n0", cpu_median=41.0, peak_heap_bytes=512 * 1024 ** 2)],
        followers=[FollowerLag(cluster="follower", index="logs", lag_ops_median=10.0, lag_ops_max=40.0)],
    ).model_dump(mode="json")


def _ccr() -> dict[str, Any]:
    return CcrSection(
        followers=[FollowerSection(cluster="follower", index="logs", leader_cluster="leader", leader_index="logs",
                                   lag_ops_median=10.0, lag_ops_max=40.0, leader_docs=1000, follower_docs=1000)],
        catch_up=[CatchUp(task="sync", service_time_ms={100.0: 250.0}, requests=1)],
    ).model_dump(mode="json")


OLD_ROWS = [  # what bench showed for these fields before sections were generic (its output, pasted)
    ("Min Throughput", "index"), ("Mean Throughput", "index"), ("Median Throughput", "index"),
    ("Max Throughput", "index"), ("50th percentile latency", "index"), ("error rate", "index"),
    ("Median CPU usage (node-stats)", "follower/n0"), ("Peak heap used", "follower/n0"),
    ("Telemetry samples", "node-stats@follower"), ("Telemetry failed samples", "node-stats@follower"),
    ("Median CCR lag", "follower/logs"), ("Max CCR lag", "follower/logs"),
    ("CCR leader docs", "leader/logs"), ("CCR follower docs", "follower/logs"),
    ("CCR doc counts match", "follower/logs"), ("100th percentile CCR catch-up time", "sync"),
]


def test_a_summary_stored_in_the_old_shape_loads_and_renders_the_same_rows(tmp_path):
    old = {"tasks": [_task(1000.0).model_dump(mode="json")], "cluster": None, "telemetry": _telemetry(),
           "notes": ["a note"], "ccr": _ccr()}
    with TrialStore(tmp_path / "bench.db") as store:
        store.create_trial(_info(1))
        # written as bench stored summaries before sections were generic
        store.conn.execute("INSERT INTO summaries (trial_id, summary) VALUES (?, ?)", (_info(1).id, json.dumps(old)))
        store.conn.commit()
        loaded = store.summary(_info(1).id)
    assert loaded is not None and set(loaded.sections) == {"telemetry", "ccr"} and loaded.notes == ["a note"]
    assert [(r.metric, r.task) for r in loaded.rows()] == OLD_ROWS
    new = Summary(tasks=[_task(1000.0)], notes=["a note"], sections={"telemetry": _telemetry(), "ccr": _ccr()})
    assert loaded.rows() == new.rows() and loaded == new
    ctx = trial_context(_info(1), loaded)
    assert [s["name"] for s in ctx["sections"]] == ["Task index", "Telemetry", "CCR"]
    # the old empty fields are no sections; code of that time reading a section as an attribute still works
    bare = Summary.model_validate({"tasks": [], "telemetry": {}, "ccr": {}, "notes": []})
    assert bare.sections == {} and bare.rows() == [] and bare.ccr == {} and loaded.ccr == _ccr()
    # ... and so does copying with a section as a top-level key (the CCR finish step did that)
    copied = bare.model_copy(update={"ccr": _ccr(), "notes": ["n"]})
    assert copied.section("ccr") == _ccr() and copied.notes == ["n"]


def test_the_sqlite_store_is_the_protocols_and_enriches_through_the_seam(tmp_path):
    with TrialStore(tmp_path / "bench.db") as store:
        assert isinstance(store, Trials) and isinstance(store, TrialReader)
        for name, proto in inspect.getmembers(Trials, inspect.isfunction):
            if not name.startswith("_"):
                assert inspect.signature(getattr(TrialStore, name)) == inspect.signature(proto), name
        trials: Trials = store
        trials.create_trial(_info(7))
        trials.add_telemetry(_info(7).id, [
            TelemetryRow(T0.timestamp() + i, "default", "n0", "node-stats", "process.cpu.percent", v)
            for i, v in enumerate([10.0, 30.0, 20.0])])
        # no samples and no stored summary: the telemetry enricher still gives the trial a summary
        summary = trial_summary.stored_summary(trials, _info(7).id)
    assert summary is not None and summary.tasks == []
    cpu = {r.metric: r.value for r in summary.rows() if r.task == "default/n0"}
    assert cpu == {"Median CPU usage (node-stats)": 20.0, "Max CPU usage (node-stats)": 30.0}
    assert not isinstance(object(), TrialReader)


def test_enrichers_only_fill_missing_sections_when_asked(tmp_path, power_section):
    calls: list[str] = []

    def enrich(summary: Summary | None, trials: TrialReader, trial_id: str) -> Summary | None:
        calls.append(trial_id)
        return (summary or Summary()).with_section("power", {"watts": {"n0": float(len(trials.samples(trial_id)))}})

    trial_summary.register_enricher("power", enrich)
    with TrialStore(tmp_path / "bench.db") as store:
        store.create_trial(_info(3))
        have = Summary().with_section("power", {"watts": {"n0": 99.0}})
        assert trial_summary.enrich(have, store, _info(3).id, missing_only=True) == have and calls == []
        fresh = trial_summary.enrich(have, store, _info(3).id)
    assert calls == [_info(3).id] and fresh is not None and fresh.section("power") == {"watts": {"n0": 0.0}}
