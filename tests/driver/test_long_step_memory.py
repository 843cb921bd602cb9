"""What the driver keeps per sample or per probe wake-up stays bounded however long a step runs: the loop probe counts
its lateness in buckets (bench/driver/loop_load.py), the progress display forgets arrivals older than its window
also when it is off (bench/driver/progress.py)."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from bench.driver.loop_load import LoopProbe, bucket_percentile, lag_bucket
from bench.driver.progress import Progress
from bench.driver.samples import RequestSample
from bench.track.model import Operation, Task


def test_the_probe_keeps_buckets_not_wake_ups_and_its_percentiles_stay_close_to_numpys() -> None:
    rng = random.Random(7)
    lags = [rng.expovariate(1 / 0.002) for _ in range(200_000)] + [0.75, 3.0]  # ~3 h of wake-ups, two stalls
    probe = LoopProbe(clients=1, tasks=("t",))
    for lag in lags:
        probe.record(lag)
    assert len(probe._lags) < 2_000  # not 200,002 floats
    load = probe.result()
    for q, got in ((50, load.lag_p50_ms), (99, load.lag_p99_ms)):
        exact = float(np.percentile(lags, q)) * 1000
        assert got == pytest.approx(exact, abs=0.01, rel=0.005), q  # 10 µs buckets below 10 ms, 1 % above
    assert load.lag_max_ms == pytest.approx(3000.0)  # the maximum is kept exactly
    counts = Counter(lag_bucket(x) for x in (0.02, 0.04))
    assert bucket_percentile(counts, 50) == pytest.approx(0.03, rel=0.01)
    assert bucket_percentile(Counter(), 99) == 0.0


def test_the_live_view_keeps_its_last_seconds_only_and_nothing_with_nothing_to_show(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1_000_000.0]
    monkeypatch.setattr("bench.driver.progress.time.time", lambda: clock[0])
    task = Task(name="bulk", operation=Operation(name="bulk", operation_type="bulk"))
    frames: list[object] = []
    shown = Progress(enabled=False, frames=[frames.append])  # the live page of a --quiet race
    quiet = Progress(enabled=False)
    for progress in (shown, quiet):
        progress.step_started([task])
    for _ in range(3600):  # an hour, ten samples a second
        clock[0] += 1.0
        sample = RequestSample("bulk", "bulk", "bulk", 0, clock[0] - 0.5, 0.0, 0.01, 0.01, 100, "docs", 10, True,
                               None, False)
        for progress in (shown, quiet):
            progress.samples([sample] * 10)
    window = shown._tasks["bulk"].window
    assert window.requests == 36_000 and window.units == {"docs": 3_600_000} and len(frames) == 3600
    assert len(window.seconds) <= window.window + 5  # the seconds the view reads, not an hour of them
    assert quiet._tasks["bulk"].window.requests == 0 and not quiet._tasks["bulk"].window.seconds
