"""The shared metrics store: how fast it takes samples, and whether it changes what a race measures.

Starts two local Elasticsearch 8.19.21 nodes with bench's provisioner on 127.0.0.1: the benchmarked cluster and
the metrics store (a separate cluster, as it would be in a nightly setup). Then

1. write throughput: ``--samples`` request samples into the local SQLite store (one ``add_samples`` batch), then
   pushed from it into the metrics store (``TrialPush``, two Rally documents per sample); ``--rounds`` times,
   samples/s for each;
2. the race with the store on vs off: bulk-indexes generated nginx documents into a fresh one-shard index,
   alternating without and with the metrics store (ABBA ...), and prints each run's mean docs/s, each side's mean
   and spread, and the difference of the means. The store cluster runs in both cases; only the writes differ.

Numbers are printed, never judged.

    python benchmarks/metrics_store.py [--samples 100000] [--rounds 3] [--pairs 2] [--docs 200000] [--bulk-size 500]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import psutil
from rich.console import Console

from bench.driver.samples import RequestSample
from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterSpec
from bench.race.options import RaceOptions
from bench.race.race import run_race
from bench.trials.metrics_store import config as store_config
from bench.trials.metrics_store.pusher import TrialPush
from bench.trials.sqlite import TrialInfo, TrialStore, new_trial_id, utcnow

TRACK = Path(__file__).resolve().parent / "tracks" / "bulk-overhead"  # shared by the on/off benchmarks


def write_rates(store: store_config.StoreConfig, n: int, rounds: int) -> dict[str, object]:
    batch = [RequestSample("index-append", "index-append", "bulk", i % 8, 1000.0 + i * 1e-3, i * 1e-3, 0.02, 0.015,
                           500, "docs", 200_000, True, None, False, 0, 120, 200) for i in range(n)]
    sqlite_s, push_s = [], []
    with tempfile.TemporaryDirectory() as d, TrialStore(Path(d) / "bench.db") as local:
        push = TrialPush(local, store)
        for _ in range(rounds):
            tid = new_trial_id()
            local.create_trial(TrialInfo(id=tid, track="t", challenge="c", start_time=utcnow()))
            t = time.perf_counter()
            local.add_samples(tid, batch)
            sqlite_s.append(time.perf_counter() - t)
            local.finish_trial(tid, "complete")
            t = time.perf_counter()
            push.push(tid)
            push_s.append(time.perf_counter() - t)
        push.http.close()
    return {"samples": n, "rounds": rounds,
            "sqlite_samples_per_s": round(n / statistics.median(sqlite_s)),
            "store_samples_per_s": round(n / statistics.median(push_s)),
            "store_documents_per_s": round(2 * n / statistics.median(push_s)),
            "store_push_s": [round(x, 2) for x in push_s]}


def one_race(track: Path, target: str, params: dict[str, object], store: store_config.StoreConfig | None
             ) -> tuple[float, int]:
    store_config.configure(store)
    opts = RaceOptions(track_path=track, track_params=params, target_hosts=target, progress=False)
    result = run_race(opts, console=Console(file=io.StringIO()))
    assert result.summary is not None
    task = result.summary.task("index-append")
    assert task is not None and task.throughput is not None and task.error_rate == 0, task
    # the measured part's own rate: Rally's Mean Throughput also averages running means that carry the warmup
    return task.throughput.rate or task.throughput.mean, task.requests + task.warmup_requests


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=2, help="ABBA blocks count as two pairs each")
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--bulk-size", type=int, default=500)
    a = ap.parse_args()

    os.environ.setdefault("BENCH_CACHE", str(Path.home() / ".bench"))
    home = Path(tempfile.mkdtemp(prefix="bench-metrics-store-"))
    os.environ["BENCH_HOME"] = str(home)
    track = TRACK
    params = {"doc_count": a.docs, "bulk_indexing_clients": a.clients, "bulk_size": a.bulk_size}
    bench_prov = LocalProvisioner("store-bench-target", home / "target")
    store_prov = LocalProvisioner("store-bench-store", home / "store")
    runs: list[dict[str, object]] = []
    try:
        info = bench_prov.start(ClusterSpec(name="target", nodes=1, car=["defaults", "1gheap"]))
        store_info = store_prov.start(ClusterSpec(name="store", nodes=1, car=["defaults", "512mheap"]))
        store = store_config.from_url(store_info.hosts[0], prefix="benchmark")
        writes = write_rates(store, a.samples, a.rounds)
        print(json.dumps({"write_throughput": writes}), flush=True)
        target = ",".join(h.removeprefix("http://") for h in info.hosts)
        one_race(track, target, params, None)  # not counted: generates the corpus, warms the JIT
        order = [False, True, True, False] * ((a.pairs + 1) // 2)
        for on in order[: 2 * a.pairs]:
            t0 = time.monotonic()
            docs_s, requests = one_race(track, target, params, store if on else None)
            runs.append({"metrics_store": on, "docs_per_s": round(docs_s), "requests": requests,
                         "wall_s": round(time.monotonic() - t0, 1)})
            print(json.dumps(runs[-1]), flush=True)
    finally:
        store_config.reset()
        bench_prov.stop_all()
        store_prov.stop_all()

    def side(flag: bool) -> list[float]:
        return [float(r["docs_per_s"]) for r in runs if r["metrics_store"] is flag]  # type: ignore[arg-type]

    off, on = side(False), side(True)
    sd = lambda xs: statistics.stdev(xs) if len(xs) > 1 else float("nan")
    print(json.dumps({
        "write_throughput": writes,
        "store_off_docs_per_s": {"mean": round(statistics.mean(off)), "stdev": round(sd(off)), "runs": off},
        "store_on_docs_per_s": {"mean": round(statistics.mean(on)), "stdev": round(sd(on)), "runs": on},
        "difference_pct": round(100 * (statistics.mean(on) / statistics.mean(off) - 1), 2),
        "run_to_run_noise_pct": round(100 * sd(off) / statistics.mean(off), 2),
        "settings": {"docs": a.docs, "clients": a.clients, "bulk_size": a.bulk_size},
        "machine": f"{platform.node()} {psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, "
                   f"load avg {os.getloadavg()[0]:.1f}, Python {platform.python_version()}",
    }, indent=2))


if __name__ == "__main__":
    main()
