"""A cluster the race kills on purpose (a failover drill) is no failure of the race; any other node that dies still
is. Real processes stand in for the nodes (a ``sleep`` per node, owned by this test as a guard would own its node):
``LocalProvisioner.kill_cluster`` SIGKILLs them, and the race's health check leaves exactly those out."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bench.provision.local import LocalProvisioner, _Cluster, _Node
from bench.provision.model import ClusterInfo, NodeInfo
from bench.race.cluster_source import Provisioned
from bench.util.errors import ConfigError


class _Started(Provisioned):
    planned = []

    def provision(self, provisioner, console):  # type: ignore[no-untyped-def]
        raise AssertionError("not used")


def _cluster(name: str, tmp: Path, procs: list[subprocess.Popen]) -> _Cluster:
    proc = subprocess.Popen(["sleep", "60"])
    procs.append(proc)
    info = NodeInfo(name=f"{name}-0", http_port=1, transport_port=2, launcher_pid=proc.pid, guard_pid=os.getpid(),
                    home=tmp, log_dir=tmp)
    node = _Node(info=info, cluster=name, base=tmp, console_log=tmp / "c.log", pid_file=tmp / "pid")
    return _Cluster(info=ClusterInfo(name=name, engine="opensearch", version="2.19.1", car=[], nodes=[info]),
                    nodes=[node])


def test_a_planned_kill_is_left_out_of_the_health_check_an_unplanned_death_is_not(tmp_path: Path) -> None:
    procs: list[subprocess.Popen] = []
    provisioner = LocalProvisioner("t", tmp_path)
    try:
        provisioner._clusters = {"leader": _cluster("leader", tmp_path, procs),
                                 "follower": _cluster("follower", tmp_path, procs)}
        source = _Started()
        source.provisioner = provisioner
        check = source.health_check()
        kill = source.kill_cluster()
        assert check is not None and kill is not None
        assert check() is None
        assert kill("leader") == ["leader-0"]
        assert procs[0].poll() is not None  # gone (kill_cluster reaped it) by the time kill_cluster returns
        assert check() is None and provisioner.down_on_purpose() == {"leader-0"}
        procs[1].kill()  # the follower dies without being asked to
        procs[1].wait(timeout=10)
        problem = check()
        assert problem is not None and problem.startswith("node follower-0 died during the race")
        with pytest.raises(ConfigError, match="no cluster 'other' was started by this race"):
            kill("other")
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=10)
