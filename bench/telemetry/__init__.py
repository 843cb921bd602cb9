"""Telemetry: devices that sample clusters and hosts while a race runs.

- ``config.py``   devices, their parameters and defaults, profiles; ``resolve_telemetry``
- ``device.py``   the device contract and shared helpers; ``runner.py`` runs devices in the background
- ``node_stats.py``, ``ccr_stats.py`` (+ ``ccr_models.py``: CCR answers and lag, reusable), ``host.py``,
  ``rally_stats.py`` (recovery-stats, shard-stats, segment-stats)
- ``summary.py``  the telemetry section of a race summary
- ``race_hook.py`` the race hook that runs the devices around the schedule (``start_telemetry``)

``attach_telemetry`` puts the telemetry section into a race's summary.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from bench.telemetry.config import DEVICES, TelemetryConfig, device_table, resolve_telemetry
from bench.telemetry.device import TelemetryContext
from bench.telemetry.runner import TelemetryRunner, create_devices
from bench.telemetry.section import TelemetrySummary, summarize_telemetry, telemetry_rows, with_telemetry

if TYPE_CHECKING:
    from bench.http.client import ClusterTarget
    from bench.results.summary import Summary
    from bench.trials.model import Trials

__all__ = [
    "DEVICES",
    "TelemetryConfig",
    "TelemetryContext",
    "TelemetryRunner",
    "TelemetrySummary",
    "attach_telemetry",
    "create_devices",
    "device_table",
    "resolve_telemetry",
    "start_telemetry",
    "summarize_telemetry",
    "telemetry_rows",
]


def race_context(targets: list[ClusterTarget], clusters: list[dict[str, Any]],
                 node_processes: Callable[[], dict[tuple[str, str], list[Any]]] | None,
                 worker_pids: Callable[[], list[int]]) -> TelemetryContext:
    """What the devices of one race see: its clusters, the nodes bench started, bench's own processes."""
    return TelemetryContext(targets={t.name: t for t in targets}, clusters={c["name"]: c for c in clusters},
                            node_processes=node_processes, driver_pids=lambda: [os.getpid(), *worker_pids()])


async def start_telemetry(config: TelemetryConfig, ctx: TelemetryContext, store: Trials,
                          trial_id: str) -> TelemetryRunner | None:
    """Start the configured devices; their rows go to the trial store as they come. None: no devices."""
    runner = TelemetryRunner(create_devices(config, ctx), lambda rows: store.add_telemetry(trial_id, rows))
    if not runner.devices:
        return None
    await runner.start()
    return runner


def attach_telemetry(summary: Summary | None, telemetry: pd.DataFrame) -> Summary | None:
    """Put the telemetry section (and its warnings) into a race summary; a race that measured nothing but
    has telemetry still gets a summary holding it."""
    return with_telemetry(summary, telemetry)
