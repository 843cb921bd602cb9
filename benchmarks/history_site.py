"""The history site's size and build time for a long synthetic history: N nights (default 365) of an experiment
with 4 variants × 2 repetitions, each trial a stored summary (indexing throughput with 2 % noise, a 15 % step
from two thirds of the way on, one night in 30 failed), plus 12 annotations; then one more night added and the site
brought up to date (the incremental build a nightly job does).

    python benchmarks/history_site.py [--nights 365]

Synthetic trials hold only summaries (no samples): the site reads nothing else of them.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil

VARIANTS = ("baseline", "soft-deletes", "ccr", "ccr-compressed")
EXPERIMENT = """
name: synthetic-nightly
baseline: baseline
repetitions: 2
race: {track: nginx, target-hosts: "127.0.0.1:9"}
variants: {baseline: {}, soft-deletes: {}, ccr: {}, ccr-compressed: {}}
study:
  indexing-task: {baseline: index, soft-deletes: index, ccr: index, ccr-compressed: index}
"""


def _night(store, rng: random.Random, night: int, nights: int, start: datetime) -> None:
    from bench.results.stats import THROUGHPUT_RULE, ThroughputStats
    from bench.results.summary import Summary, TaskSummary
    from bench.trials.sqlite import TrialInfo, new_trial_id

    run_id = (start + timedelta(days=night)).strftime("%Y%m%dT%H%M%S")
    failed = night % 30 == 29
    for rep in (1, 2):
        for k, variant in enumerate(VARIANTS):
            tid = new_trial_id()
            when = start + timedelta(days=night, minutes=rep * 10 + k)
            tags = {"experiment": "synthetic-nightly", "experiment-run": run_id, "variant": variant,
                    "repetition": str(rep), "experiment-track": "0"}
            store.create_trial(TrialInfo(id=tid, track="nginx", challenge="index-only", user_tags=tags,
                                         start_time=when, clusters=[{"name": "default", "engine": "elasticsearch",
                                                                     "version": "8.19.21"}], car=["defaults"]))
            if failed and variant == "ccr":
                store.finish_trial(tid, "failed", "node leader-0 died (exit 137)")
                continue
            level = 50_000 * (1 - 0.1 * k) * (0.85 if night >= nights * 2 // 3 else 1.0)
            med = level * (1 + rng.gauss(0, 0.02))
            tp = ThroughputStats(min=med * 0.9, mean=med, median=med, max=med * 1.08, unit="docs/s",
                                 rule=THROUGHPUT_RULE)
            store.set_summary(tid, Summary(tasks=[TaskSummary(task="index", operation_type="bulk", unit="docs",
                                                              throughput=tp, requests=100)]))
            store.finish_trial(tid, "complete")


def _size(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nights", type=int, default=365)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        os.environ["BENCH_HOME"] = str(Path(d) / "home")
        from bench.race.experiment import load_experiment
        from bench.reporting.site.build import build_site
        from bench.trials.annotations import Annotation
        from bench.trials.sqlite import TrialStore

        exp_file = Path(d) / "synthetic.yml"
        exp_file.write_text(EXPERIMENT)
        exp = load_experiment(exp_file)
        rng = random.Random(1)
        start = datetime(2025, 1, 1, 1, 30, tzinfo=UTC)
        t = time.perf_counter()
        with TrialStore() as store:
            for night in range(a.nights):
                _night(store, rng, night, a.nights, start)
        made = time.perf_counter() - t
        annotations = [Annotation(race_timestamp=(start + timedelta(days=i)).strftime("%Y%m%dT000000Z"),
                                  message=f"change #{i}") for i in range(0, a.nights, max(1, a.nights // 12))]
        out = Path(d) / "site"
        with TrialStore() as store:
            first = build_site(store, [exp], out, window=14, annotations=annotations)
            files, size = _size(out)
            exp_page = (out / "synthetic-nightly.html").stat().st_size
            _night(store, rng, a.nights, a.nights, start)
            again = build_site(store, [exp], out, window=14, annotations=annotations)
        print(f"{a.nights} nights x {len(VARIANTS)} variants x 2 repetitions ({a.nights * 8:,} trials, made in "
              f"{made:.1f} s), {first.charts} charts, on {platform.node()} ({psutil.cpu_count()} cores):")
        print(f"  full build {first.seconds:.1f} s: {files} files, {size / 1e6:.1f} MB (experiment page "
              f"{exp_page / 1e6:.2f} MB, {exp_page / max(first.charts, 1) / 1e3:.0f} kB per chart)")
        print(f"  one more night: {again.seconds:.1f} s, {len(again.written)} files written, {again.unchanged} "
              f"unchanged, {again.summaries_read} summaries read")


if __name__ == "__main__":
    main()
