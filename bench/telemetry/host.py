"""host: psutil on the load-driver machine.

Rows (cluster / node / metric):
- ``host`` / <hostname>: ``cpu.percent``, ``cpu.core.<i>.percent``, ``memory.used_bytes``, ``memory.percent``,
  ``disk.read_bytes`` / ``disk.write_bytes`` (since the race started), ``disk.read_iops`` / ``disk.write_iops``
  (over the last interval), ``net.<interface>.rx_bytes`` / ``tx_bytes`` (since the race started);
- <cluster> / <node>: each Elasticsearch node bench started (its JVMs summed): ``process.cpu.percent``
  (100 = one core), ``process.rss_bytes``, ``process.read_bytes``, ``process.write_bytes``, ``process.open_files``;
- ``driver`` / ``main`` and ``worker-<i>``: the same for bench's own processes, plus ``driver`` / ``all``
  ``process.cpu.percent``, the driver's total.

CPU percentages are over the interval since the previous sample, so the first sample has none (psutil's
first reading is always 0). The blocking psutil calls run in a thread so the race's loop never waits.
"""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import psutil

from bench.telemetry.device import HOST_SCOPE, Device, Sampled, TelemetryContext
from bench.trials import TelemetryRow

DRIVER = "driver"


def _counters(obj: Any) -> dict[str, float]:
    return {k: float(v) for k, v in obj._asdict().items()} if obj is not None else {}


class Host(Device):
    name = "host"

    def __init__(self, params: dict[str, Any], ctx: TelemetryContext) -> None:
        super().__init__(params, ctx)
        self.hostname = socket.gethostname()
        self._procs: dict[int, psutil.Process] = {}
        self._primed: set[int] = set()
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
        if self.ctx.node_processes is not None:
            pids += [p.pid for procs in self.ctx.node_processes().values() for p in procs]
        return pids

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
        for nic, c in psutil.net_io_counters(pernic=True).items():
            base = self._net0.setdefault(nic, {"bytes_recv": c.bytes_recv, "bytes_sent": c.bytes_sent})
            add(HOST_SCOPE, h, f"net.{nic}.rx_bytes", c.bytes_recv - base["bytes_recv"])
            add(HOST_SCOPE, h, f"net.{nic}.tx_bytes", c.bytes_sent - base["bytes_sent"])
        if self.ctx.node_processes is not None:
            for (cluster, node), procs in self.ctx.node_processes().items():
                self._process_rows(add, cluster, node, [p.pid for p in procs])
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
        have_cpu = have_any = False
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
        add(cluster, node, "process.read_bytes", rd)
        add(cluster, node, "process.write_bytes", wr)
        add(cluster, node, "process.open_files", files)
        return cpu if have_cpu else None
