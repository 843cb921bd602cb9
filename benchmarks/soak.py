"""A paced soak: does bench's memory stay flat while a race runs for long?

Starts a real OpenSearch 2.19.1 leader/follower pair with the replication plugin on 127.0.0.1 (512 MiB heap each),
writes a small CCR track (generated documents; its bulk task is looped, paced by ``target-throughput`` and runs
for ``--minutes``), and runs ``bench race`` on it as a child process with ``--telemetry=ccr-stats``. Every
``--every`` seconds it records the resident memory (RSS) of that bench process and of its worker processes
(psutil), and prints one JSON line per reading; at the end a table, the growth from minute 2 to the last
minute, the trial id and the lag over time of the race's report. Numbers are printed, never judged.

    python benchmarks/soak.py --plugin PATH/opensearch-cross-cluster-replication-2.19.1.0.zip \\
        [--minutes 20] [--rate 2] [--bulk-size 500] [--every 60]
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
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: bench and the tests' support

from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterInfo, ClusterSpec
from tests.support.ccr_pair import write_ccr_corpus

INDEX = "soak"
TRACK = {
    "version": 2,
    "description": "paced soak: looped bulks into the leader while the follower follows",
    "indices": [{"name": INDEX, "body": "index.json"}],
    "corpora": [{"name": "soak", "documents": [{"source-file": "docs.json", "document-count": 0,
                                                 "target-index": INDEX}]}],
    "schedule": [
        {"operation": {"name": "create-leader", "operation-type": "create-index", "cluster": "leader"}},
        {"operation": {"name": "leader-health", "operation-type": "cluster-health", "cluster": "leader",
                       "index": INDEX, "request-params": {"wait_for_status": "yellow"},
                       "retry-until-success": True}},
        {"operation": {"name": "follow", "operation-type": "ccr-follow", "cluster": "follower",
                       "remote-cluster": "leader", "leader-index": INDEX, "index": INDEX}},
        {"name": "index-append", "clients": 2, "time-period": 0, "target-throughput": 0,
         "operation": {"name": "bulk", "operation-type": "bulk", "cluster": "leader", "bulk-size": 0,
                       "looped": True}},
        {"operation": {"name": "sync", "operation-type": "wait-for-followers-to-sync", "cluster": "follower",
                       "indices": [INDEX], "timeout": 300}},
    ],
}


def write_track(root: Path, *, seconds: int, rate: float, bulk_size: int, docs: int = 20_000) -> Path:
    write_ccr_corpus(root, docs)  # the live CCR tests' corpus and index
    track = json.loads(json.dumps(TRACK))
    track["corpora"][0]["documents"][0]["document-count"] = docs
    task = track["schedule"][3]
    task.update({"time-period": seconds, "target-throughput": rate})
    task["operation"]["bulk-size"] = bulk_size
    (root / "track.json").write_text(json.dumps(track, indent=1))
    return root


def rss_mb(proc: psutil.Process) -> tuple[float, float, int]:
    """(bench's own RSS, its children's summed RSS, how many children) in MiB."""
    own = proc.memory_info().rss
    kids = 0
    n = 0
    for c in proc.children(recursive=True):
        try:
            kids += c.memory_info().rss
            n += 1
        except psutil.Error:
            pass
    return own / 2**20, kids / 2**20, n


def start_pair(plugin: Path, home: Path) -> tuple[list[LocalProvisioner], ClusterInfo, ClusterInfo]:
    provisioners: list[LocalProvisioner] = []

    def start(name: str) -> ClusterInfo:
        p = LocalProvisioner(f"soak-{name}", home / name)
        provisioners.append(p)
        return p.start(ClusterSpec(name=name, car=["defaults", "512mheap"], engine="opensearch", version="2.19.1",
                                   plugins=[plugin]), timeout=300)

    try:
        with ThreadPoolExecutor(2) as pool:
            leader, follower = pool.map(start, ("leader", "follower"))
        connect(follower.hosts[0], leader.transport_addresses)
    except BaseException:
        for p in provisioners:
            p.stop_all()
        raise
    return provisioners, leader, follower


def connect(follower_url: str, seeds: list[str], timeout: float = 60.0) -> None:
    """The follower's remote cluster ``leader``, connected."""
    body = json.dumps({"persistent": {"cluster.remote.leader.seeds": seeds}}).encode()
    req = urllib.request.Request(f"{follower_url}/_cluster/settings", data=body, method="PUT",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        r.read()
    deadline = time.monotonic() + timeout
    while True:
        with urllib.request.urlopen(f"{follower_url}/_remote/info", timeout=60) as r:
            if (json.loads(r.read()).get("leader") or {}).get("connected"):
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"remote cluster leader not connected after {timeout} s")
        time.sleep(0.5)


