"""Search ceiling: how many small searches per second can bench's load driver send on this machine, at what
driver-added latency, and at what memory per client?

Starts the null sink (benchmarks.nullsink, ``--sink-processes`` processes sharing the port) and runs, alternately
(ABBA: bench, probe, wrk, wrk, probe, bench, ...), against the same sink:

- ``bench``: a real ``bench race`` of benchmarks/tracks/search-ceiling (one ``match_all`` search, size 10, by
  ``--clients`` clients over ``--workers`` worker processes, ``--time-period`` s after a warmup that covers the
  ramp-up): ops/s, p50/p99 latency and service time and the error rate from the stored samples (warmup excluded),
  the driver's CPU cores (bench's process tree) and memory per client (the workers' resident memory at the middle
  of the measurement, less that of a run with one client per worker, over the clients);
- ``probe``: benchmarks/search_probe.py, bare asyncio sending the same request (the ceiling of an asyncio driver);
- ``wrk``: Debian's native HTTP load generator (``apt-get install wrk``), one thread per worker, the same request,
  when installed.

The sink answers at once, so every millisecond of latency is the driver's (and the sink's queue). Unpaced clients
are a closed loop whose latency is clients / throughput (Little's law), whatever the driver; so what bench adds is
set against the probe's latency at the same clients (``bench_p99_over_probe_ms``), and ``--target-throughput``
paces bench at a rate the sink keeps up with, where its latency is all its own and the loopback's. CPU per request
(µs) is the driver's own cost whatever else the machine ran; ops/s depend on what the sink got. Numbers are
printed, never judged:

    python benchmarks/search_ceiling.py [--clients 64] [--workers 1] [--pairs 1] [--time-period 20]
        [--sink-processes 1] [--ramp-up 0] [--target-throughput 0] [--no-probe] [--no-wrk]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from bench.results.summary import summarize
from bench.trials.sqlite import TrialStore
from benchmarks.driver_ceiling import tree_cpu
from benchmarks.nullsink import free_port, start_in_background
from benchmarks.search_probe import BODY

HERE = Path(__file__).resolve().parent


def _workers_rss(ps: psutil.Process) -> int:
    total = 0
    for c in ps.children(recursive=True):
        try:
            if "resource_tracker" not in " ".join(c.cmdline()):
                total += c.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def bench_run(a: argparse.Namespace, port: int, clients: int, time_period: float) -> dict[str, Any]:
    home = tempfile.mkdtemp(prefix="bench-search-ceiling-")
    env = {**os.environ, "BENCH_HOME": home}
    warmup = max(5.0, 2 * a.ramp_up)
    params = f"clients:{clients},time_period:{time_period},warmup:{warmup}" + (
        f",ramp_up:{a.ramp_up}" if a.ramp_up else "") + (
        f",target_throughput:{a.target_throughput}" if a.target_throughput else "")
    cmd = [sys.executable, "-m", "bench", "--quiet", "race", f"--track-path={HERE / 'tracks' / 'search-ceiling'}",
           f"--target-hosts=127.0.0.1:{port}", f"--track-params={params}", f"--worker-processes={a.workers}",
           "--report-format=json"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ps = psutil.Process(proc.pid)
    seen: dict[str, float] = {}

    def watch() -> None:  # CPU over the measured phase; workers' memory at its middle
        started = None
        while proc.poll() is None:
            time.sleep(0.5)
            db = Path(home) / "bench.db"
            if started is None and db.exists():
                with TrialStore(db) as store:
                    trials = store.list_trials(1)
                    if trials and store.conn.execute("SELECT 1 FROM samples WHERE trial_id=? AND warmup=0 LIMIT 1",
                                                      (trials[0].id,)).fetchone():
                        started = time.monotonic()
                        seen["cpu0"], seen["t0"] = tree_cpu(ps), started
            if started is not None and time.monotonic() - started <= time_period:  # the workers still live
                try:
                    seen["cpu1"], seen["t1"] = tree_cpu(ps), time.monotonic()
                    if "rss" not in seen and time.monotonic() - started >= time_period / 2:
                        seen["rss"] = _workers_rss(ps)
                except psutil.NoSuchProcess:
                    pass

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out, err = proc.communicate()
    watcher.join()
    if proc.returncode != 0:
        sys.exit(f"race failed ({proc.returncode}): {err[-2000:]}")
    with TrialStore(Path(home) / "bench.db") as store:
        df = store.samples(store.list_trials(1)[0].id)
    shutil.rmtree(home, ignore_errors=True)
    t = summarize(df).tasks[0]
    m = df[~df["warmup"].astype(bool)]
    dur = float((m["absolute_time"] + m["latency"]).max() - m["absolute_time"].min())
    cores = (seen["cpu1"] - seen["cpu0"]) / (seen["t1"] - seen["t0"]) if "t1" in seen else float("nan")
    return {"tool": "bench", "clients": clients, "workers": a.workers, "ops_per_s": round(len(m) / dur),
            "latency_ms_p50_p99": [round(t.latency.get(50.0, float("nan")), 2), round(t.latency.get(99.0, float("nan")), 2)],
            "service_ms_p50_p99": [round(t.service_time.get(50.0, float("nan")), 2),
                                   round(t.service_time.get(99.0, float("nan")), 2)],
            "errors": f"{t.failed_requests} of {t.requests}", "driver_cpu_cores": round(cores, 2),
            "cpu_us_per_request": round(cores * 1e6 / (len(m) / dur), 1), "workers_rss_mb": round(seen.get("rss", 0) / 2**20),
            "requests": int(len(m))}


def probe_run(a: argparse.Namespace, port: int) -> dict[str, Any]:
    cmd = [sys.executable, str(HERE / "search_probe.py"), f"--port={port}", f"--clients={a.clients}",
           f"--seconds={a.time_period}"]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(HERE.parent)})
    if done.returncode != 0:
        sys.exit(f"search probe failed ({done.returncode}): {done.stderr[-2000:]}")
    r = json.loads(done.stdout.strip().splitlines()[-1])
    return {"tool": "probe", "clients": a.clients, "ops_per_s": r["ops_per_s"],
            "latency_ms_p50_p99": r["latency_ms_p50_p99"], "driver_cpu_cores": r["cpu_cores"],
            "cpu_us_per_request": round(r["cpu_cores"] * 1e6 / max(1, r["ops_per_s"]), 1)}


WRK_SCRIPT = f'wrk.method = "POST"\nwrk.body = \'{BODY.decode()}\'\nwrk.headers["Content-Type"] = "application/json"\n'


def _ms(text: str) -> float:
    v, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def wrk_run(a: argparse.Namespace, port: int, work: Path) -> dict[str, Any]:
    script = work / "search.lua"
    script.write_text(WRK_SCRIPT)
    threads = max(1, a.workers)
    cmd = ["wrk", f"-t{threads}", f"-c{max(a.clients, threads)}", f"-d{int(a.time_period)}s", "--latency",
           "-s", str(script), f"http://127.0.0.1:{port}/logs/_search"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ps = psutil.Process(p.pid)
    t0 = time.monotonic()
    cpu0 = sum(ps.cpu_times()[:2])
    cpu = 0.0
    while p.poll() is None:
        try:
            cpu = sum(ps.cpu_times()[:2]) - cpu0
        except psutil.NoSuchProcess:
            break
        time.sleep(0.5)
    out, err = p.communicate()
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"wrk failed ({p.returncode}): {err[-2000:]}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    pct = dict(re.findall(r"^\s+(50|99)%\s+(\S+)$", out, re.M))
    errors = re.search(r"Socket errors: (.*)$", out, re.M)
    return {"tool": "wrk", "clients": a.clients, "threads": threads, "ops_per_s": round(rps),
            "latency_ms_p50_p99": [_ms(pct["50"]), _ms(pct["99"])], "driver_cpu_cores": round(cpu / wall, 2),
            "cpu_us_per_request": round(cpu / wall * 1e6 / max(1.0, rps), 1),
            "errors": errors.group(1) if errors else "0"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--workers", type=int, default=1, help="bench --worker-processes (and wrk threads)")
    ap.add_argument("--sink-processes", type=int, default=1)
    ap.add_argument("--time-period", type=float, default=20)
    ap.add_argument("--target-throughput", type=float, default=0.0,
                    help="pace bench's clients at this many searches/s in all (the probe and wrk do not pace)")
    ap.add_argument("--ramp-up", type=float, default=0.0, help="bench's ramp-up-time-period (warmup covers it)")
    ap.add_argument("--pairs", type=int, default=1, help="rounds of bench, probe, wrk then reversed (ABBA)")
    ap.add_argument("--no-probe", action="store_true")
    ap.add_argument("--no-wrk", action="store_true")
    ap.add_argument("--no-memory", action="store_true", help="skip the one-client-per-worker memory baseline")
    a = ap.parse_args()
    tools = ["bench"] + ([] if a.no_probe else ["probe"]) + ([] if a.no_wrk or not shutil.which("wrk") else ["wrk"])
    order: list[str] = []
    for i in range(a.pairs):
        order += tools if i % 2 == 0 else tools[::-1]
    port = free_port()
    sinks = start_in_background(port, a.sink_processes)
    work = Path(tempfile.mkdtemp(prefix="search-ceiling-"))
    runs: list[dict[str, Any]] = []
    base_rss = None
    try:
        if not a.no_memory:
            base_rss = bench_run(a, port, a.workers, 5)["workers_rss_mb"]
        for what in order:
            if what == "bench":
                r = bench_run(a, port, a.clients, a.time_period)
                if base_rss is not None:
                    r["memory_kb_per_client"] = round((r["workers_rss_mb"] - base_rss) * 1024 / a.clients, 1)
            elif what == "probe":
                r = probe_run(a, port)
            else:
                r = wrk_run(a, port, work)
            runs.append(r)
            print(json.dumps(r), flush=True)
    finally:
        for s in sinks:
            s.terminate()
        shutil.rmtree(work, ignore_errors=True)

    def mean(tool: str, key: str) -> float | None:
        xs = [r[key] for r in runs if r["tool"] == tool and isinstance(r.get(key), (int, float))]
        return sum(xs) / len(xs) if xs else None

    b, p = mean("bench", "ops_per_s"), mean("probe", "ops_per_s")
    bc, pc = mean("bench", "cpu_us_per_request"), mean("probe", "cpu_us_per_request")
    p99s = {tool: [r["latency_ms_p50_p99"][1] for r in runs if r["tool"] == tool] for tool in ("bench", "probe")}
    bl, pl = (sum(v) / len(v) if v else None for v in (p99s["bench"], p99s["probe"]))
    print(json.dumps({
        "bench_ops_per_s": b, "probe_ops_per_s": p, "wrk_ops_per_s": mean("wrk", "ops_per_s"),
        "bench_share_of_probe": round(b / p, 3) if b and p else None,
        # What bench adds to a bare asyncio loop's latency on the same sink, clients and machine.
        "bench_p99_over_probe_ms": round(bl - pl, 2) if bl is not None and pl is not None else None,
        "bench_cpu_us_per_request": bc, "probe_cpu_us_per_request": pc,
        "bench_share_of_probe_per_cpu_s": round(pc / bc, 3) if bc and pc else None,
        "clients": a.clients, "workers": a.workers, "sink_processes": a.sink_processes,
        "machine": f"{platform.node()} {psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, "
                   f"Python {platform.python_version()}, load avg {os.getloadavg()[0]:.1f}",
    }, indent=2))


if __name__ == "__main__":
    main()
