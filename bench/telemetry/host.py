"""host: psutil on the load-driver machine.

Rows (cluster / node / metric):
- ``host`` / <hostname>: ``cpu.percent``, ``cpu.core.<i>.percent``, ``memory.used_bytes``, ``memory.percent``,
  ``disk.read_bytes`` / ``disk.write_bytes`` (since the race started), ``disk.read_iops`` / ``disk.write_iops``
  (over the last interval), ``net.<interface>.rx_bytes`` / ``tx_bytes`` (since the race started);
- <cluster> / <node>: each Elasticsearch node bench started (its JVMs summed), and each node of the other
  clusters whose process runs on this machine (found at open: the pid ``_nodes`` reports, listening on the node's
  HTTP port): ``process.cpu.percent`` (100 = one core), ``process.rss_bytes``, ``process.read_bytes``,
  ``process.write_bytes`` (only where the IO counters are readable), ``process.open_files``;
- ``driver`` / ``main`` and ``worker-<i>``: the same for bench's own processes, plus ``driver`` / ``all``
  ``process.cpu.percent``, the driver's total.

CPU percentages are over the interval since the previous sample, so the first sample has none (psutil's
first reading is always 0). The blocking psutil calls run in a thread so the race's loop never waits.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Any

import psutil

from bench.driver.samples import TelemetryRow
from bench.http.client import ClusterTarget, RawHttp
from bench.telemetry.device import HOST_SCOPE, Device, Sampled, TelemetryContext
from bench.util.redact import redact_text

log = logging.getLogger(__name__)

DRIVER = "driver"
NODES_PATH = "/_nodes/process,http"
NODES_FILTER = "nodes.*.name,nodes.*.process.id,nodes.*.http.publish_address"


def _counters(obj: Any) -> dict[str, float]:
    return {k: float(v) for k, v in obj._asdict().items()} if obj is not None else {}


def _port(publish_address: str) -> int | None:
    """``127.0.0.1:9200``, ``host/127.0.0.1:9200`` or ``[::1]:9200`` -> 9200."""
    tail = publish_address.rsplit(":", 1)
    return int(tail[1]) if len(tail) == 2 and tail[1].isdigit() else None


def local_node_pids(nodes_body: Any) -> dict[str, int]:
    """Node name -> pid, from a ``GET _nodes/process,http`` answer, for the nodes that run on this machine: the
    pid exists here and listens on the node's HTTP port (a pid from another machine is not taken for one here)."""
    out: dict[str, int] = {}
    nodes = nodes_body.get("nodes") if isinstance(nodes_body, dict) else None
    for node_id, node in (nodes or {}).items():
        pid = (node.get("process") or {}).get("id")
        port = _port(str((node.get("http") or {}).get("publish_address") or ""))
        if not isinstance(pid, int) or port is None:
            continue
        try:
            listening = {c.laddr.port for c in psutil.Process(pid).net_connections(kind="tcp")
                         if c.status == psutil.CONN_LISTEN}
        except psutil.Error:
            continue
        if port in listening:
            out[str(node.get("name") or node_id)] = pid
    return out


async def discover_node_pids(target: ClusterTarget, timeout: float) -> dict[str, int]:
    async with RawHttp(target, connections=1) as http:
        status, body = await http.request("GET", NODES_PATH, params={"filter_path": NODES_FILTER}, timeout=timeout)
    if status >= 400:
        raise RuntimeError(f"GET {NODES_PATH} answered HTTP {status}")
    return await asyncio.to_thread(local_node_pids, body)


