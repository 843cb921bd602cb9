"""Driver ceiling: how many docs/s can bench's load driver push on this machine?

Starts the null bulk sink (benchmarks.nullsink: answers every _bulk with a canned success) on 127.0.0.1 and
runs a real `bench race` against it with the nginx corpus (bulk 5,000, 8 clients, 60 s by default).
Reports docs/s and MB/s (from the stored samples, warmup excluded) and the CPU cores the driver used
(bench's process tree, sink excluded) and the sink used. Against the same sink it also runs the raw probe
(benchmarks/raw_probe.py: bare asyncio re-sending prebuilt bodies of the same documents, the same clients and bulk
size, no bookkeeping) as the ceiling, alternating bench and probe (``--pairs``: bench, probe, probe, bench, ...), and
prints bench's docs/s as a share of the probe's, and its documents per CPU second of the driver as a share of the
probe's (the driver's own cost, whatever else the machine ran). Numbers are printed, never judged.

    python benchmarks/driver_ceiling.py [--workers 1] [--sink-processes 1] [--time-period 60] [--pairs 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from bench.trials.sqlite import TrialStore
from benchmarks.nullsink import free_port, start_in_background

HERE = Path(__file__).resolve().parent


def tree_cpu(proc: psutil.Process) -> float:
    """CPU seconds of a process and its live children (children that exited are in cpu_times().children_*)."""
    total = 0.0
    procs = [proc]
    try:
        procs += proc.children(recursive=True)
    except psutil.NoSuchProcess:
        pass
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.NoSuchProcess:
            pass
    return total


def bench_run(a: argparse.Namespace, port: int, sink_ps: list[psutil.Process]) -> dict:
    home = tempfile.mkdtemp(prefix="bench-ceiling-")
    env = {**os.environ, "BENCH_HOME": home, "BENCH_CACHE": os.environ.get("BENCH_CACHE", str(Path.home() / ".bench"))}
    params = f"bulk_size:{a.bulk_size},clients:{a.clients},time_period:{a.time_period}"
    cmd = [sys.executable, "-m", "bench", "--quiet", "race", f"--track-path={HERE / 'tracks' / 'driver-ceiling'}",
           f"--target-hosts=127.0.0.1:{port}", f"--track-params={params}", f"--worker-processes={a.workers}",
           "--report-format=json"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ps = psutil.Process(proc.pid)
    # CPU is sampled while the measured phase runs (after corpus preparation and warmup).
    t_cpu0, t_wall0, measured = None, None, None
    while proc.poll() is None:
        time.sleep(1)
        n = 0
        if not (Path(home) / "bench.db").exists():
            continue
        with TrialStore(Path(home) / "bench.db") as store:
            trials = store.list_trials(1)
            if trials:
                n = int(store.conn.execute("SELECT COUNT(*) FROM samples WHERE trial_id=? AND warmup=0",
                                           (trials[0].id,)).fetchone()[0])
        if n and t_cpu0 is None:
            t_cpu0, t_wall0, s0 = tree_cpu(ps), time.monotonic(), sum(tree_cpu(p) for p in sink_ps)
        if t_cpu0 is not None:
            try:
                measured = (tree_cpu(ps) - t_cpu0, time.monotonic() - t_wall0, sum(tree_cpu(p) for p in sink_ps) - s0)
            except psutil.NoSuchProcess:
                pass
    out, err = proc.communicate()
    if proc.returncode != 0:
        sys.exit(f"race failed ({proc.returncode}): {err[-2000:]}")
    with TrialStore(Path(home) / "bench.db") as store:
        trial = store.list_trials(1)[0]
        df = store.samples(trial.id)
    m = df[~df["warmup"]]
    start = m["absolute_time"].min()
    end = (m["absolute_time"] + m["latency"]).max()
    dur = end - start
    return {
        "tool": "bench", "docs_per_s": round(m["units"].sum() / dur), "mb_per_s": round(m["bytes_sent"].sum() / dur / 1e6, 1),
        "driver_cpu_cores": round(measured[0] / measured[1], 2) if measured else float("nan"),
        "sink_cpu_cores": round(measured[2] / measured[1], 2) if measured else float("nan"),
        "requests": int(len(m)), "errors": int((~m["success"]).sum()), "measured_s": round(dur, 1),
        "avg_doc_bytes": round(m["bytes_sent"].sum() / max(1, m["units"].sum()), 1),
    }


def probe_run(a: argparse.Namespace, port: int) -> dict:
    cmd = [sys.executable, str(HERE / "raw_probe.py"), f"--port={port}", f"--clients={a.clients}",
           f"--bulk-size={a.bulk_size}", f"--seconds={a.time_period}"]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(HERE.parent)})
    if done.returncode != 0:
        sys.exit(f"raw probe failed ({done.returncode}): {done.stderr[-2000:]}")
    return {"tool": "raw-probe", **json.loads(done.stdout.strip().splitlines()[-1])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=1, help="bench --worker-processes")
    ap.add_argument("--sink-processes", type=int, default=1)
    ap.add_argument("--time-period", type=int, default=60)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--bulk-size", type=int, default=5000)
    ap.add_argument("--pairs", type=int, default=1, help="bench/probe pairs, alternating ABBA")
    ap.add_argument("--no-probe", action="store_true", help="bench only")
    a = ap.parse_args()

    port = free_port()
    sinks = start_in_background(port, a.sink_processes)
    sink_ps = [psutil.Process(s.pid) for s in sinks]
    runs: list[dict] = []
    try:
        order = ["bench"] if a.no_probe else (["bench", "probe", "probe", "bench"] * a.pairs)[: 2 * a.pairs]
        for what in order:
            runs.append(bench_run(a, port, sink_ps) if what == "bench" else probe_run(a, port))
            print(json.dumps(runs[-1]), flush=True)
    finally:
        for s in sinks:
            s.terminate()

    def mean(tool: str) -> float | None:
        xs = [r["docs_per_s"] for r in runs if r["tool"] == tool]
        return sum(xs) / len(xs) if xs else None

    def per_cpu(tool: str) -> float | None:
        # docs per CPU second of the driver: what the driver's own code costs, whatever else ran on the machine
        key = "driver_cpu_cores" if tool == "bench" else "cpu_cores"
        xs = [r["docs_per_s"] / r[key] for r in runs if r["tool"] == tool and r.get(key, 0) > 0]
        return sum(xs) / len(xs) if xs else None

    b, p = mean("bench"), mean("raw-probe")
    bc, pc = per_cpu("bench"), per_cpu("raw-probe")
    print(json.dumps({
        "bench_docs_per_s": round(b) if b else None, "raw_probe_docs_per_s": round(p) if p else None,
        "bench_share_of_probe": round(b / p, 3) if b and p else None,
        "bench_docs_per_cpu_s": round(bc) if bc else None, "raw_probe_docs_per_cpu_s": round(pc) if pc else None,
        "bench_share_of_probe_per_cpu_s": round(bc / pc, 3) if bc and pc else None,
        "bulk_size": a.bulk_size, "clients": a.clients, "workers": a.workers, "sink_processes": a.sink_processes,
        "machine": f"{platform.node()} {psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, "
                   f"Python {platform.python_version()}, load avg {os.getloadavg()[0]:.1f}",
    }, indent=2))


if __name__ == "__main__":
    main()
