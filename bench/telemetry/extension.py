"""What the telemetry extension registers with bench's seams (published as a ``bench.extensions`` entry point)."""

from __future__ import annotations


def setup() -> None:
    pass
    from bench.pipeline import register_race_hook
    from bench.telemetry.race_hook import TelemetryHook

    register_race_hook(TelemetryHook)
