"""What a trial stores of where it ran and what the study says about it (pure): CPU lists and pinning plans,
options that applied, the placement line from stored facts and host telemetry, the study's design instead of
warnings, folded warnings, yes/no booleans, each node's heap and processors."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from bench.cloud.source import cpu_plan
from bench.cloud.topology import parse_topology
from bench.compare import compare
from bench.compare.core import Side, TrialData
from bench.http.cluster_runtime import runtime_facts
from bench.provision.cpus import cpu_list_text, parse_cpu_list
from bench.provision.pinning import auto_plan, auto_slots
from bench.race.experiment import load_experiment
from bench.race.flags import applying_options, public_options
from bench.race.options import RaceOptions
from bench.reporting.design import design_line, planned_aspects
from bench.reporting.placement import PlacedTrial, placement_line, task_window, where_text, window_load
from bench.results.report import render_summary
from bench.results.stats import ThroughputStats
from bench.results.summary import MetricRow, Summary, TaskSummary
from bench.trials.model import TrialInfo
from bench.util.errors import ConfigError
from tests.support.checkout import ROOT

HOST = {"machine_id": "m1", "hostname": "vm-1", "cpu_count": 2, "memory_bytes": 24 * 2**30}
MACHINE = {**HOST, "cpu_model": "EPYC"}


def _cluster(name: str, car: str = "defaults+512mheap", **extra: Any) -> dict[str, Any]:
    return {"name": name, "engine": "opensearch", "version": "2.19.1", "nodes": 1, "hosts": [], "car": car,
            "host": HOST, "heap_max_bytes": 512 * 2**20, **extra}


def _info(i: int, challenge: str, clusters: list[dict[str, Any]], **extra: Any) -> TrialInfo:
    return TrialInfo(**{"id": f"{i:08x}" + "a" * 24, "track": "http_logs", "challenge": challenge,
                        "status": "complete", "start_time": datetime(2026, 11, 26, tzinfo=UTC),
                        "car": ["defaults", "512mheap"], "clusters": clusters, "machine": MACHINE, **extra})


def test_cpu_lists_parse_and_print_as_the_kernel_writes_them():
    assert parse_cpu_list("0-1,4") == {0, 1, 4} and parse_cpu_list("3") == {3}
    assert cpu_list_text({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"
    for bad in ("", "a", "3-1", "1-"):
        with pytest.raises(ValueError):
            parse_cpu_list(bad)


def test_auto_pinning_divides_the_machine_into_equal_slots_or_says_why_not():
    assert auto_slots("auto", 2) == 3 and auto_slots("auto:3", 1) == 3 and auto_slots("off", 2) is None
    with pytest.raises(ConfigError, match="need at least 3 slots"):
        auto_slots("auto:2", 2)
    eight = auto_plan(["leader", "follower"], frozenset(range(8)), 3)
    assert eight.clusters == {"leader": {0, 1}, "follower": {2, 3}} and eight.driver == {4, 5}  # 6-7: bench, OS
    baseline = auto_plan(["default"], frozenset(range(8)), 3)  # a study's baseline: the leader's CPUs
    assert baseline.clusters == {"default": {0, 1}} and baseline.driver == {4, 5}
    two = auto_plan(["leader", "follower"], frozenset({0, 1}), 3)
    assert not two.pinned and two.note == "CPU pinning off: auto pinning needs at least 4 CPUs and bench may use 2 here (0-1)"


def test_topology_cpu_sets_are_checked_where_they_are_written():
    topo = parse_topology({"name": "t", "driver_cpus": 1, "clusters": [
        {"name": "leader", "cpus": "0"}, {"name": "follower", "cpus": "1", "remote_clusters": ["leader"]}]})
    plan = cpu_plan(topo, None)
    assert plan.clusters == {"leader": {0}, "follower": {1}} and plan.driver == {1}
    assert plan.note == "CPU pinning: leader on CPU 0, follower on CPU 1, load driver on CPU 1"
    with pytest.raises(ConfigError, match="names its CPU sets itself"):
        cpu_plan(topo, "auto")
    with pytest.raises(ConfigError, match=r"clusters\[leader\].cpus: .*'0-x' is not a CPU"):
        parse_topology({"name": "t", "clusters": [{"name": "leader", "cpus": "0-x"}]})
    with pytest.raises(ConfigError, match="give either pinning: auto or explicit sets"):
        parse_topology({"name": "t", "pinning": "auto", "clusters": [{"name": "leader", "cpus": "0"}]})
    with pytest.raises(ConfigError, match="CPU pinning is for provider local"):
        parse_topology({"name": "t", "provider": "aws", "region": "eu-west-1", "clusters": [
            {"name": "leader", "cpus": "0", "instance_type": "c5d.large"}]})


def test_stored_options_leave_out_what_did_not_apply():
    os_race = public_options(RaceOptions(track="http_logs", distribution="opensearch:2.19.1"))
    assert "distribution_version" not in os_race and os_race["distribution"] == "opensearch:2.19.1"
    topo = public_options(RaceOptions(track="http_logs", topology=Path("t.yml")))
    assert not {"distribution_version", "car", "nodes"} & set(topo)
    existing = public_options(RaceOptions(track="http_logs", target_hosts="127.0.0.1:9200"))
    assert not {"distribution_version", "car", "car_params", "nodes", "pinning"} & set(existing)
    assert public_options(RaceOptions(track="nginx"))["distribution_version"] == "8.19.21"  # it did apply there
    # Trials stored before: the same filter when shown.
    assert "distribution_version" not in applying_options({"distribution": "opensearch:2.19.1",
                                                           "distribution_version": "8.19.21"})


def test_placement_line_says_what_shared_the_host_and_what_each_used_while_indexing():
    shared = _info(1, "ccr", [_cluster("leader"), _cluster("follower")],
                   machine={**MACHINE, "pinning": "CPU pinning off: auto pinning needs at least 4 CPUs"})
    assert where_text(shared) == ("leader, follower and the load driver shared one host (vm-1: 2 CPUs, 24 GiB), "
                                  "not pinned (auto pinning needs at least 4 CPUs)")
    pinned = _info(2, "ccr", [_cluster("leader", cpus={"leader-0": "0"}), _cluster("follower", cpus={"follower-0": "1"})],
                   machine={**MACHINE, "cpus": "1"})
    assert where_text(pinned).endswith("pinned: leader CPU 0, follower CPU 1, load driver CPU 1")
    cloud = _info(3, "ccr", [{"name": "leader", "nodes": 3, "instance_type": "c5d.4xlarge"},
                             {"name": "follower", "nodes": 3, "instance_type": "c5d.4xlarge"}],
                  machine={"hostname": "driver", "provider": "aws", "instance_types": ["c5d.2xlarge"]})
    assert where_text(cloud) == ("leader on 3 × c5d.4xlarge, follower on 3 × c5d.4xlarge, the load driver on "
                                 "1 × c5d.2xlarge (aws): each on machines of its own")

    # Host telemetry: the leader's JVM at 120 % and 140 % during the task, the follower's at 40 % and 60 %.
    rows = []
    for ts, leader, follower, driver in ((99.0, 0, 0, 0), (101.0, 120, 40, 20), (103.0, 140, 60, 30),
                                         (110.0, 5, 5, 0)):
        rows += [(ts, "leader", "leader-0", "host", "process.cpu.percent", leader),
                 (ts, "follower", "follower-0", "host", "process.cpu.percent", follower),
                 (ts, "driver", "all", "host", "process.cpu.percent", driver),
                 (ts, "driver", "main", "host", "process.cpu.percent", 99),  # part of "all": not counted twice
                 (ts, "leader", "leader-0", "host", "process.write_bytes", ts * 2**20),
                 (ts, "leader", "leader-0", "node-stats", "process.cpu.percent", 77)]  # another device's
    telemetry = pd.DataFrame(rows, columns=["timestamp", "cluster", "node", "device", "metric", "value"])
    samples = pd.DataFrame({"task": ["index-append", "index-append"], "absolute_time": [100.0, 102.0],
                            "latency": [0.5, 1.5]})
    window = task_window(samples, "index-append")
    assert window == (100.0, 103.5)
    load = window_load(telemetry, *window, host_cpus=2)
    assert load is not None and load.loads["leader"].cores == pytest.approx(1.3)
    assert load.loads["follower"].cores == pytest.approx(0.5) and load.loads["load driver"].cores == pytest.approx(0.25)
    assert load.loads["leader"].write_bytes == pytest.approx(4 * 2**20)  # from the reading at 99 s to the one at 103 s
    line = placement_line([PlacedTrial(variant="ccr", info=shared, load=load),
                           PlacedTrial(variant="ccr", info=shared, load=load)])
    assert line == ("Placement: leader, follower and the load driver shared one host (vm-1: 2 CPUs, 24 GiB), not "
                    "pinned (auto pinning needs at least 4 CPUs). While each variant indexed (host telemetry, node "
                    "processes): ccr (2 trials): leader 1.30 cores = 65 % of the host's 2 CPUs, 4.00 MB written; "
                    "follower 0.50 cores = 25 % of the host's 2 CPUs; load driver 0.25 cores = 12 % of the host's 2 "
                    "CPUs.")
    baseline = _info(4, "baseline", [_cluster("default")], machine=shared.machine)
    study = placement_line([PlacedTrial(variant="a", info=baseline), PlacedTrial(variant="b", info=shared),
                            PlacedTrial(variant="c", info=pinned)])
    assert study.startswith("Placement: every race's clusters (a: default; b: leader, follower) and its load driver "
                            "shared one host (vm-1: 2 CPUs, 24 GiB), not pinned (auto pinning needs at least 4 CPUs); "
                            "c: leader, follower and the load driver shared one host (vm-1: 2 CPUs, 24 GiB), pinned: "
                            "leader CPU 0, follower CPU 1, load driver CPU 1.")
    assert study.endswith("No per-process CPU or disk was recorded (race with --telemetry host to see what they "
                          "shared).")


def _data(info: TrialInfo) -> TrialData:
    tasks = [TaskSummary(task="index-append", operation_type="bulk", unit="docs", requests=10,
                         throughput=ThroughputStats(min=900, mean=1000, median=1000, max=1100, unit="docs/s"))]
    return TrialData(info=info, summary=Summary(tasks=tasks))


def test_what_the_variants_define_is_the_design_and_repeated_warnings_fold():
    exp = load_experiment(ROOT / "experiments" / "ccr-overhead-opensearch.yml")
    planned = planned_aspects(exp)
    assert {"tracks", "cars", "roles", "CPU pinning"} <= planned and "test mode" not in planned
    design = design_line(exp)
    assert design is not None and design.startswith("Design: the variants differ in challenge (soft-deletes-on: "
                                                     "baseline; ccr, ccr-tcp-compression: ccr), ")
    base = [_data(_info(i, "baseline", [_cluster("default")])) for i in (1, 2)]
    ccr = [_data(_info(i, "ccr", [_cluster("leader"), _cluster("follower")])) for i in (3, 4)]
    tcp = [_data(_info(i, "ccr", [_cluster("leader", "defaults+512mheap+tcp-compression"),
                                  _cluster("follower", "defaults+512mheap+tcp-compression")])) for i in (5, 6)]
    sides = [Side(label=label, selector=label, trials=t) for label, t in
             (("soft-deletes-on", base), ("ccr", ccr), ("ccr-tcp-compression", tcp))]
    plain = compare(sides[0], sides[1:])
    assert any(w.startswith("Trials of different tracks") for w in plain.warnings)
    assert any(w.startswith("Trials differ in cars") for w in plain.warnings)
    designed = compare(sides[0], sides[1:], planned=planned)
    assert designed.warnings == ["soft-deletes-on, ccr, ccr-tcp-compression have 2 trials: at least 3 per side are "
                                 "needed to judge significance."]
    # What differs within one variant was not planned: it still warns.
    odd = Side(label="ccr", selector="ccr", trials=[ccr[0], _data(_info(7, "ccr", [_cluster("leader", "defaults"),
                                                                                  _cluster("follower")]))])
    assert any(w.startswith("Trials differ in cars") for w in compare(sides[0], [odd], planned=planned).warnings)


class _OneRow(Summary):
    """A summary whose one row is the CCR section's yes/no row."""

    def rows(self) -> list[MetricRow]:
        return [MetricRow(metric="CCR doc counts match", task="follower/logs", value=1, unit="bool")]


def test_booleans_read_yes_or_no_in_every_format():
    summary = _OneRow()
    for fmt in ("table", "markdown"):
        text = render_summary(summary, fmt)
        assert "CCR doc counts match" in text and "bool" not in text and " yes" in text, fmt
    assert "CCR doc counts match,follower/logs,yes," in render_summary(summary, "csv")
    [row] = json.loads(render_summary(summary, "json"))["rows"]
    assert row["value"] is True


def test_each_node_reports_its_heap_and_processors():
    body = {"nodes": {"a": {"name": "leader-0", "jvm": {"mem": {"heap_max_in_bytes": 536870912}},
                            "os": {"allocated_processors": 1}},
                      "b": {"name": "leader-1", "jvm": {"mem": {"heap_max_in_bytes": 1073741824}},
                            "os": {"allocated_processors": 1}}}}
    assert runtime_facts(body) == {"heap_max_bytes": {"leader-0": 536870912, "leader-1": 1073741824},
                                   "processors": 1}
    assert runtime_facts({"nodes": {}}) == {} and runtime_facts("x") == {}
