"""A cloud topology's race gives its nodes the race hooks' JVM options as a local race does, refuses in one line the
telemetry its cloud nodes cannot serve, and names a node whose files could not be fetched (the files themselves
coming back: tests/cloud/test_cloud_netns_jvm.py)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from bench.cli import main
from bench.cloud import lifecycle
from bench.cloud.plan import make_plan
from bench.cloud.providers.base import Resource
from bench.cloud.race import fetch_node_files
from bench.cloud.source import CloudTopology, topology_source
from bench.cloud.ssh import RemoteHost
from bench.cloud.startup import render_startup_script
from bench.cloud.topology import load_topology
from bench.race.cluster_source import resolve_clusters
from bench.race.options import RaceOptions
from bench.race.race import load_race_track, plan_clusters
from bench.trials.sqlite import TrialStore

TOPOLOGY = """name: jvm
provider: aws
region: us-east-1
clusters:
  - name: leader
    instance_type: t3.small
  - name: follower
    instance_type: t3.small
    remote_clusters: [leader]
drivers: [{name: driver, instance_type: t3.small}]
"""


def _topology(tmp_path: Path) -> Path:
    path = tmp_path / "topo.yml"
    path.write_text(TOPOLOGY)
    return path


def test_cloud_clusters_get_the_jvm_options_a_local_race_gives(tmp_path: Path) -> None:
    params = {"gc-log-config": "gc*=debug", "recording-template": "profile"}
    cloud = RaceOptions(track="nginx", topology=str(_topology(tmp_path)), telemetry=["jfr", "gc", "jit"],
                        telemetry_params=params)
    local = RaceOptions(track="nginx", telemetry=["jfr", "gc", "jit"], telemetry_params=params)
    track, challenge, _ = load_race_track(cloud)
    clusters = topology_source(cloud)
    assert isinstance(clusters, CloudTopology)
    plan_clusters(cloud, track, challenge, clusters)
    here = resolve_clusters(local)
    plan_clusters(local, track, challenge, here)
    expected = here.jvm_options("default")
    assert "-Xlog:gc*=debug:file=${BENCH_NODE_LOGS}/gc.log:utctime,uptimemillis,level,tags:filecount=0" in expected
    assert clusters.jvm_options("leader") == clusters.jvm_options("follower") == expected

    # Booted with them: each node's startup script writes them with its own log folder in place.
    topo = load_topology(_topology(tmp_path))
    plan = make_plan(topo, "ab" * 16)
    ips = {i.name: f"10.0.0.{n + 10}" for n, i in enumerate(plan.instances)}
    boots = lifecycle.node_boots(topo, plan, ips, {}, None, {c.name: clusters.jvm_options(c.name)
                                                             for c in topo.clusters})
    for boot in boots.values():
        script = render_startup_script(boot)
        jvm = script.split("<<'BENCH_JVM'\n", 1)[1].split("\nBENCH_JVM", 1)[0].splitlines()
        assert jvm[-len(expected):] == [o.replace("${BENCH_NODE_LOGS}", "/opt/bench/logs") for o in expected]
        assert any("settings=profile" in o and "filename=/opt/bench/logs/profile.jfr" in o for o in jvm)


def test_cloud_topology_without_jvm_devices_boots_nodes_with_the_cars_options_only(tmp_path: Path) -> None:
    opts = RaceOptions(track="nginx", topology=str(_topology(tmp_path)))
    track, challenge, _ = load_race_track(opts)
    clusters = topology_source(opts)
    assert clusters is not None
    plan_clusters(opts, track, challenge, clusters)
    assert clusters.jvm_options("leader") == []


@pytest.mark.parametrize("telemetry, refused", [
    ("gc,node-stats", "node-stats"),
    ("heapdump", "heapdump"),  # its dump is taken with jcmd on the node's machine
    ("jfr,profile,ccr-stats", "profile, ccr-stats"),
])
def test_cloud_race_refuses_devices_its_nodes_cannot_serve_before_anything_exists(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], telemetry: str, refused: str) -> None:
    rc = main(["--quiet", "race", "--topology", str(_topology(tmp_path)), "--track", "nginx", "--test-mode",
               f"--telemetry={telemetry}", "--yes"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert err[0] == (f"error: --telemetry: {refused} cannot run on cluster(s) leader, follower (their nodes run on "
                      "cloud machines; only jfr, jit, gc, which are JVM options at the node's boot, do there): "
                      "leave them out")
    with TrialStore() as store:
        assert store.list_trials() == []


def test_a_node_whose_files_cannot_be_fetched_is_named_in_one_line(tmp_path: Path) -> None:
    topo = load_topology(_topology(tmp_path))
    trial = "cd" * 16
    plan = make_plan(topo, trial)
    ips = {i.name: f"10.0.0.{n + 10}" for n, i in enumerate(plan.instances)}
    boots = lifecycle.node_boots(topo, plan, ips, {}, None, {"leader": ["-Xlog:gc:file=${BENCH_NODE_LOGS}/gc.log"]})
    name = next(n for n, b in boots.items() if b.cluster_name == "leader")
    resources = [Resource(provider="aws", kind="instance", id=name, name=name, role="node", cluster="leader",
                          private_ip=ips[name])]
    dep = lifecycle.Deployment(trial_id=trial, topology=topo, plan=plan, resources=resources, boots=boots)
    out = io.StringIO()
    host = RemoteHost(ips[name], "admin", tmp_path / "no-such-key")
    fetch_node_files(dep, name, host, tmp_path / "trial", Console(file=out, width=400))
    lines = out.getvalue().strip().splitlines()
    assert lines == [f"could not copy the logs of node {name} (with the files of the race's JVM options) into "
                     f"{tmp_path / 'trial' / 'logs' / 'leader' / name}: SSH private key {tmp_path / 'no-such-key'} "
                     "does not exist; set ssh.private_key in the topology"]


@pytest.mark.parametrize("option", ["--redline=task:match-all,p99:500ms", "--enable-driver-profiling",
                                    "--randomization-enabled"])
def test_cloud_race_refuses_options_its_driver_host_is_not_given(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str) -> None:
    rc = main(["--quiet", "race", "--topology", str(_topology(tmp_path)), "--track", "nginx", "--test-mode", option,
               "--yes"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: {option.split('=')[0]}: not available for a cloud topology's race"), err
    with TrialStore() as store:
        assert store.list_trials() == []