def watch(cmd: list[str], env: dict[str, str], every: float, log: Path) -> tuple[int, list[dict[str, float]]]:
    readings: list[dict[str, float]] = []
    with log.open("w") as out:
        child = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        proc = psutil.Process(child.pid)
        t0 = time.monotonic()
        k = 1
        while child.poll() is None:
            time.sleep(max(0.0, t0 + k * every - time.monotonic()))
            if child.poll() is not None:
                break
            try:
                own, kids, n = rss_mb(proc)
            except psutil.Error:
                break
            row = {"minute": round(k * every / 60, 2), "bench_mb": round(own, 1), "workers_mb": round(kids, 1),
                   "workers": n, "total_mb": round(own + kids, 1), "load_1m": round(os.getloadavg()[0], 2)}
            readings.append(row)
            print(json.dumps(row), flush=True)
            k += 1
    return child.returncode, readings


def lag_over_time(trial: str) -> str:
    """The trial's follower lag time per interval (per hour from 2 h), as the race's report shows it, in markdown."""
    from tabulate import tabulate

    from bench.ccr.section import lag_table
    from bench.telemetry.section import summarize_telemetry
    from bench.trials.sqlite import TrialStore

    with TrialStore() as store:
        followers = summarize_telemetry(store.telemetry(trial)).followers
    out = []
    for f in followers:
        t = lag_table(f"{f.cluster}/{f.index}", f.lag_over_time)
        out.append(f"{t.name}\n\n{tabulate(t.rows, headers=t.headers, tablefmt='github', disable_numparse=True)}")
    return "\n\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plugin", required=True, help="the replication plugin zip")
    ap.add_argument("--minutes", type=float, default=20.0, help="how long the paced bulk task runs")
    ap.add_argument("--rate", type=float, default=2.0, help="bulk requests per second (target-throughput)")
    ap.add_argument("--bulk-size", type=int, default=500)
    ap.add_argument("--every", type=float, default=60.0, help="seconds between RSS readings")
    ap.add_argument("--out", default="soak-results.json")
    ap.add_argument("--lag-of", metavar="TRIAL", help="only print the lag table of a stored soak trial (BENCH_HOME "
                    "set to the soak's bench_home)")
    a = ap.parse_args()
    if a.lag_of:
        print(lag_over_time(a.lag_of))
        return
    os.environ.setdefault("BENCH_CACHE", str(Path.home() / ".bench"))
    home = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    env = {**os.environ, "BENCH_HOME": str(home / "bench-home")}
    track = write_track(home / "track", seconds=round(a.minutes * 60 + a.every / 2), rate=a.rate,
                        bulk_size=a.bulk_size)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    provisioners, leader, follower = start_pair(Path(a.plugin), home)
    try:
        hosts = f"leader:{leader.hosts[0].removeprefix('http://')},follower:{follower.hosts[0].removeprefix('http://')}"
        cmd = [sys.executable, "-m", "bench", "race", f"--track-path={track}", f"--target-hosts={hosts}",
               "--telemetry=ccr-stats", "--on-error=abort", "--all"]
        code, readings = watch(cmd, env, a.every, home / "race.log")
    finally:
        for p in provisioners:
            p.stop_all()
    log_text = (home / "race.log").read_text(errors="replace")
    trial = next((line.split()[1].rstrip(":") for line in log_text.splitlines() if line.startswith("Trial ")), None)
    by_minute = {round(r["minute"]): r for r in readings}
    last = max(by_minute) if by_minute else 0
    growth = (by_minute[last]["total_mb"] - by_minute[2]["total_mb"]) if 2 in by_minute and last > 2 else None
    report = {
        "started": started, "command": " ".join(sys.argv), "race": " ".join(cmd), "exit_code": code,
        "machine": f"{platform.node()} {psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB",
        "bench_home": str(home), "trial": trial, "readings": readings,
        "growth_minute_2_to_last_mb": growth, "last_minute": last,
        "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
    }
    Path(a.out).write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "readings"}, indent=1))
    print(log_text[-6000:])
    if trial:
        os.environ["BENCH_HOME"] = env["BENCH_HOME"]
        print(lag_over_time(trial))


if __name__ == "__main__":
    main()
