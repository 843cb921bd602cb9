"""Runs the chosen telemetry devices in the background of a race.

One asyncio task per (device, scope) in the race's main process loop; the load runs in worker processes,
so sampling never competes with the driver's own loops. Each task samples at start, then every
``interval`` seconds on a fixed cadence (a slow sample skips ticks instead of drifting), and once more at
stop. Every attempt is one ``_sample`` row (value 1 = ok, 0 = failed; its ``raw`` is the device's document
or ``{"error": ...}``), written to the store as it comes. A failed sample is logged and counted; the device
tries again at the next tick and never ends the race.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable

from bench.driver.samples import TelemetryRow
from bench.telemetry.config import DEVICES, TelemetryConfig
from bench.telemetry.device import Device, TelemetryContext
from bench.util import redact
from bench.util.errors import StoreError

log = logging.getLogger(__name__)

SAMPLE_METRIC = "_sample"
ERROR_METRIC = "_error"
STOP_TIMEOUT = 30.0  # the final samples must not hold up the end of a race for long


def create_devices(config: TelemetryConfig, ctx: TelemetryContext) -> list[Device]:
    from bench.telemetry.ccr_stats import CcrStats
    from bench.telemetry.feature_stats import FEATURE_DEVICES
    from bench.telemetry.host import Host
    from bench.telemetry.node_stats import NodeStats
    from bench.telemetry.rally_stats import RecoveryStats, SegmentStats, ShardStats

    known: list[type[Device]] = [NodeStats, CcrStats, Host, RecoveryStats, ShardStats, SegmentStats, *FEATURE_DEVICES]
    classes = {c.name: c for c in known}
    assert set(classes) == {d for d, spec in DEVICES.items() if not spec.jvm}, "every sampling device needs a class"
    devices = [classes[name](config.device_params(name), ctx) for name in config.devices if name in classes]
    for d in devices:
        d.scopes()  # unknown cluster names fail before the race starts
    return devices


class TelemetryRunner:
    def __init__(self, devices: list[Device], sink: Callable[[list[TelemetryRow]], None]) -> None:
        self.devices = devices
        self.sink = sink
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.counts: dict[tuple[str, str], list[int]] = {}  # (device, scope) -> [samples, failed]
        self._opened: list[Device] = []

    async def start(self) -> None:
        for d in self.devices:
            try:
                await d.open()
                self._opened.append(d)
            except Exception as e:  # noqa: BLE001 - a device that cannot open records that, never fails the race
                self._record_failure(d, d.scopes()[0] if d.scopes() else "", time.time(), e)
                try:
                    await d.close()  # whatever it opened before failing
                except Exception:  # noqa: BLE001
                    pass
        try:
            for d in self._opened:
                await d.check()
        except BaseException:
            await self._close_all()  # a device the cluster cannot serve fails the race before the schedule
            raise
        for d in self._opened:
            if d.end_only:
                continue
            if d.bounds_only:
                for scope in d.scopes():
                    await self._take(d, scope)
                continue
            for scope in d.scopes():
                self._tasks.append(asyncio.create_task(self._loop(d, scope), name=f"telemetry-{d.name}-{scope}"))

    async def stop(self) -> None:
        """Take the last samples (and the end-only devices'), then close every device."""
        self._stop.set()
        try:
            if self._tasks:
                _, pending = await asyncio.wait(self._tasks, timeout=STOP_TIMEOUT)
                for t in pending:
                    t.cancel()
                if pending:
                    await asyncio.wait(pending, timeout=5)
            for d in self._opened:
                if d.end_only or d.bounds_only:
                    for scope in d.scopes():
                        await self._take(d, scope)
        finally:
            await self._close_all()

    async def _close_all(self) -> None:
        for d in self._opened:
            try:
                await d.close()
            except Exception as e:  # noqa: BLE001
                log.warning("closing telemetry device %s: %s", d.name, redact.redact_text(str(e)))
        self._opened = []

    async def _loop(self, device: Device, scope: str) -> None:
        interval = device.interval
        start = time.monotonic()
        tick = 0
        while True:
            stopping = self._stop.is_set()
            await self._take(device, scope)
            if stopping:
                return  # that was the sample at the end
            if self._stop.is_set():
                continue  # the race ended while this sample was taken: the end sample must start after it
            now = time.monotonic()
            tick = max(tick + 1, math.ceil((now - start) / interval))
            try:
                await asyncio.wait_for(self._stop.wait(), timeout=max(0.0, start + tick * interval - now))
            except TimeoutError:
                pass

    async def _take(self, device: Device, scope: str) -> None:
        ts = time.time()
        try:
            result = await asyncio.wait_for(device.sample(scope, ts), timeout=device.request_timeout + 5.0)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - any failure is a failed sample
            self._record_failure(device, scope, ts, e)
            return
        rows = list(result.rows)
        rows += [TelemetryRow(ts, scope, "", device.name, ERROR_METRIC, 1.0, {"error": redact.redact_text(err)})
                 for err in result.errors]
        rows.append(TelemetryRow(ts, scope, "", device.name, SAMPLE_METRIC, 1.0, result.raw))
        self.counts.setdefault((device.name, scope), [0, 0])[0] += 1
        self._write(rows)

    def _record_failure(self, device: Device, scope: str, ts: float, e: BaseException) -> None:
        text = redact.redact_text(f"{type(e).__name__}: {e}" if not str(e) or type(e).__name__ in (
            "TimeoutError", "ClientConnectorError", "ServerDisconnectedError") else str(e))
        if isinstance(e, TimeoutError):
            text = f"timed out after {device.request_timeout:.0f} s"
        c = self.counts.setdefault((device.name, scope), [0, 0])
        c[0] += 1
        c[1] += 1
        if c[1] <= 3 or c[1] % 60 == 0:  # a dead node must not flood the log
            log.warning("telemetry %s on %s: sample failed (%d so far): %s", device.name, scope, c[1], text)
        self._write([TelemetryRow(ts, scope, "", device.name, SAMPLE_METRIC, 0.0, {"error": text})])

    def _write(self, rows: list[TelemetryRow]) -> None:
        try:
            self.sink(rows)
        except StoreError as e:
            log.warning("telemetry rows not stored: %s", e)

