"""What the live view costs the driver: the same unpaced search race into the null sink (benchmarks/tracks/
search-ceiling: one match_all search by many clients, tens of thousands of samples a second, the highest sample
rate bench reaches here) run three ways, alternately (ABC, CBA, ...):

- ``quiet``: ``bench --quiet race``, no view (as benchmarks/search_ceiling.py runs it);
- ``terminal``: the live terminal view, bench's output on a pseudo-terminal (drained by this script);
- ``terminal+html``: the same and ``--live-html`` (the page rewritten every second).

Prints per run the searches per second of the measured phase (from the stored samples, warmup excluded), the CPU
seconds per second of bench's main process (the coordinator, where the view runs) and of its whole tree over the
measured phase, and both per search (µs: the driver's own cost, whatever else the machine ran; searches/s depend on
the CPU the machine left it). Numbers are printed, never judged:

    python benchmarks/live_view_cost.py [--clients 64] [--time-period 20] [--rounds 1]

``--micro`` instead feeds the terminal view (``bench.driver.progress.Progress``, drawing into a buffer as on a
terminal) batches of 5,000 search samples at 50,000 a second for 12 s, and prints its time per sample (redraws
included) and one redraw's time with the window full (500,000 answers).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import pty
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from bench.trials.sqlite import TrialStore
from benchmarks.driver_ceiling import tree_cpu
from benchmarks.nullsink import free_port, start_in_background

HERE = Path(__file__).resolve().parent
MODES = ("quiet", "terminal", "terminal+html")


def _cpu(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


def run(mode: str, port: int, a: argparse.Namespace) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="bench-live-cost-"))
    params = f"clients:{a.clients},time_period:{a.time_period},warmup:5"
    cmd = [sys.executable, "-m", "bench", *(["--quiet"] if mode == "quiet" else []), "race",
           f"--track-path={HERE / 'tracks' / 'search-ceiling'}", f"--target-hosts=127.0.0.1:{port}",
           f"--track-params={params}", "--report-format=json",
           *([f"--live-html={home / 'live.html'}"] if mode == "terminal+html" else [])]
    master, slave = pty.openpty()
    os.set_blocking(master, True)
    out = subprocess.DEVNULL if mode == "quiet" else slave
    proc = subprocess.Popen(cmd, env={**os.environ, "BENCH_HOME": str(home), "COLUMNS": "160"}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=out)
    os.close(slave)
    drained = [0]

    def drain() -> None:  # what a terminal does: read everything the view writes
        try:
            while chunk := os.read(master, 65536):
                drained[0] += len(chunk)
        except OSError:
            pass

    threading.Thread(target=drain, daemon=True).start()
    ps = psutil.Process(proc.pid)
    seen: dict[str, float] = {}
    while proc.poll() is None:
        time.sleep(0.5)
        db = home / "bench.db"
        try:
            if "t0" not in seen and db.exists():
                with TrialStore(db) as store:
                    trials = store.list_trials(1)
                    if trials and store.conn.execute("SELECT 1 FROM samples WHERE trial_id=? AND warmup=0 LIMIT 1",
                                                      (trials[0].id,)).fetchone():
                        seen.update(t0=time.monotonic(), main0=_cpu(ps), tree0=tree_cpu(ps))
            if "t0" in seen and time.monotonic() - seen["t0"] <= a.time_period - 1:
                seen.update(t1=time.monotonic(), main1=_cpu(ps), tree1=tree_cpu(ps))
        except psutil.NoSuchProcess:
            pass
    os.close(master)
    if proc.returncode != 0:
        sys.exit(f"{mode}: race failed ({proc.returncode})")
    with TrialStore(home / "bench.db") as store:
        df = store.samples(store.list_trials(1)[0].id)
    shutil.rmtree(home, ignore_errors=True)
    m = df[~df["warmup"].astype(bool)]
    dur = float((m["absolute_time"] + m["latency"]).max() - m["absolute_time"].min())
    span = seen["t1"] - seen["t0"]
    rate = len(m) / dur
    main_cores, tree_cores = (seen["main1"] - seen["main0"]) / span, (seen["tree1"] - seen["tree0"]) / span
    # CPU per search: the driver's own cost, whatever else the machine ran meanwhile (searches/s are not)
    return {"mode": mode, "searches_per_s": round(rate), "main_cpu": round(main_cores, 3), "tree_cpu": round(tree_cores, 2),
            "main_us_per_search": round(main_cores / rate * 1e6, 2), "tree_us_per_search": round(tree_cores / rate * 1e6, 2),
            "terminal_bytes": drained[0]}


def micro() -> None:
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from bench.driver.progress import Progress
    from bench.driver.samples import RequestSample

    p = Progress(Console(file=io.StringIO(), force_terminal=True, width=160))
    p.step_started([SimpleNamespace(name="q", time_period=12, warmup_time_period=0,  # type: ignore[list-item]
                                    ramp_down_time_period=None)])
    n, spent, end = 0, 0.0, time.monotonic() + 12
    while time.monotonic() < end:
        now = time.time()
        batch = [RequestSample("q", "q", "search", 0, now - 0.1 + i * 2e-5, 0.1, 0.001 * (1 + i % 50), 0.001, 1,
                               "ops", 100, True, None, False) for i in range(5000)]
        began = time.perf_counter()
        p.samples(batch)
        spent += time.perf_counter() - began
        n += len(batch)
        time.sleep(max(0.0, 0.1 - (time.perf_counter() - began)))
    began = time.perf_counter()
    for _ in range(20):
        p._refresh(time.time())
    redraw = (time.perf_counter() - began) / 20
    p.step_ended()
    print(json.dumps({"samples_per_s": round(n / 12), "us_per_sample": round(spent / n * 1e6, 2),
                      "redraw_ms": round(redraw * 1000, 2), "load": os.getloadavg()}), file=sys.__stderr__)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--time-period", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=1, help="rounds of the three modes, then reversed")
    ap.add_argument("--micro", action="store_true", help="the terminal view's own cost per sample (see above)")
    a = ap.parse_args()
    if a.micro:
        micro()
        return
    port = free_port()
    sink = start_in_background(port)
    try:
        print(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.node(),
                          "cpus": os.cpu_count(), "load": os.getloadavg()}))
        for r in range(a.rounds):
            for mode in MODES if r % 2 == 0 else reversed(MODES):
                print(json.dumps(run(mode, port, a)), flush=True)
    finally:
        for p in sink:
            p.kill()


if __name__ == "__main__":
    main()
