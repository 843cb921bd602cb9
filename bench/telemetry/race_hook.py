"""Telemetry's step in a race: the configured devices sample from right before the schedule starts until it
ended (also when it failed or was aborted, so the last samples are kept)."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator

from bench.driver.samples import TelemetryRow
from bench.race.pipeline import PlannedCluster, RaceHook, RacePlan, RaceSchedule
from bench.telemetry import race_context, resolve_telemetry, start_telemetry
from bench.telemetry.config import load_profile
from bench.telemetry.feature_summary import STARTUP_DEVICE
from bench.telemetry.jvm import BOOT_DEVICES, heap_dumps, jvm_options
from bench.util.errors import ConfigError

log = logging.getLogger(__name__)
PROFILE_DEVICE = "profile"  # attaches to the JVMs of local nodes, whoever started them (profile_hook.py)


def _profile_devices(profile: str | None) -> list[str]:
    return load_profile(profile).devices if profile else []


def startup_rows(race: RaceSchedule) -> None:
    """Rally's always-on node startup time: each started node's time from launch to a healthy cluster."""
    now = time.time()
    rows = [TelemetryRow(now, str(c.get("name")), node, STARTUP_DEVICE, "node_startup_time", float(secs))
            for c in race.clusters for node, secs in (c.get("node_startup_time_s") or {}).items()]
    if rows:
        race.store.add_telemetry(race.trial_id, rows)


class TelemetryHook(RaceHook):
    def before_provisioning(self, race: RacePlan) -> None:
        # bad devices, parameters or profiles fail before anything starts
        config = resolve_telemetry(race.opts.telemetry, race.opts.telemetry_params, race.opts.telemetry_profile)
        jvm = [d for d in config.jvm_devices() if d != PROFILE_DEVICE]
        if jvm and not race.clusters:
            raise ConfigError(f"--telemetry: {', '.join(jvm)} configure{'s' if len(jvm) == 1 else ''} the JVM of the "
                              "nodes bench starts, and this race starts none (--target-hosts): "
                              "leave them out, or let bench start the cluster")
        remote = [c.name for c in race.clusters if c.remote]
        elsewhere = [d for d in config.devices if d not in BOOT_DEVICES]
        if remote and elsewhere:
            # The schedule runs on the topology's driver host, which is given no devices; the nodes' own machines
            # are reached only to boot them and to fetch their logs.
            raise ConfigError(f"--telemetry: {', '.join(elsewhere)} cannot run on cluster(s) {', '.join(remote)} "
                              f"(their nodes run on cloud machines; only {', '.join(BOOT_DEVICES)}, which are JVM "
                              "options at the node's boot, do there): leave them out")

    def jvm_options(self, race: RacePlan, cluster: PlannedCluster) -> list[str]:
        return jvm_options(resolve_telemetry(race.opts.telemetry, race.opts.telemetry_params,
                                             race.opts.telemetry_profile))

    @contextlib.asynccontextmanager
    async def around_schedule(self, race: RaceSchedule) -> AsyncIterator[None]:
        o = race.opts
        startup_rows(race)
        telemetry = await start_telemetry(
            resolve_telemetry(o.telemetry, o.telemetry_params, o.telemetry_profile),
            race_context(race.targets, race.clusters, race.node_processes, race.worker_pids),
            race.store, race.trial_id)
        try:
            yield
        finally:
            if telemetry is not None:
                await telemetry.stop()
            if "heapdump" in (o.telemetry or []) or "heapdump" in _profile_devices(o.telemetry_profile):
                for line in await heap_dumps(race.targets):
                    log.info("%s", line)
