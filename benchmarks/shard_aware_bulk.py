"""Shard-aware bulk (``"shard-aware": true``) against ordinary round-robin bulks, on a real local 3-node cluster.

Starts a 3-node Elasticsearch with bench's provisioner on 127.0.0.1, then for each shard count (default 3 and 30,
the seed study's) bulk-indexes the same generated nginx documents into a fresh index (0 replicas), alternating
round-robin and shard-aware runs ABBA so a drifting machine hits both alike. Per run (the whole race, the same
documents on both sides): indexing throughput (mean and median docs/s from bench's summary), the nodes' CPU seconds
(``_nodes/stats/process``, summed over the nodes), the load driver's CPU seconds (this process and its workers, with
their start-up and the bodies' preparation) and the bytes the nodes sent each other (``_nodes/stats/transport``:
forwarding). Then per shard count each side's mean and the ratio.
Numbers are printed, never judged. Both sides differ in ids too: shard-aware documents carry client-side ids (the
engine looks each id up before indexing), ordinary ones get auto-generated ids.

    python benchmarks/shard_aware_bulk.py [--pairs 2] [--docs 300000] [--clients 4] [--bulk-size 2000]
        [--shards 3,30] [--heap 1gheap]
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
from typing import Any

import psutil
import requests
from rich.console import Console

from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterSpec
from bench.race.options import RaceOptions
from bench.race.race import run_race

TRACK = """{
  "version": 2,
  "description": "shard-aware bulk vs round-robin bulk",
  "indices": [{"name": "routed", "body": "index.json"}],
  "corpora": [{"name": "nginx", "documents": [{"source-file": "nginx-documents.json",
               "document-count": {{ doc_count }}, "target-index": "routed",
               "generator": {"name": "nginx", "seed": 1}}]}],
  "schedule": [
    {"operation": {"operation-type": "delete-index"}},
    {"operation": {"operation-type": "create-index", "settings": {"index.number_of_shards": {{ shards }},
                                                                  "index.number_of_replicas": 0}}},
    {"operation": {"operation-type": "cluster-health", "request-params": {"wait_for_status": "green"},
                   "retry-until-success": true}},
    {"name": "index-append", "operation": {"operation-type": "bulk", "bulk-size": {{ bulk_size }},
                                           "shard-aware": {{ shard_aware }}},
     "warmup-time-period": 5, "clients": {{ clients }}}
  ]
}
"""


def _nodes(url: str, metric: str) -> dict[str, Any]:
    return requests.get(f"{url}/_nodes/stats/{metric}", timeout=30).json()["nodes"]


def _counters(url: str) -> tuple[float, int]:
    proc = _nodes(url, "process")
    trans = _nodes(url, "transport")
    cpu = sum(n["process"]["cpu"]["total_in_millis"] for n in proc.values()) / 1000.0
    return cpu, sum(n["transport"]["tx_size_in_bytes"] for n in trans.values())


def _driver_cpu() -> float:
    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.NoSuchProcess:
            pass
    return total + me.cpu_times().children_user + me.cpu_times().children_system


def one_race(track: Path, target: str, url: str, params: dict[str, object]) -> dict[str, Any]:
    cpu0, tx0 = _counters(url)
    drv0 = _driver_cpu()
    t0 = time.monotonic()
    result = run_race(RaceOptions(track_path=track, track_params=params, target_hosts=target, progress=False),
                      console=Console(file=io.StringIO()))
    wall = time.monotonic() - t0
    cpu1, tx1 = _counters(url)
    drv1 = _driver_cpu()
    assert result.summary is not None
    task = result.summary.task("index-append")
    assert task is not None and task.throughput is not None and task.error_rate == 0, task
    return {"shards": params["shards"], "shard_aware": params["shard_aware"] == "true",
            "docs_per_s_mean": round(task.throughput.rate or task.throughput.mean), "docs_per_s_median": round(task.throughput.median),
            "node_cpu_s": round(cpu1 - cpu0, 1), "driver_cpu_s": round(drv1 - drv0, 1),
            "node_to_node_MB": round((tx1 - tx0) / 2**20, 1), "wall_s": round(wall, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=2, help="per shard count; ABBA blocks count as two pairs each")
    ap.add_argument("--docs", type=int, default=300_000)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--bulk-size", type=int, default=2000)
    ap.add_argument("--shards", default="3,30")
    ap.add_argument("--heap", default="1gheap")
    a = ap.parse_args()

    os.environ.setdefault("BENCH_CACHE", str(Path.home() / ".bench"))
    os.environ["BENCH_HOME"] = tempfile.mkdtemp(prefix="bench-shard-aware-")
    track = Path(os.environ["BENCH_HOME"]) / "track"
    track.mkdir()
    (track / "track.json").write_text(TRACK)
    (track / "index.json").write_text("{}")
    provisioner = LocalProvisioner("shard-aware", Path(os.environ["BENCH_HOME"]) / "trial")
    info = provisioner.start(ClusterSpec(nodes=3, car=["defaults", a.heap]))
    runs: list[dict[str, Any]] = []
    try:
        target = ",".join(h.removeprefix("http://") for h in info.hosts)
        url = info.hosts[0] if info.hosts[0].startswith("http") else f"http://{info.hosts[0]}"
        base = {"doc_count": a.docs, "clients": a.clients, "bulk_size": a.bulk_size}
        for shards in [int(s) for s in a.shards.split(",")]:
            # not counted: generates the corpus, warms the JIT
            one_race(track, target, url, {**base, "shards": shards, "shard_aware": "false"})
            order = [False, True, True, False] * ((a.pairs + 1) // 2)
            for aware in order[: 2 * a.pairs]:
                runs.append(one_race(track, target, url, {**base, "shards": shards,
                                                          "shard_aware": "true" if aware else "false"}))
                print(json.dumps(runs[-1]), flush=True)
    finally:
        provisioner.stop_all()

    summary: dict[str, Any] = {}
    for shards in sorted({r["shards"] for r in runs}):
        side = {flag: [r for r in runs if r["shards"] == shards and r["shard_aware"] is flag] for flag in (False, True)}

        def mean(flag: bool, key: str) -> float:
            return statistics.mean(r[key] for r in side[flag])

        summary[f"{shards} shards"] = {
            key: {"round_robin": round(mean(False, key), 1), "shard_aware": round(mean(True, key), 1),
                  "ratio": round(mean(True, key) / mean(False, key), 3) if mean(False, key) else None}
            for key in ("docs_per_s_mean", "docs_per_s_median", "node_cpu_s", "driver_cpu_s",
                        "node_to_node_MB")}
    print(json.dumps({"summary": summary, "settings": vars(a),
                      "machine": f"{platform.node()} {psutil.cpu_count()} cores, "
                                 f"{psutil.virtual_memory().total / 2**30:.0f} GiB, load avg "
                                 f"{os.getloadavg()[0]:.1f}, Python {platform.python_version()}"}, indent=2))


if __name__ == "__main__":
    main()
