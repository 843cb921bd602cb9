"""Network namespaces as "hosts" for tests: one namespace per host, each with one address on a veth
whose other end is attached to a bridge that lives in a namespace of its own. Nothing is configured in
the machine's own namespace, so no traffic can leave the machine.

Addresses are in 127.200.0.0/24 (with ``route_localnet`` and the 127/8 local route narrowed to
127.0.0.1 inside each namespace): Elasticsearch treats them as loopback, so its production bootstrap
checks (open-files limit, which an unprivileged container cannot raise) stay off while the nodes are
still on different hosts as far as the network is concerned.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

SUBNET = "127.200.0"


def unavailable_reason() -> str | None:
    """Why namespace tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "network namespaces need iproute2 (the 'ip' command)"
    probe = f"bprobe{os.getpid() % 100000}"
    res = subprocess.run(["ip", "netns", "add", probe], check=False, capture_output=True, text=True)
    if res.returncode != 0:
        return f"cannot create a network namespace here: {res.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], check=False, capture_output=True)
    return None


def _ip(*args: str, ns: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    argv = ["ip", "netns", "exec", ns, *args] if ns else list(args)
    return subprocess.run(argv, capture_output=True, text=True, check=check, timeout=30)


class NetnsLab:
    """A bridge and hosts; ``close()`` kills every process left in the lab's namespaces and deletes them."""

    def __init__(self, prefix: str | None = None):
        self.prefix = prefix or f"bl{os.getpid() % 100000}"
        self.switch = f"{self.prefix}sw"
        self.hosts: dict[str, str] = {}  # namespace -> address
        self._created: list[str] = []
        _ip("ip", "netns", "add", self.switch)
        self._created.append(self.switch)
        _ip("ip", "link", "add", "br0", "type", "bridge", ns=self.switch)
        _ip("ip", "link", "set", "br0", "up", ns=self.switch)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_host(self, octet: int) -> str:
        """A namespace with address 127.200.0.<octet>; returns the namespace's name."""
        ns, veth, addr = f"{self.prefix}h{octet}", f"{self.prefix}v{octet}", f"{SUBNET}.{octet}"
        _ip("ip", "netns", "add", ns)
        self._created.append(ns)
        _ip("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("ip", "link", "set", veth, "netns", self.switch)
        _ip("ip", "link", "set", veth, "master", "br0", ns=self.switch)
        _ip("ip", "link", "set", veth, "up", ns=self.switch)
        for cmd in (["ip", "link", "set", "lo", "up"],
                    ["sysctl", "-qw", "net.ipv4.conf.all.route_localnet=1", "net.ipv4.conf.default.route_localnet=1",
                     "net.ipv4.conf.eth0.route_localnet=1"],
                    # 127/8 is local by default: keep only 127.0.0.1 local so the subnet goes out through eth0.
                    ["ip", "route", "del", "local", "127.0.0.0/8", "dev", "lo", "table", "local"],
                    ["ip", "route", "add", "local", "127.0.0.1", "dev", "lo", "table", "local"],
                    ["ip", "addr", "add", f"{addr}/24", "dev", "eth0"],
                    ["ip", "link", "set", "eth0", "up"]):
            _ip(*cmd, ns=ns, check=cmd[:3] != ["ip", "route", "add"])  # 127.0.0.1 may exist
        self.hosts[ns] = addr
        return ns

    def popen(self, ns: str, argv: list[str], **kw: Any) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", ns, *argv], **kw)

    def run(self, ns: str, argv: list[str], timeout: float = 60, **kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ip", "netns", "exec", ns, *argv], check=False, capture_output=True, text=True,
                              timeout=timeout, **kw)

    def pids(self, ns: str) -> list[int]:
        res = subprocess.run(["ip", "netns", "pids", ns], check=False, capture_output=True, text=True)
        return [int(p) for p in res.stdout.split()]

    def close(self, grace: float = 30.0) -> None:
        for ns in self._created:
            for pid in self.pids(ns):
                _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(self.pids(ns) for ns in self._created):
            time.sleep(0.5)
        for ns in self._created:
            for pid in self.pids(ns):
                _signal(pid, signal.SIGKILL)
        for ns in reversed(self._created):
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)
        self._created.clear()


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def serve_directory(lab: NetnsLab, ns: str, directory: Path, port: int = 8000) -> subprocess.Popen:
    """A plain HTTP server for directory inside namespace ns (stopped by lab.close())."""
    proc = lab.popen(ns, ["python3", "-m", "http.server", "--bind", lab.hosts[ns], str(port), "--directory",
                          str(directory)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if lab.run(ns, ["curl", "-fsS", "-o", "/dev/null", f"http://{lab.hosts[ns]}:{port}/"], timeout=10).returncode == 0:
            return proc
        time.sleep(0.3)
    raise RuntimeError(f"HTTP server in {ns} did not come up")


_CLONE_NEWNET = 0x40000000


@contextmanager
def inside(ns: str) -> Iterator[None]:
    """Run the calling thread in namespace ns for the with-block. Sockets opened meanwhile stay in ns
    afterwards, so e.g. an SSH connection made here keeps working from the machine's own namespace."""
    libc = ctypes.CDLL(None, use_errno=True)
    with open("/proc/thread-self/ns/net") as own, open(f"/var/run/netns/{ns}") as target:
        if libc.setns(target.fileno(), _CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {ns} failed")
        try:
            yield
        finally:
            if libc.setns(own.fileno(), _CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back failed")
