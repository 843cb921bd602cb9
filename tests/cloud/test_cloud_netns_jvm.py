"""Rally's JVM telemetry devices on cloud nodes, for real in network namespaces (tests/support/netns.py): a race on a cloud
topology with ``--telemetry=gc,jfr`` computes the nodes' JVM options through the race hooks as a local race does,
the node boots from the cloud startup script with them, a driver host over SSH runs the race, and the node's GC
log and flight recording come back into the trial where a local race keeps them (``logs/<cluster>/<node>/``)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from bench.cloud import lifecycle
from bench.cloud.plan import make_plan
from bench.cloud.providers.base import Resource
from bench.cloud.race import drive_on_hosts
from bench.cloud.source import topology_source
from bench.cloud.ssh import DriverHost, RemoteHost
from bench.cloud.startup import NodeBoot, render_startup_script
from bench.cloud.topology import load_topology
from bench.provision.distribution import distribution_url, download_archive
from bench.provision.java import resolve_java
from bench.provision.model import ENGINES
from bench.race.options import RaceOptions
from bench.race.race import load_race_track, plan_clusters
from bench.trials.sqlite import TrialStore
from bench.util.home import trials_dir
from tests.cloud.test_cloud_netns import SSHD, _ssh_keys, _sshd_host
from tests.support.esnode import LocalEngines, default_cache
from tests.support.netns import NetnsLab, inside, serve_directory

VERSION = "8.19.21"
TOPOLOGY = """name: jvm-netns
provider: aws
region: us-east-1
clusters:
  - name: c1
    instance_type: t3.small
    car: [defaults, 512mheap]
drivers: [{name: driver, instance_type: t3.small}]
"""


@pytest.mark.timeout(900)
@pytest.mark.skipif(SSHD is None, reason="the SSH path needs Debian's openssh-server (sshd) installed")
def test_gc_log_and_flight_recording_of_a_cloud_node_come_back_with_the_trial(
        tmp_path: Path, netns_hosts: type[NetnsLab], local_engines: LocalEngines) -> None:
    topo_file = tmp_path / "topo.yml"
    topo_file.write_text(TOPOLOGY)
    opts = RaceOptions(track="nginx", test_mode=True, challenge="index-only", progress=False,
                       topology=str(topo_file), telemetry=["gc", "jfr"], telemetry_params={"gc-log-config": "gc*=info"})
    # The race's own path up to the cloud's take-over: the hooks give each planned cluster its JVM options.
    track, challenge, _ = load_race_track(opts)
    clusters = topology_source(opts)
    assert clusters is not None
    plan_clusters(opts, track, challenge, clusters)
    options = clusters.jvm_options("c1")
    assert any(o.startswith("-Xlog:gc*=info:file=${BENCH_NODE_LOGS}/gc.log") for o in options), options

    os.environ.setdefault("BENCH_CACHE", default_cache())
    archive = download_archive(distribution_url("elasticsearch", VERSION))
    www = tmp_path / "www"
    www.mkdir()
    name = f"elasticsearch-{VERSION}.zip"
    shutil.copy(archive, www / name)
    (www / f"{name}.sha1").write_text(hashlib.sha1((www / name).read_bytes()).hexdigest() + "\n")
    java_home = resolve_java(Path("/nonexistent"), ENGINES["elasticsearch"]).home  # the system JDK
    lab = netns_hosts(prefix=f"bj{os.getpid() % 100000}")
    base = Path("/var/tmp/bench-cloud-netns-jvm") / lab.prefix
    work = tmp_path / "driver"
    sshd: subprocess.Popen | None = None
    try:
        srv = lab.add_host(2)
        serve_directory(lab, srv, www)
        node_ns = lab.add_host(11)
        # The boot lifecycle.up makes of the cluster's options (node_boots, as run_cloud_race passes them).
        topo = load_topology(topo_file)
        trial_id = "cafe" + "0" * 28
        plan = make_plan(topo, trial_id)
        [inst] = [i for i in plan.instances if i.role == "node"]
        ips = {i.name: lab.hosts[node_ns] if i is inst else "127.200.0.99" for i in plan.instances}
        boot: NodeBoot = lifecycle.node_boots(topo, plan, ips, {}, None, {"c1": options})[inst.name]
        assert boot.jvm_options == options
        boot = boot.model_copy(update={"distribution_url": f"http://{lab.hosts[srv]}:8000/{name}",
                                       "base_dir": str(base / inst.name), "java_home": java_home,
                                       "boot_timeout": 480})
        script = tmp_path / "node.sh"
        script.write_text(render_startup_script(boot))
        res = lab.run(node_ns, ["bash", str(script)], timeout=600)
        assert res.returncode == 0 and "BENCH-NODE-READY" in res.stdout, res.stdout[-3000:]

        key = _ssh_keys(work)
        addr, sshd = _sshd_host(lab, work, 31)
        resources = [Resource(provider="netns", kind="instance", id=inst.name, name=inst.name, role="node",
                              cluster="c1", private_ip=boot.bind_host),
                     Resource(provider="netns", kind="instance", id="driver-0", name="driver-0", role="driver",
                              cluster="driver", private_ip=addr, public_ip=addr)]
        dep = lifecycle.Deployment(trial_id=trial_id, topology=topo, plan=plan, resources=resources,
                                   boots={inst.name: boot})
        host = DriverHost(addr, "root", key, known_hosts=tmp_path / "known_hosts", workdir=str(work),
                          python=sys.executable)
        # The node's files are read over SSH as on a cloud node (the namespaces share one filesystem).
        node_host = RemoteHost(addr, "root", key, known_hosts=tmp_path / "known_hosts")
        with inside(lab.add_host(3)):  # the orchestrator's side of each connection, from a namespace of the lab
            host.connect(timeout=60)
            node_host.connect(timeout=60)
        with host:
            got = drive_on_hosts(opts, dep, [host], Console(stderr=True), offline=True, boot_timeout=120,
                                 node_log_hosts={inst.name: node_host})
        assert got == trial_id
        with TrialStore() as store:
            assert store.get_trial(trial_id).status == "complete"
        logs = trials_dir() / trial_id / "logs" / "c1" / inst.name
        gc = (logs / "gc.log").read_text()
        assert "Using G1" in gc and "gc,heap" in gc  # -Xlog:gc*=info with Rally's decorations
        # Written when the JVM exits: the node was stopped before its folder was fetched.
        assert (logs / "profile.jfr").read_bytes()[:4] == b"FLR\0"
        assert (logs / "startup.log").exists() and (logs / "c1.log").stat().st_size > 0
    finally:
        if sshd is not None:
            sshd.terminate()
            sshd.wait(timeout=30)
        lab.close()
        shutil.rmtree(base, ignore_errors=True)

