"""A real Ray cluster on 127.0.0.1 for the Ray load-driver tests: a head and worker nodes, each a `ray start
--block` process of ours (so stopping it, and everything it started, never touches another Ray on the machine).
Each node has a ``BENCH_HOME`` of its own (and no ``BENCH_CACHE``), as separate machines would: its actors'
data cache is ``home/data``."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from bench.provision.guard import kill_survivors
from benchmarks.nullsink import free_port

NODE_START_TIMEOUT = 60.0
OBJECT_STORE_BYTES = 100 * 1024 * 1024  # the smallest Ray accepts is ~75 MB; the tests ship no objects


def _ray_exe() -> str:
    found = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
    if not found:
        raise RuntimeError("the ray command is not installed (pip install bench[ray])")
    return found


@dataclass
class RayNodeProcess:
    proc: subprocess.Popen[bytes]
    log: Path
    home: Path  # the node's BENCH_HOME

    def processes(self) -> list[psutil.Process]:
        try:
            root = psutil.Process(self.proc.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def raylet(self) -> psutil.Process:
        for p in self.processes():
            try:
                if p.name() == "raylet":
                    return p
            except psutil.NoSuchProcess:
                continue
        raise RuntimeError(f"no raylet under ray start (pid {self.proc.pid}); see {self.log}")

    def stop(self) -> None:
        procs = self.processes()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # ray start --block stops what it started
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                pass
        kill_survivors(procs, 5, reap=5)
        if self.proc.poll() is None:
            self.proc.wait(5)


@dataclass
class RayTestCluster:
    address: str
    folder: Path
    nodes: list[RayNodeProcess] = field(default_factory=list)

    def add_node(self, cpus: int = 1) -> RayNodeProcess:
        node = _start(self.folder, len(self.nodes),
                      ["--address", self.address, f"--num-cpus={cpus}"])
        self.nodes.append(node)
        wait_for_nodes(self.address, len(self.nodes))
        return node

    def remove_node(self, node: RayNodeProcess) -> None:
        """Stop a worker node and wait until the cluster no longer lists it alive (a race would place on it)."""
        node.stop()
        self.nodes.remove(node)
        wait_for_nodes(self.address, len(self.nodes))

    def stop(self) -> None:
        """Stop every node, then delete the cluster's folder (its sessions, logs and sockets)."""
        for node in reversed(self.nodes):  # workers first: a head stopping first leaves them retrying
            node.stop()
        self.nodes.clear()
        shutil.rmtree(self.folder, ignore_errors=True)


def _start(folder: Path, index: int, args: list[str]) -> RayNodeProcess:
    log = folder / f"ray-start-{index}.log"
    home = folder / f"home-{index}"
    common = ["--block", "--node-ip-address=127.0.0.1", f"--object-store-memory={OBJECT_STORE_BYTES}",
              "--disable-usage-stats"]
    env = {**{k: v for k, v in os.environ.items() if k != "BENCH_CACHE"}, "RAY_USAGE_STATS_ENABLED": "0",
           "BENCH_HOME": str(home)}
    with open(log, "wb") as out:
        proc = subprocess.Popen([_ray_exe(), "start", *args, *common], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    return RayNodeProcess(proc, log, home)


def start_ray_cluster(folder: Path, nodes: int = 2) -> RayTestCluster:
    """A head plus ``nodes - 1`` worker nodes, one CPU each, ready (every node alive in the GCS) on return;
    ``folder`` (short: Ray's unix sockets live in it) is the cluster's, deleted when it stops."""
    port = free_port()
    address = f"127.0.0.1:{port}"
    cluster = RayTestCluster(address, folder)
    try:
        cluster.nodes.append(_start(folder, 0, ["--head", f"--port={port}", "--num-cpus=1",
                                                "--include-dashboard=false", f"--temp-dir={folder / 'tmp'}"]))
        for _ in range(nodes - 1):
            cluster.add_node()
        if nodes == 1:
            wait_for_nodes(address, 1)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def wait_for_nodes(address: str, count: int) -> None:
    """Until exactly ``count`` nodes are alive (asked by a short-lived process: this one must not keep a Ray
    session)."""
    probe = ("import ray,sys,time\n"
             f"ray.init(address='{address}', logging_level='ERROR', log_to_driver=False)\n"
             f"d=time.monotonic()+{NODE_START_TIMEOUT}\n"
             f"while sum(1 for n in ray.nodes() if n['Alive'])!={count}:\n"
             "    time.sleep(0.2)\n"
             "    if time.monotonic()>d: sys.exit(1)\n")
    deadline = time.monotonic() + NODE_START_TIMEOUT
    while True:
        try:
            with socket.create_connection(("127.0.0.1", int(address.rpartition(":")[2])), 1):
                break
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Ray head at {address} did not come up within {NODE_START_TIMEOUT:.0f} s")
            time.sleep(0.2)
    r = subprocess.run([sys.executable, "-c", probe], timeout=NODE_START_TIMEOUT + 30, capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(f"{count} Ray node(s) at {address} not alive within {NODE_START_TIMEOUT:.0f} s: "
                           f"{r.stderr.decode(errors='replace')[-500:]}")
