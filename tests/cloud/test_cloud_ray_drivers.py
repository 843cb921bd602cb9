"""Several load-driver hosts of a cloud topology as one Ray cluster: what the head runs, the pinned ports the
topology's member rule opens, and what a cloud race refuses. The live path (two SSH driver hosts forming a Ray
cluster that drives a race) is in tests/cloud/test_cloud_netns.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console

from bench.cloud import lifecycle
from bench.cloud.plan import RAY_GCS_PORT, RAY_PORTS, make_plan
from bench.cloud.providers.base import Resource
from bench.cloud.race import race_args, run_cloud_race
from bench.cloud.ray_hosts import RayHost, start_command
from bench.cloud.ssh import DriverHost, install_command
from bench.cloud.topology import parse_topology
from bench.race.options import RaceOptions
from bench.util.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def _topology(drivers: int, provider: str = "aws") -> dict:
    return {"name": "ccr", "provider": provider, "region": "us-east-1", "image": "ami-1",
            "clusters": [{"name": "leader", "instance_type": "c5d.large"}],
            "drivers": [{"name": "driver", "count": drivers, "instance_type": "m5d.large"}]}


def _deployment(drivers: int) -> lifecycle.Deployment:
    topo = parse_topology(_topology(drivers))
    trial = "ab" * 16
    plan = make_plan(topo, trial)
    resources = [Resource(provider="aws", kind="instance", id=i.name, name=i.name, role=i.role, cluster=i.group,
                          private_ip=f"10.0.0.{n + 10}") for n, i in enumerate(plan.instances)]
    return lifecycle.Deployment(trial_id=trial, topology=topo, plan=plan, resources=resources)


def test_one_driver_host_drives_with_local_workers_several_form_a_ray_cluster() -> None:
    one = make_plan(parse_topology(_topology(1)), "cd" * 16)
    assert one.ray_head is None and one.member_ports == [(9200, 9400)]
    three = make_plan(parse_topology(_topology(3)), "cd" * 16)
    assert three.ray_head == "bench-cdcdcdcd-driver-0"
    assert three.member_ports == [(9200, 9400), RAY_PORTS]
    # provider local creates nothing: its races drive from this machine
    assert make_plan(parse_topology(_topology(3, "local")), "cd" * 16).ray_head is None


def test_race_args_name_the_ray_head_only_with_several_hosts() -> None:
    dep = _deployment(1)
    args = race_args(RaceOptions(track="nginx"), dep, "/tmp/x")
    assert "--load-driver" not in args and "--worker-processes" not in args  # the driver host's default: 1
    dep = _deployment(2)
    args = race_args(RaceOptions(track="nginx"), dep, "/tmp/x", f"10.0.0.11:{RAY_GCS_PORT}")
    assert args[args.index("--load-driver") + 1] == "ray:10.0.0.11:6379"
    assert "--worker-processes" not in args  # Ray's default: one worker per CPU of each host
    args = race_args(RaceOptions(track="nginx", worker_processes=4), dep, "/tmp/x", "10.0.0.11:6379")
    assert args[args.index("--worker-processes") + 1] == "4"
    assert args[args.index("--target-hosts") + 1] == "leader:10.0.0.10:9200"


def test_every_port_a_ray_node_listens_on_is_in_the_opened_range() -> None:
    host = RayHost(DriverHost("10.0.0.11", "bench", "/nonexistent"), "10.0.0.11")
    head = start_command(host, None, num_cpus=2)
    node = start_command(RayHost(DriverHost("10.0.0.12", "bench", "/nonexistent"), "10.0.0.12"), "10.0.0.11:6379")
    assert "--head" in head and "--address" not in head and "--include-dashboard=false" in head
    assert "--address=10.0.0.11:6379" in node and "--head" not in node
    for cmd in (head, node):
        assert "--block" in cmd and "setsid nohup" in cmd and cmd.endswith("& echo $!")
        ports = [int(p) for p in re.findall(r"--[a-z-]*port=(\d+)", cmd)]
        assert ports and all(RAY_PORTS[0] <= p <= RAY_PORTS[1] for p in ports), cmd
    assert "--node-ip-address=10.0.0.12" in node


def test_driver_hosts_get_bench_with_the_ray_extra() -> None:
    with_ray = install_command("python3", "v", "w/bench-0.1.0-py3-none-any.whl", extras=("ray",))
    assert " 'w/bench-0.1.0-py3-none-any.whl[ray]' && " in with_ray
    assert "[" not in install_command("python3", "v", "w/bench-0.1.0-py3-none-any.whl")
    # The same version with other code: bench itself is always reinstalled, its dependencies left alone.
    assert with_ray.endswith("--force-reinstall --no-deps w/bench-0.1.0-py3-none-any.whl")


def test_a_cloud_race_refuses_a_load_driver_of_its_own() -> None:
    topo = parse_topology(_topology(2))
    for opts in (RaceOptions(track="nginx", load_driver="ray:auto"),
                 RaceOptions(track="nginx", load_driver_hosts=["10.1.1.1"])):
        with pytest.raises(ConfigError, match="drives from topology ccr's driver hosts"):
            run_cloud_race(opts, topo, Console(stderr=True))


def test_a_cloud_race_of_several_driver_hosts_refuses_driver_cpus_and_one_host_is_given_it() -> None:
    opts = RaceOptions(track="nginx", driver_cpus="1")
    with pytest.raises(ConfigError, match=r"--driver-cpus=1: topology ccr's driver hosts form a Ray cluster"):
        run_cloud_race(opts, parse_topology(_topology(2)), Console(stderr=True))
    args = race_args(opts, _deployment(1), "/x")  # one host: its own race pins its workers
    assert args[args.index("--driver-cpus") + 1] == "1"


def test_race_args_carry_the_task_filters() -> None:
    args = race_args(RaceOptions(track="nginx", include_tasks=["index-append", "type:search"]), _deployment(1), "/x")
    assert args[args.index("--include-tasks") + 1] == "index-append,type:search" and "--exclude-tasks" not in args
    args = race_args(RaceOptions(track="nginx", exclude_tasks=["tag:slow"]), _deployment(1), "/x")
    assert args[args.index("--exclude-tasks") + 1] == "tag:slow"
