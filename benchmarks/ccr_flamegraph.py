"""Where CCR's CPU goes: the profile device on a real OpenSearch leader/follower pair with the replication plugin.

Starts the pair on 127.0.0.1 (OpenSearch 2.19.1, 512 MiB heap each, the plugin zip given), then races the nginx
track's ``baseline`` challenge into the leader alone and its ``ccr`` challenge into the pair, alternating
(baseline, ccr, ccr, baseline, ...), all with ``--telemetry=profile``. Then ``bench compare`` of the sides writes
the differential flame graphs (``--figures-dir``), and this prints, per CCR node, the frames whose share of the
samples grew most against the baseline's node, and the thread pools' shares. Numbers are printed, never judged.

    python benchmarks/ccr_flamegraph.py --plugin PATH/opensearch-cross-cluster-replication-2.19.1.0.zip \\
        [--docs 200000] [--pairs 1] [--interval 10] [--out ccr-flamegraphs]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
from rich.console import Console

from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterInfo, ClusterSpec
from bench.race.options import RaceOptions
from bench.race.race import run_race
from bench.telemetry.flamegraph import merge, parse_collapsed, pool_shares, top_changes
from bench.telemetry.profile import ProfileSection
from bench.util.home import trials_dir


def _put(url: str, body: dict[str, object]) -> None:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="PUT",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        r.read()


def race(challenge: str, hosts: str, params: dict[str, object], interval: float) -> str:
    opts = RaceOptions(track="nginx", challenge=challenge, target_hosts=hosts, track_params=params, progress=False,
                       telemetry=["profile"], telemetry_params={"profile-interval": interval},
                       user_tags={"variant": challenge})
    result = run_race(opts, console=Console(file=io.StringIO()))
    assert result.status == "complete", (challenge, result.status)
    print(json.dumps({"challenge": challenge, "trial": result.trial_id, "load_avg_1m": os.getloadavg()[0]}),
          flush=True)
    return result.trial_id


def stacks_of(trial: str, cluster: str, window: str) -> dict[str, int]:
    from bench.trials.sqlite import TrialStore

    with TrialStore() as store:
        summary = store.summary(trial)
    assert summary is not None
    section = ProfileSection.model_validate(summary.sections["profile"])
    out: dict[str, int] = {}
    for g in section.graphs:
        if g.cluster == cluster and g.task == window:
            out = merge(out, parse_collapsed((trials_dir() / trial / g.collapsed).read_text()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plugin", required=True, help="the replication plugin zip")
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--interval", type=float, default=10.0, help="profile-interval (ms)")
    ap.add_argument("--window", default="index-append", help="the task whose graphs are compared")
    ap.add_argument("--out", default="ccr-flamegraphs")
    a = ap.parse_args()
    os.environ.setdefault("BENCH_CACHE", str(Path.home() / ".bench"))
    os.environ["BENCH_HOME"] = tempfile.mkdtemp(prefix="bench-ccr-flamegraph-")
    params = {"doc_count": a.docs, "bulk_indexing_clients": 2, "bulk_size": 1000}
    provisioners: list[LocalProvisioner] = []

    def start(name: str) -> ClusterInfo:
        p = LocalProvisioner(f"ccr-flamegraph-{name}", Path(os.environ["BENCH_HOME"]) / name)
        provisioners.append(p)
        return p.start(ClusterSpec(name=name, car=["defaults", "512mheap"], engine="opensearch", version="2.19.1",
                                   plugins=[Path(a.plugin)]), timeout=300)

    trials: dict[str, list[str]] = {"baseline": [], "ccr": []}
    try:
        with ThreadPoolExecutor(2) as pool:
            leader, follower = pool.map(start, ("leader", "follower"))
        _put(f"{follower.hosts[0]}/_cluster/settings",
             {"persistent": {"cluster.remote.leader.seeds": leader.transport_addresses}})
        hosts = f"leader:{leader.hosts[0].removeprefix('http://')},follower:{follower.hosts[0].removeprefix('http://')}"
        for challenge in (["baseline", "ccr", "ccr", "baseline"] * a.pairs)[: 2 * a.pairs]:
            target = leader.hosts[0].removeprefix("http://") if challenge == "baseline" else hosts
            trials[challenge].append(race(challenge, target, params, a.interval))
    finally:
        for p in provisioners:
            p.stop_all()
    out = Path(a.out).absolute()
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "bench", "compare", ",".join(trials["baseline"]), ",".join(trials["ccr"]),
                    f"--figures-dir={out}"], check=False)
    base = merge(*(stacks_of(t, "default", a.window) for t in trials["baseline"]))
    report: dict[str, object] = {
        "machine": f"{platform.node()} {psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, "
                   f"load avg {os.getloadavg()[0]:.1f}",
        "settings": {"docs": a.docs, "pairs": a.pairs, "interval_ms": a.interval, "window": a.window},
        "baseline_samples": sum(base.values()), "baseline_pools": _pct(pool_shares(base))}
    for cluster in ("leader", "follower"):
        cand = merge(*(stacks_of(t, cluster, a.window) for t in trials["ccr"]))
        report[cluster] = {
            "samples": sum(cand.values()), "pools": _pct(pool_shares(cand)),
            "top_added_frames": [{"frame": c.frame, "baseline_pct": round(100 * c.base_share, 2),
                                  "ccr_pct": round(100 * c.share, 2), "added_points": round(100 * c.change, 2)}
                                 for c in top_changes(base, cand, 12)]}
    print(json.dumps(report, indent=2))


def _pct(shares: dict[str, float]) -> dict[str, float]:
    return {k: round(100 * v, 2) for k, v in sorted(shares.items(), key=lambda kv: -kv[1]) if v >= 0.01}


if __name__ == "__main__":
    main()
