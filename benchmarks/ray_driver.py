"""The load driver on Ray: docs/s into the null sink with the Ray backend vs the local worker processes.

Starts the null bulk sink (benchmarks.nullsink) and a Ray cluster of its own on 127.0.0.1 (tests/support/ray_cluster.py: `ray
start --block` processes it stops at the end), then runs the driver-ceiling track (nginx corpus, bulk 5,000,
8 clients, looped) with

  local   --worker-processes=W                       (today's default backend)
  ray-1   --ray-address=... on a one-node Ray cluster (one worker: its one CPU)
  ray-2   the same after a second node joined          (one worker per node: two)

alternating local and ray-1 (ABBA, ``--pairs``), then ray-2 and local with two workers. Per run: docs/s (stored
samples, warmup excluded), the driver's CPU cores (bench's process tree plus the Ray worker actors), Ray's own
daemons' CPU, and Ray's start-up cost per race (joining the cluster, starting the actors, measuring their clocks:
the pool logs it). Numbers are printed, never judged.

    python benchmarks/ray_driver.py [--time-period 20] [--pairs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.trials.sqlite import TrialStore  # noqa: E402
from benchmarks.nullsink import free_port, start_in_background  # noqa: E402
from tests.support.ray_cluster import RayTestCluster, start_ray_cluster  # noqa: E402

TRACK = ROOT / "benchmarks" / "tracks" / "driver-ceiling"


def cpu(procs: list[psutil.Process]) -> dict[int, float]:
    """CPU seconds per process (by pid: processes come and go between two readings)."""
    out = {}
    for p in procs:
        try:
            t = p.cpu_times()
            out[p.pid] = t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return out


def used(first: dict[int, float], last: dict[int, float]) -> float:
    return sum(v - first.get(pid, 0.0) for pid, v in last.items())


def ray_processes(cluster: RayTestCluster | None) -> tuple[list[psutil.Process], list[psutil.Process]]:
    """(the bench worker actors, Ray's own daemons) of our Ray nodes."""
    actors, daemons = [], []
    for node in cluster.nodes if cluster else []:
        for p in node.processes():
            try:
                (actors if "RayWorker" in " ".join(p.cmdline()) else daemons).append(p)
            except psutil.NoSuchProcess:
                pass
    return actors, daemons


def run(a: argparse.Namespace, label: str, port: int, extra: list[str], cluster: RayTestCluster | None) -> dict:
    home = tempfile.mkdtemp(prefix="bench-ray-")
    env = {**os.environ, "BENCH_HOME": home, "PYTHONPATH": str(ROOT),
           "BENCH_CACHE": os.environ.get("BENCH_CACHE", str(Path.home() / ".bench"))}
    params = f"bulk_size:{a.bulk_size},clients:{a.clients},time_period:{a.time_period}"
    cmd = [sys.executable, "-m", "bench", "--quiet", "race", f"--track-path={TRACK}",
           f"--target-hosts=127.0.0.1:{port}", f"--track-params={params}", "--report-format=json", *extra]
    started = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ps = psutil.Process(proc.pid)
    first: tuple[float, dict, dict, dict] | None = None
    last: tuple[float, dict, dict, dict] | None = None
    seen = 0
    while proc.poll() is None:
        time.sleep(1)
        db = Path(home) / "bench.db"
        if not db.exists():
            continue
        with TrialStore(db) as store:
            trials = store.list_trials(1)
            n = int(store.conn.execute("SELECT COUNT(*) FROM samples WHERE trial_id=? AND warmup=0",
                                       (trials[0].id,)).fetchone()[0]) if trials else 0
        if not n or n == seen:
            continue  # before the measurement, or after it (no new samples): the workers may be gone
        seen = n
        try:
            tree = [ps, *ps.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        actors, daemons = ray_processes(cluster)
        reading = (time.monotonic(), cpu(tree), cpu(actors), cpu(daemons))
        first = first or reading
        # Per process its latest figure: a worker that ended is still counted up to its last reading.
        last = reading if last is None else (reading[0], *({**old, **new} for old, new in zip(last[1:], reading[1:])))
    out, err = proc.communicate()
    wall = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"{label}: race failed ({proc.returncode}): {err[-2000:]}")
    with TrialStore(Path(home) / "bench.db") as store:
        df = store.samples(store.list_trials(1)[0].id)
    m = df[~df["warmup"]]
    dur = (m["absolute_time"] + m["latency"]).max() - m["absolute_time"].min()
    log = (Path(home) / "logs" / "bench.log").read_text()
    startup = re.findall(r"started in ([0-9.]+) s", log)
    span = (last[0] - first[0]) if first and last and last[0] > first[0] else float("nan")
    return {
        "run": label, "docs_per_s": round(m["units"].sum() / dur), "errors": int((~m["success"]).sum()),
        "driver_cpu_cores": round((used(first[1], last[1]) + used(first[2], last[2])) / span, 2)
        if first and last else None,
        "ray_daemons_cpu_cores": round(used(first[3], last[3]) / span, 2) if first and last and cluster else None,
        "ray_startup_s": float(startup[-1]) if startup else None, "race_wall_s": round(wall, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time-period", type=int, default=20)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--bulk-size", type=int, default=5000)
    ap.add_argument("--pairs", type=int, default=2, help="local/ray-1 pairs, alternating ABBA; ray-2/local-2 too")
    a = ap.parse_args()

    # SIGTERM ends the benchmark through its finally: the Ray nodes and the sink it started stop with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    port = free_port()
    sinks = start_in_background(port)
    cluster = start_ray_cluster(Path(tempfile.mkdtemp(prefix="bray-")), nodes=1)
    runs: list[dict] = []
    try:
        ray = ["--ray-address", cluster.address]
        for what in (["local", "ray-1", "ray-1", "local"] * a.pairs)[: 2 * a.pairs]:
            runs.append(run(a, what, port, ["--worker-processes=1"] if what == "local" else ray, cluster))
            print(json.dumps(runs[-1]), flush=True)
        cluster.add_node()
        for what in (["ray-2", "local-2", "local-2", "ray-2"] * a.pairs)[: 2 * a.pairs]:
            runs.append(run(a, what, port, ["--worker-processes=2"] if what == "local-2" else ray, cluster))
            print(json.dumps(runs[-1]), flush=True)
    finally:
        cluster.stop()
        for s in sinks:
            s.terminate()

    def mean(label: str, key: str = "docs_per_s") -> float:
        xs = [r[key] for r in runs if r["run"] == label and r[key] is not None]
        return sum(xs) / len(xs) if xs else float("nan")

    print(json.dumps({
        "local_docs_per_s": round(mean("local")), "ray_1_node_docs_per_s": round(mean("ray-1")),
        "ray_1_node_share_of_local": round(mean("ray-1") / mean("local"), 3),
        "ray_2_nodes_docs_per_s": round(mean("ray-2")), "local_2_workers_docs_per_s": round(mean("local-2")),
        "ray_2_nodes_vs_1_node": round(mean("ray-2") / mean("ray-1"), 3),
        "ray_startup_s_mean": round((mean("ray-1", "ray_startup_s") + mean("ray-2", "ray_startup_s")) / 2, 2),
        "bulk_size": a.bulk_size, "clients": a.clients, "time_period": a.time_period,
        "machine": f"{platform.node()} {psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, "
                   f"Python {platform.python_version()}, load avg {os.getloadavg()[0]:.1f}",
    }, indent=2))


if __name__ == "__main__":
    main()
