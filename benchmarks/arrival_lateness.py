"""How late paced searches go out: Rally's schedule (every client of a worker due at the same instant, each
``clients / rate`` s) against the arrival-rate schedule (iterations due every ``1 / rate`` s, each on a free
client), at the same rate and clients, into the null sink.

Starts the null sink (benchmarks.nullsink, one process) and runs, alternately (ABBA: rally, arrival, arrival,
rally, ...), real ``bench race``s of benchmarks/tracks/search-ceiling (``target-throughput``) and
benchmarks/tracks/search-arrival (``constant-arrival-rate``). Lateness is each measured request's send time less
its due time (latency - service time); printed as median and p99 per run with the achieved rate, the dropped
iterations and the machine's load average (this machine is shared: a loaded run says so):

    python benchmarks/arrival_lateness.py [--rate 20000] [--clients 64] [--workers 1] [--pairs 1]
        [--time-period 20] [--distribution even] [--driver-cpus 1 --sink-cpus 0]

``--driver-cpus`` is bench's option (its workers on those CPUs, its own process off them); ``--sink-cpus`` pins the
sink, which stands in for a cluster on machines of its own, to others.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from bench.provision.cpus import parse_cpu_list, pin_process
from bench.trials.sqlite import TrialStore
from bench.trials.summary import stored_summary
from benchmarks.nullsink import free_port, start_in_background

HERE = Path(__file__).resolve().parent


def race(a: argparse.Namespace, port: int, mode: str) -> dict[str, Any]:
    home = tempfile.mkdtemp(prefix="bench-arrival-lateness-")
    params = f"clients:{a.clients},time_period:{a.time_period},warmup:{a.warmup}"
    if mode == "rally":
        track, params = "search-ceiling", params + f",target_throughput:{a.rate}"
    else:
        track, params = "search-arrival", params + f",rate:{a.rate},distribution:{a.distribution}"
    load_before = os.getloadavg()[0]
    cmd = [sys.executable, "-m", "bench", "--quiet", "race", f"--track-path={HERE / 'tracks' / track}",
           f"--target-hosts=127.0.0.1:{port}", f"--track-params={params}", f"--worker-processes={a.workers}",
           "--report-format=json", *([f"--driver-cpus={a.driver_cpus}"] if a.driver_cpus else [])]
    done = subprocess.run(cmd, env={**os.environ, "BENCH_HOME": home}, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"race failed ({done.returncode}): {done.stderr[-2000:]}")
    with TrialStore(Path(home) / "bench.db") as store:
        trial = store.list_trials(1)[0]
        df = store.samples(trial.id)
        summary = stored_summary(store, trial.id)
    shutil.rmtree(home, ignore_errors=True)
    m = df[~df["warmup"].astype(bool)]
    late = (m["latency"].to_numpy() - m["service_time"].to_numpy()) * 1000.0
    dur = float((m["absolute_time"] + m["latency"]).max() - m["absolute_time"].min())
    ts = summary.tasks[0] if summary is not None else None
    return {"schedule": mode, "driver_cpus": a.driver_cpus, "sink_cpus": a.sink_cpus, "rate": a.rate,
            "clients": a.clients, "workers": a.workers,
            "sent_per_s": round(len(m) / dur), "lateness_ms_p50": round(float(np.percentile(late, 50)), 2),
            "lateness_ms_p99": round(float(np.percentile(late, 99)), 2),
            "service_ms_p50": round(float(np.median(m["service_time"])) * 1000.0, 2),
            "errors": int((~m["success"].astype(bool)).sum()),
            "scheduled": ts.scheduled_iterations if ts else None, "dropped": ts.dropped_iterations if ts else None,
            "dropped_driver_late": ts.dropped_late_iterations if ts else None,
            "load_avg_1m_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=float, default=20000)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--time-period", type=float, default=20)
    ap.add_argument("--warmup", type=float, default=5)
    ap.add_argument("--pairs", type=int, default=1, help="rounds of rally then arrival, then reversed (ABBA)")
    ap.add_argument("--distribution", default="even", choices=["even", "poisson"])
    ap.add_argument("--only", choices=["rally", "arrival"], help="run one schedule only")
    ap.add_argument("--driver-cpus", help="bench's --driver-cpus for every race")
    ap.add_argument("--sink-cpus", help="pin the sink's process to these CPUs (a Linux CPU list)")
    a = ap.parse_args()
    modes = [a.only] if a.only else ["rally", "arrival"]
    order: list[str] = []
    for i in range(a.pairs):
        order += modes if i % 2 == 0 else modes[::-1]
    port = free_port()
    sinks = start_in_background(port, 1)
    if a.sink_cpus:
        for s in sinks:
            assert s.pid is not None
            pin_process(s.pid, parse_cpu_list(a.sink_cpus))
    try:
        for mode in order:
            print(json.dumps(race(a, port, mode)), flush=True)
    finally:
        for s in sinks:
            s.terminate()
    print(json.dumps({"machine": f"{platform.node()} {psutil.cpu_count()} cores, "
                      f"{psutil.virtual_memory().total / 2**30:.0f} GiB, Python {platform.python_version()}"}))


if __name__ == "__main__":
    main()