class Host(Device):
    name = "host"

    def __init__(self, params: dict[str, Any], ctx: TelemetryContext) -> None:
        super().__init__(params, ctx)
        self.hostname = socket.gethostname()
        self._procs: dict[int, psutil.Process] = {}
        self._primed: set[int] = set()
        self._found: dict[tuple[str, str], list[int]] = {}  # nodes of clusters bench did not start, on this machine
        self._disk0 = _counters(psutil.disk_io_counters())
        self._net0 = {nic: _counters(c) for nic, c in psutil.net_io_counters(pernic=True).items()}
        self._last_disk = (time.monotonic(), self._disk0)
        psutil.cpu_percent(percpu=True)  # start psutil's interval now: the first sample then has a value
        self._cpu_primed = time.monotonic()
        for pid in self._all_pids():  # likewise for the processes known now
            try:
                p = self._procs[pid] = psutil.Process(pid)
                p.cpu_percent()
                self._primed.add(pid)
            except psutil.Error:
                pass

    def _all_pids(self) -> list[int]:
        pids = list(self.ctx.driver_pids()) if self.ctx.driver_pids is not None else []
        pids += [pid for pids_ in self._node_pids().values() for pid in pids_]
        return pids

    def _node_pids(self) -> dict[tuple[str, str], list[int]]:
        started = ({k: [p.pid for p in procs] for k, procs in self.ctx.node_processes().items()}
                   if self.ctx.node_processes is not None else {})
        return {**self._found, **started}

    async def open(self) -> None:
        """Find the local processes of nodes bench did not start (benchmark-only races on this machine)."""
        started = {c for c, _ in self._node_pids()}
        for name, target in self.ctx.targets.items():
            if name in started:
                continue
            try:
                pids = await discover_node_pids(target, self.request_timeout)
            except Exception as e:  # noqa: BLE001 - without them the nodes have no process rows, which says so
                log.info("host telemetry: nodes of %s not looked up: %s", name, redact_text(str(e)))
                continue
            for node, pid in pids.items():
                self._found[(name, node)] = [pid]
                try:
                    p = self._procs[pid] = psutil.Process(pid)
                    p.cpu_percent()  # starts its CPU interval, as for the processes known at start
                    self._primed.add(pid)
                except psutil.Error:
                    pass

    def scopes(self) -> list[str]:
        return [HOST_SCOPE]

    @property
    def request_timeout(self) -> float:
        return max(5.0, 2.0 * self.interval)

    async def sample(self, scope: str, ts: float) -> Sampled:
        return await asyncio.to_thread(self._sample, ts)

    # -- blocking part ---------------------------------------------------------------------------------
    def _sample(self, ts: float) -> Sampled:
        rows: list[TelemetryRow] = []
        add = lambda cluster, node, metric, value: rows.append(
            TelemetryRow(ts, cluster, node, self.name, metric, float(value)))
        h = self.hostname
        cores = psutil.cpu_percent(percpu=True)
        if cores and time.monotonic() - self._cpu_primed > 0.05:
            add(HOST_SCOPE, h, "cpu.percent", sum(cores) / len(cores))
            for i, c in enumerate(cores):
                add(HOST_SCOPE, h, f"cpu.core.{i}.percent", c)
        vm = psutil.virtual_memory()
        add(HOST_SCOPE, h, "memory.used_bytes", vm.total - vm.available)
        add(HOST_SCOPE, h, "memory.percent", vm.percent)
        disk = _counters(psutil.disk_io_counters())
        if disk:
            now = time.monotonic()
            last_t, last = self._last_disk
            for k in ("read_bytes", "write_bytes"):
                add(HOST_SCOPE, h, f"disk.{k}", disk[k] - self._disk0.get(k, 0.0))
            if now - last_t > 0.01:
                add(HOST_SCOPE, h, "disk.read_iops", (disk["read_count"] - last.get("read_count", 0.0)) / (now - last_t))
                add(HOST_SCOPE, h, "disk.write_iops",
                    (disk["write_count"] - last.get("write_count", 0.0)) / (now - last_t))
            self._last_disk = (now, disk)
        for nic, nic_io in psutil.net_io_counters(pernic=True).items():
            base = self._net0.setdefault(nic, {"bytes_recv": nic_io.bytes_recv, "bytes_sent": nic_io.bytes_sent})
            add(HOST_SCOPE, h, f"net.{nic}.rx_bytes", nic_io.bytes_recv - base["bytes_recv"])
            add(HOST_SCOPE, h, f"net.{nic}.tx_bytes", nic_io.bytes_sent - base["bytes_sent"])
        for (cluster, node), pids in self._node_pids().items():
            self._process_rows(add, cluster, node, pids)
        if self.ctx.driver_pids is not None:
            pids = self.ctx.driver_pids()
            total = 0.0
            seen = False
            for i, pid in enumerate(pids):
                cpu = self._process_rows(add, DRIVER, "main" if i == 0 else f"worker-{i - 1}", [pid])
                if cpu is not None:
                    total += cpu
                    seen = True
            if seen:
                add(DRIVER, "all", "process.cpu.percent", total)
        return Sampled(rows=rows)

    def _process_rows(self, add: Any, cluster: str, node: str, pids: list[int]) -> float | None:
        """Rows for the processes of one node (or one driver process), summed; returns their CPU %."""
        cpu, rss, rd, wr, files = 0.0, 0.0, 0.0, 0.0, 0.0
        have_cpu = have_any = have_io = False
        for pid in pids:
            p = self._procs.get(pid)
            try:
                if p is None:
                    p = self._procs[pid] = psutil.Process(pid)
                with p.oneshot():
                    c = p.cpu_percent()
                    if pid in self._primed:
                        cpu += c
                        have_cpu = True
                    self._primed.add(pid)
                    rss += p.memory_info().rss
                    have_any = True
                    try:
                        io = p.io_counters()
                        rd += io.read_bytes
                        wr += io.write_bytes
                        have_io = True
                    except (psutil.AccessDenied, AttributeError):
                        pass
                    try:
                        files += len(p.open_files())
                    except psutil.AccessDenied:
                        pass
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                self._procs.pop(pid, None)
                self._primed.discard(pid)
            except psutil.AccessDenied:
                continue
        if not have_any:
            return None
        if have_cpu:
            add(cluster, node, "process.cpu.percent", cpu)
        add(cluster, node, "process.rss_bytes", rss)
        if have_io:  # unreadable counters (another user's process) are no IO measured, not zero IO
            add(cluster, node, "process.read_bytes", rd)
            add(cluster, node, "process.write_bytes", wr)
        add(cluster, node, "process.open_files", files)
        return cpu if have_cpu else None
