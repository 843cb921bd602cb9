"""Telemetry overhead: does sampling node-stats + host (or other devices, ``--devices``) change indexing throughput?

Starts one local Elasticsearch node (bench's provisioner, 127.0.0.1), then bulk-indexes generated nginx
documents into a fresh one-shard index repeatedly, alternating without and with ``--telemetry=node-stats,host``
(order ABBA ABBA ... so slow drift of the machine hits both sides alike). Reports each run's mean indexing
throughput, each side's mean and standard deviation, the difference of the means, and the run-to-run noise
(the baseline's standard deviation and range). Every race is stored with the tag ``telemetry=off|on``, and
``bench compare tag:telemetry=off tag:telemetry=on`` (bench's own compare, run on them) gives the difference's
confidence interval and verdict. Numbers are printed, never judged.

    python benchmarks/telemetry_overhead.py [--pairs 3] [--docs 1000000] [--clients 2] [--interval 1]
    python benchmarks/telemetry_overhead.py --devices profile [--profile-interval 20]   # the flame-graph profiler
        [--profile-sampler jfr|async-profiler]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from rich.console import Console

from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterSpec
from bench.race.options import RaceOptions
from bench.race.race import run_race

TRACK = Path(__file__).resolve().parent / "tracks" / "bulk-overhead"  # shared by the on/off benchmarks


def one_race(track: Path, target: str, params: dict[str, object], telemetry: bool, interval: float,
             tags: dict[str, str] | None = None, devices: tuple[str, ...] = ("node-stats", "host"),
             profile_interval: float = 20.0, profile_sampler: str = "jfr") -> tuple[float, int]:
    device_params: dict[str, object] = {f"{d}-sample-interval": interval for d in devices if d in ("node-stats", "host")}
    if "profile" in devices:
        device_params["profile-interval"] = profile_interval
        device_params["profile-sampler"] = profile_sampler
    opts = RaceOptions(track_path=track, track_params=params, target_hosts=target, user_tags=tags or {},
                       progress=False, telemetry=list(devices) if telemetry else [],
                       telemetry_params=device_params if telemetry else {})
    result = run_race(opts, console=Console(file=io.StringIO()))
    assert result.summary is not None
    task = result.summary.task("index-append")
    assert task is not None and task.throughput is not None and task.error_rate == 0, task
    samples = sum(d["samples"] for d in result.summary.telemetry.get("devices", [])) if telemetry else 0
    if telemetry and "profile" in devices:  # the profiler's samples: its graph of the whole schedule
        samples += sum(g["samples"] for g in result.summary.sections.get("profile", {}).get("graphs", [])
                       if g["task"] == "all")
    # the measured part's own rate: Rally's Mean Throughput also averages running means that carry the warmup
    return task.throughput.rate or task.throughput.mean, samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=3, help="ABBA blocks count as two pairs each")
    ap.add_argument("--docs", type=int, default=1_000_000)  # ~30 s a race here: a 5 s warmup leaves most of it measured
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--bulk-size", type=int, default=2000)
    ap.add_argument("--interval", type=float, default=1.0, help="node-stats and host sample interval (s)")
    ap.add_argument("--heap", default="1gheap")
    ap.add_argument("--devices", default="node-stats,host", help="the devices of the 'on' side (e.g. profile)")
    ap.add_argument("--profile-interval", type=float, default=20.0, help="the profile device's interval (ms)")
    ap.add_argument("--profile-sampler", default="jfr", choices=["jfr", "async-profiler"],
                    help="the profile device's sampler")
    a = ap.parse_args()
    devices = tuple(d.strip() for d in a.devices.split(",") if d.strip())

    os.environ.setdefault("BENCH_CACHE", str(Path.home() / ".bench"))
    os.environ["BENCH_HOME"] = tempfile.mkdtemp(prefix="bench-telemetry-overhead-")
    params = {"doc_count": a.docs, "bulk_indexing_clients": a.clients, "bulk_size": a.bulk_size,
              "warmup_time_period": 5}
    track = TRACK
    provisioner = LocalProvisioner("telemetry-overhead", Path(os.environ["BENCH_HOME"]) / "trial")
    info = provisioner.start(ClusterSpec(nodes=1, car=["defaults", a.heap]))
    runs: list[dict[str, object]] = []
    try:
        target = ",".join(h.removeprefix("http://") for h in info.hosts)
        one_race(track, target, params, False, a.interval)  # not counted: generates the corpus, warms the JIT
        print(f"load average before the pairs: {os.getloadavg()}", flush=True)
        order = [False, True, True, False] * ((a.pairs + 1) // 2)
        for telemetry in order[: 2 * a.pairs]:
            t0 = time.monotonic()
            docs_s, samples = one_race(track, target, params, telemetry, a.interval,
                                       {"telemetry": "on" if telemetry else "off"}, devices, a.profile_interval,
                                       a.profile_sampler)
            runs.append({"telemetry": telemetry, "docs_per_s": round(docs_s), "telemetry_samples": samples,
                         "wall_s": round(time.monotonic() - t0, 1), "load_avg_1m": round(os.getloadavg()[0], 2)})
            print(json.dumps(runs[-1]), flush=True)
    finally:
        provisioner.stop_all()

    def side(flag: bool) -> list[float]:
        return [float(r["docs_per_s"]) for r in runs if r["telemetry"] is flag]  # type: ignore[arg-type]

    base, tele = side(False), side(True)
    sd = lambda xs: statistics.stdev(xs) if len(xs) > 1 else float("nan")
    result = {
        "without_telemetry_docs_per_s": {"mean": round(statistics.mean(base)), "stdev": round(sd(base)),
                                         "runs": base},
        "with_telemetry_docs_per_s": {"mean": round(statistics.mean(tele)), "stdev": round(sd(tele)), "runs": tele},
        "difference_of_means_docs_per_s": round(statistics.mean(tele) - statistics.mean(base)),
        "difference_pct": round(100 * (statistics.mean(tele) / statistics.mean(base) - 1), 2),
        "run_to_run_noise_pct": round(100 * sd(base) / statistics.mean(base), 2),
        "baseline_range_pct": round(100 * (max(base) - min(base)) / statistics.mean(base), 2),
        "settings": {"docs": a.docs, "clients": a.clients, "bulk_size": a.bulk_size, "interval_s": a.interval,
                     "devices": ",".join(devices), "heap": a.heap,
                     **({"profile_interval_ms": a.profile_interval, "profile_sampler": a.profile_sampler}
                        if "profile" in devices else {})},
        "machine": f"{platform.node()} {psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, "
                   f"load avg {os.getloadavg()[0]:.1f}, Python {platform.python_version()}",
    }
    result["bench_compare"] = compare_sides()
    print(json.dumps(result, indent=2))


def compare_sides() -> dict[str, object]:
    """bench's own compare of the tagged runs: its table, and the throughput row's CI and verdict."""
    cmd = [sys.executable, "-m", "bench", "compare", "tag:telemetry=off", "tag:telemetry=on"]
    table = subprocess.run([*cmd, "--format=markdown"], capture_output=True, text=True)
    print(table.stdout or table.stderr, flush=True)
    done = subprocess.run([*cmd, "--format=json"], capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": done.stderr.strip()[-500:]}
    rows = json.loads(done.stdout)["rows"]
    mean = next((r for r in rows if r["metric"] == "Measured-part throughput" and r["task"] == "index-append"), None)
    if mean is None:
        return {"error": "no Measured-part throughput row for index-append in the comparison"}
    return {k: mean[k] for k in ("baseline_value", "candidate_value", "diff_pct", "ci_low", "ci_high", "ci_method",
                                 "result", "baseline_n", "candidate_n")}


if __name__ == "__main__":
    main()
