"""How fast the trial store takes samples: 100k RequestSamples in one add_samples batch, 5 rounds.

    python benchmarks/store_writes.py
"""

from __future__ import annotations

import platform
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from bench.driver.samples import RequestSample
from bench.trials.sqlite import TrialInfo, TrialStore, new_trial_id, utcnow


def main() -> None:
    n = 100_000
    batch = [RequestSample("bulk", "bulk", "bulk", i % 8, 1000.0 + i * 1e-3, i * 1e-3, 0.02, 0.015, 5000, "docs",
                           2_000_000, True, None, False, 0) for i in range(n)]
    times = []
    with tempfile.TemporaryDirectory() as d, TrialStore(Path(d) / "bench.db") as store:
        for _ in range(5):
            tid = new_trial_id()
            store.create_trial(TrialInfo(id=tid, track="t", challenge="c", start_time=utcnow()))
            t = time.perf_counter()
            store.add_samples(tid, batch)
            times.append(time.perf_counter() - t)
    print(f"add_samples({n:,}): median {statistics.median(times):.3f} s, min {min(times):.3f} s "
          f"({n / statistics.median(times):,.0f} samples/s) on {platform.node()}, {psutil.cpu_count()} cores")


if __name__ == "__main__":
    main()
