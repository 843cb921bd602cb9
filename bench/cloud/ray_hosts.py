"""A topology's load-driver hosts as one Ray cluster: ``ray start`` over SSH on each (the head on the first),
every node checked alive before the race, and every Ray process stopped afterwards, on success or failure.

Each node is a ``ray start --block`` of the host's bench venv, detached from the SSH session; stopping it
(SIGTERM, then SIGKILL to what survives) ends exactly what it started, not another Ray on the machine. Every
port a node listens on is pinned into RAY_PORTS, the range the topology's member rule opens.
"""

from __future__ import annotations

import logging
import shlex
from dataclasses import dataclass, field
from typing import Self

from bench.cloud.plan import RAY_GCS_PORT, RAY_PORTS
from bench.cloud.ssh import DriverHost
from bench.util.errors import ProvisionError
from bench.util.redact import redact_text

log = logging.getLogger(__name__)

NODE_TIMEOUT = 120.0  # for every node to be alive in the head's view
STOP_GRACE = 15.0
_PINNED = ["--node-manager-port=6380", "--object-manager-port=6381", "--runtime-env-agent-port=6382",
           "--dashboard-agent-grpc-port=6383", "--dashboard-agent-listen-port=6384", "--metrics-export-port=6385",
           f"--min-worker-port={RAY_PORTS[0] + 21}", f"--max-worker-port={RAY_PORTS[1]}"]
_HEAD = ["--head", f"--port={RAY_GCS_PORT}", "--ray-client-server-port=6386", "--include-dashboard=false"]

# Run by a host's venv python: until ``count`` Ray nodes are alive (the GCS port first: ray.init alone would
# retry an absent head for ever); prints the alive nodes' addresses.
_WAIT_ALIVE = """
import os, socket, sys, time
address, count, timeout, head_pid = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
deadline = time.monotonic() + timeout
host, _, port = address.rpartition(":")
while True:
    try:
        socket.create_connection((host, int(port)), 2).close()
        break
    except OSError:
        try:
            os.kill(head_pid, 0)
        except ProcessLookupError:
            sys.exit("the Ray head exited")
        if time.monotonic() > deadline:
            sys.exit("the Ray head's port %s is not open" % address)
        time.sleep(0.5)
import ray
ray.init(address=address, logging_level="ERROR", log_to_driver=False, configure_logging=False)
while True:
    alive = sorted(n["NodeManagerAddress"] for n in ray.nodes() if n.get("Alive"))
    if len(alive) >= count or time.monotonic() > deadline:
        print(" ".join(alive))
        sys.exit(0 if len(alive) >= count else 1)
    time.sleep(0.5)
"""

# Run by a host's venv python (bench is installed there): stop the process tree of a `ray start --block`
# (SIGTERM stops what it started), then whatever of it survives.
_STOP_TREE = """
import sys, psutil
from bench.provision.guard import kill_survivors
try:
    root = psutil.Process(int(sys.argv[1]))
except psutil.NoSuchProcess:
    sys.exit(0)
procs = [root, *root.children(recursive=True)]
root.terminate()
try:
    root.wait(float(sys.argv[2]))
except psutil.TimeoutExpired:
    pass
kill_survivors(procs, 5, reap=5)
"""


@dataclass
class RayHost:
    host: DriverHost
    ip: str  # the address the other drivers and the clusters reach it at (private)
    pid: int | None = None

    @property
    def log_file(self) -> str:
        return f"{self.host.home}-ray.log"


def start_command(host: RayHost, head: str | None, *, temp_dir: str | None = None, num_cpus: int | None = None,
                  object_store_bytes: int | None = None) -> str:
    """The shell line that starts a node detached (head when ``head`` is None, else joining ``head``) and prints
    its pid."""
    args = [*(_HEAD if head is None else [f"--address={head}"]), f"--node-ip-address={host.ip}", *_PINNED,
            "--disable-usage-stats", "--block"]
    if temp_dir:
        args.append(f"--temp-dir={temp_dir}")
    if num_cpus is not None:
        args.append(f"--num-cpus={num_cpus}")
    if object_store_bytes is not None:
        args.append(f"--object-store-memory={object_store_bytes}")
    argv = [f"{host.host.venv}/bin/python", "-m", "ray.scripts.scripts", "start", *args]
    # The node's workers use the bench home the host's races use (their corpora are prepared there).
    home = host.host.home if host.host.home.startswith("/") else f"$HOME/{host.host.home}"
    return (f"BENCH_HOME={home} RAY_USAGE_STATS_ENABLED=0 setsid nohup {' '.join(map(shlex.quote, argv))} "
            f"> {host.log_file} 2>&1 < /dev/null & echo $!")


@dataclass
class RayDrivers:
    """``with RayDrivers(hosts) as address:`` — the Ray cluster of the driver hosts, up for the with-block."""

    hosts: list[RayHost]
    temp_dir: str | None = None  # per host; None: Ray's default (/tmp/ray)
    num_cpus: int | None = None  # None: each host's CPUs
    object_store_bytes: int | None = None
    timeout: float = NODE_TIMEOUT
    started: list[RayHost] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"{self.hosts[0].ip}:{RAY_GCS_PORT}"

    def __enter__(self) -> Self:
        try:
            for i, h in enumerate(self.hosts):
                self._start(h, None if i == 0 else self.address)
            self._wait_alive()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _start(self, h: RayHost, head: str | None) -> None:
        temp = f"{self.temp_dir}/{h.ip}" if self.temp_dir else None
        _, out, _ = h.host.run(start_command(h, head, temp_dir=temp, num_cpus=self.num_cpus,
                                             object_store_bytes=self.object_store_bytes))
        h.pid = int(out.strip().splitlines()[-1])
        self.started.append(h)
        log.info("Ray %s started on %s (pid %d)", "head" if head is None else "node", h.ip, h.pid)

    def _wait_alive(self) -> None:
        head = self.hosts[0]
        cmd = (f"{head.host.venv}/bin/python -c {shlex.quote(_WAIT_ALIVE)} {self.address} {len(self.hosts)} "
               f"{self.timeout:g} {head.pid}")
        rc, out, err = head.host.run(cmd, timeout=self.timeout + 60, check=False)
        if rc == 0:
            return
        alive = set(out.split())
        missing = [h for h in self.hosts if h.ip not in alive]
        tails = []
        for h in missing:
            _, text, _ = h.host.run(f"tail -c 600 {h.log_file}", check=False)
            tails.append(f"{h.ip}: {redact_text(text.strip()).replace(chr(10), ' | ')[-300:]}")
        reason = redact_text(err.strip().splitlines()[-1]) if err.strip() else "not alive"
        raise ProvisionError(f"the load drivers' Ray cluster did not form within {self.timeout:.0f} s "
                             f"({reason}); not alive: {'; '.join(tails) or ', '.join(h.ip for h in missing)}")

    def stop(self) -> None:
        """Workers first (a head stopping first leaves them retrying), then the head; never raises."""
        for h in reversed(self.started):
            if h.pid is None:
                continue
            try:
                h.host.run(f"{h.host.venv}/bin/python -c {shlex.quote(_STOP_TREE)} {h.pid} {STOP_GRACE:g}",
                           timeout=STOP_GRACE + 30, check=False)
            except Exception as e:  # noqa: BLE001 - the others must still be stopped; the machine goes anyway
                log.warning("could not stop Ray on %s: %s", h.ip, e)
            h.pid = None
        self.started.clear()

