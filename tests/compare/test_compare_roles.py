"""compare() lines up a one-cluster baseline with the leader of a CCR trial, and says so (pure data; the
real-trial test is test_compare_ccr_real.py)."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime

from bench.compare import compare, render_comparison
from bench.compare.core import Side, TrialData
from bench.compare.roles import RoleMapping, role_mapping
from bench.results.stats import ThroughputStats
from bench.results.summary import Summary, TaskSummary
from bench.telemetry.section import DeviceCount, NodeTelemetry, TelemetrySummary
from bench.trials.sqlite import TrialInfo

CPU = "Median CPU usage (node-stats)"


def _trial(i: int, clusters: list[str], cpu: float, *, store_clusters: bool = True) -> TrialData:
    task = TaskSummary(task="index-append", operation_type="bulk", unit="docs", requests=10,
                       throughput=ThroughputStats(min=900, mean=1000, median=1000, max=1100, unit="docs/s"))
    tel = TelemetrySummary(
        nodes=[NodeTelemetry(cluster=c, node=f"{c}-0", cpu_median=cpu + k) for k, c in enumerate(clusters)],
        devices=[DeviceCount(device="node-stats", cluster=c, samples=5, failed=0) for c in clusters])
    info = TrialInfo(id=f"{i:032x}", track="nginx", challenge="ccr" if len(clusters) > 1 else "baseline",
                     status="complete", start_time=datetime(2024, 1, 1, tzinfo=UTC),
                     clusters=[{"name": c} for c in clusters] if store_clusters else [])
    return TrialData(info=info, summary=Summary(tasks=[task], sections={"telemetry": tel.model_dump(mode="json")}))


def _side(label: str, *trials: TrialData) -> Side:
    return Side(label=label, selector=label, trials=list(trials))


def _row(cmp, metric: str, task: str):
    return next(r for r in cmp.rows if r.metric == metric and r.task == task)


def test_scopes_of_the_default_cluster_become_the_leaders():
    m = RoleMapping(trials=set())
    assert m.scope("default/default-0") == "leader/leader-0"
    assert m.scope("default/default-12") == "leader/leader-12"
    assert m.scope("default/node-a") == "leader/node-a"
    assert m.scope("node-stats@default") == "node-stats@leader"
    assert m.scope("default") == "leader"
    for unchanged in ("follower/follower-0", "driver/worker-0", "defaults/x", "index-append", "host@host"):
        assert m.scope(unchanged) == unchanged


def test_baseline_default_rows_compare_with_the_ccr_leader_rows_and_say_so():
    for stored in (True, False):  # the clusters stored with the trial, or (older trials) its telemetry's
        base, ccr = _trial(1, ["default"], 50.0, store_clusters=stored), _trial(2, ["leader", "follower"], 60.0)
        cmp = compare(_side("baseline", base), [_side("ccr", ccr)])
        row = _row(cmp, CPU, "leader/leader-0")
        assert row.baseline == 50.0 and row.candidates[0].value == 60.0 and row.candidates[0].diff == 10.0
        assert row.mapped_from == {"baseline": "default/default-0"}
        assert row.scope == "leader/leader-0 (baseline: default/default-0)"
        samples = _row(cmp, "Telemetry samples", "node-stats@leader")
        assert samples.mapped_from == {"baseline": "node-stats@default"}
        # Task rows match by name, unmapped; the follower's rows are only in the CCR trial.
        assert _row(cmp, "Mean Throughput", "index-append").mapped_from == {}
        assert {"metric": CPU, "task": "follower/follower-0", "sides": ["ccr"]} in cmp.only_in
        assert not any(o["task"].startswith(("default", "leader")) for o in cmp.only_in if o["metric"] == CPU)
        assert any(w.startswith("Cluster roles: the one cluster 'default' of baseline") for w in cmp.warnings)

    md = render_comparison(cmp, "markdown")
    line = next(x for x in md.splitlines() if x.startswith(f"| {CPU}"))
    assert [c.strip() for c in line.strip("|").split("|")][1] == "leader/leader-0 (baseline: default/default-0)"
    assert "leader/leader-0 (baseline: default/default-0)" in render_comparison(cmp, "table")
    rec = next(r for r in csv.DictReader(io.StringIO(render_comparison(cmp, "csv"))) if r["metric"] == CPU)
    assert rec["task"] == "leader/leader-0 (baseline: default/default-0)"
    assert rec["mapped_from"] == "baseline: default/default-0"
    rec = next(r for r in json.loads(render_comparison(cmp, "json"))["rows"] if r["metric"] == CPU)
    assert rec["task"] == "leader/leader-0 (baseline: default/default-0)"
    assert rec["mapped_from"] == {"baseline": "default/default-0"}


def test_the_ccr_trial_as_baseline_maps_the_candidates_cluster():
    cmp = compare(_side("ccr", _trial(2, ["leader", "follower"], 60.0)), [_side("plain", _trial(1, ["default"], 50.0))])
    row = _row(cmp, CPU, "leader/leader-0")
    assert row.baseline == 60.0 and row.candidates[0].value == 50.0
    assert row.scope == "leader/leader-0 (plain: default/default-0)"


def test_no_mapping_without_a_leader_or_between_two_ccr_trials():
    plain = [_side("a", _trial(1, ["default"], 50.0)), _side("b", _trial(2, ["default"], 55.0))]
    assert role_mapping(plain) is None
    cmp = compare(plain[0], plain[1:])
    assert _row(cmp, CPU, "default/default-0").mapped_from == {}
    assert not any(w.startswith("Cluster roles") for w in cmp.warnings)
    two = [_side("a", _trial(1, ["leader", "follower"], 50.0)), _side("b", _trial(2, ["leader", "follower"], 55.0))]
    assert role_mapping(two) is None
