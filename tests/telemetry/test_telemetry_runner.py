"""The runner's cadence around the end of a race, with a device whose samples take a while."""

from __future__ import annotations

import asyncio
import time
from typing import ClassVar

from bench.telemetry.device import Device, Sampled, TelemetryContext
from bench.telemetry.runner import SAMPLE_METRIC, TelemetryRunner
from bench.trials.sqlite import TelemetryRow


class SlowDevice(Device):
    name: ClassVar[str] = "slow"

    def scopes(self) -> list[str]:
        return ["host"]

    async def sample(self, scope: str, ts: float) -> Sampled:
        await asyncio.sleep(0.3)
        return Sampled(raw={"taken_at": ts})


def test_the_end_sample_starts_after_the_race_ended_even_when_a_sample_was_in_flight() -> None:
    rows: list[TelemetryRow] = []

    async def run() -> float:
        runner = TelemetryRunner([SlowDevice({"slow-sample-interval": 1.0}, TelemetryContext(targets={}))],
                                 rows.extend)
        await runner.start()
        await asyncio.sleep(0.1)  # the first sample is in flight now
        ended = time.time()
        await runner.stop()
        return ended

    ended = asyncio.run(run())
    marks = sorted(r.timestamp for r in rows if r.metric == SAMPLE_METRIC)
    assert len(marks) == 2, marks
    assert marks[0] < ended <= marks[1]  # the one in flight at the end does not count as the end sample
