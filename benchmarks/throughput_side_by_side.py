"""Side by side: bench's index-append throughput statistics next to OpenSearch Benchmark's and/or Rally's.

Installs opensearch-benchmark 2.4.0 / esrally 2.13.0 once into venvs under the bench cache
(``<cache>/tools/<tool>-<version>/``), generates the nginx documents once (``<cache>/sidebyside/corpus/``),
writes the same track for every tool (delete-index, create-index with 1 shard / 0 replicas, cluster-health,
then a looped bulk task ``index-append``), starts a local cluster with bench's provisioner on 127.0.0.1
(OpenSearch 2.19.1 for OSB, Elasticsearch 8.19.21 for esrally) and runs bench and the tool alternately
(bench, tool, then tool, bench, ...: ABBA, so a cluster warming up favours neither) with ``--pipeline=benchmark-only`` against it. For every run it prints
what the tool reports (docs/s min/median/max/mean, p50/p99 latency), the client CPU cores of the tool's
process tree, and a ground truth from the cluster's own ``indices.indexing.index_total`` polled every
0.25 s (see sidebyside/groundtruth.py for how each figure is computed); then the bench/tool ratio of every
statistic per pair and the spread (min..max) of every statistic per tool across runs. It prints numbers,
never judges them.

    python benchmarks/throughput_side_by_side.py [--pairs 2] [--time-period 60] [--warmup 10] [--clients 8]
        [--bulk-size 5000] [--docs 500000] [--tool osb|esrally|both] [--heap 1gheap] [--json-file PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import requests
from sidebyside.groundtruth import MARKER_ENV, Poller, ToolProcesses, truth
from sidebyside.tools import (
    BENCH,
    OSB,
    OTHER_TOOLS,
    RAW_PROBE,
    ToolSpec,
    command,
    ensure_tool,
    environment,
    failure_reason,
    parse_report,
    tool_log,
    wait_for_rally_to_end,
)
from sidebyside.workload import INDEX, TASK, Corpus, LoadSettings, corpus_file, sidebyside_dir, write_track
from tabulate import tabulate

from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterSpec
from benchmarks.nullsink import free_port, start_in_background

STATS = ("min", "median", "max", "mean")


def index_facts(url: str) -> dict[str, Any]:
    """Shards, replicas and documents of the index the run left behind: proof every tool made the same index."""
    try:
        settings = requests.get(f"{url}/{INDEX}/_settings", timeout=10).json()[INDEX]["settings"]["index"]
        requests.post(f"{url}/{INDEX}/_refresh", timeout=60)
        docs = requests.get(f"{url}/{INDEX}/_count", timeout=10).json()["count"]
    except (requests.RequestException, KeyError, ValueError) as e:
        return {"error": str(e)}
    return {"shards": int(settings["number_of_shards"]), "replicas": int(settings["number_of_replicas"]),
            "documents": int(docs)}


def one_run(spec: ToolSpec, run_no: int, track_dir: Path, target: str, url: str, warmup_s: int,
            timeout_s: float, work: Path, *, sink: bool = False, probe: list[str] | None = None) -> dict[str, Any]:
    """Run one tool once; the row of reported numbers and ground truth, or a row with ``error``."""
    home = work / (f"bench-home-{run_no}" if spec.name == "bench" else f"{spec.name}-home")
    home.mkdir(parents=True, exist_ok=True)
    report = work / f"run{run_no}-{spec.name}.{'csv' if spec.name in OTHER_TOOLS else 'json'}"
    out = work / f"run{run_no}-{spec.name}.out"
    row: dict[str, Any] = {"run": run_no, "tool": spec.name}
    if spec.name == "esrally":
        left = wait_for_rally_to_end()  # the previous Rally run's processes (back to back when the order turns)
        if left:
            row["error"] = f"Rally processes of an earlier run still there after 60 s: pids {left}"
            return row
    t0 = time.monotonic()
    with open(out, "w") as log:
        marker = uuid.uuid4().hex
        env = {**environment(spec, home), MARKER_ENV: marker}
        proc = subprocess.Popen(command(spec, track_dir, target, report, probe=probe), env=env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        poller = Poller(url, ToolProcesses(psutil.Process(proc.pid), marker))
        poller.start()
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)  # the group of the child started above, nothing else
            rc = proc.wait(timeout=30)
            row["error"] = f"timed out after {timeout_s:.0f} s"
        except BaseException:
            # Ctrl-C does not reach the tool (its own session): stop it before leaving.
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
            raise
        finally:
            poller.stop()
            leftovers = [p for p in poller.processes.found.values() if p.pid != proc.pid and p.is_running()]
            for p in leftovers:  # the tool's own detached processes (found by this run's marker), nothing else
                with contextlib.suppress(psutil.NoSuchProcess):
                    p.terminate()
            psutil.wait_procs(leftovers, timeout=10)
    row["wall_s"] = round(time.monotonic() - t0, 1)
    if rc != 0 or not report.is_file():
        text = out.read_text(errors="replace")
        tail = " | ".join([ln for ln in text.splitlines() if ln.strip()][-3:])[-400:]
        row.setdefault("error", f"exit {rc}: {failure_reason(text) or tail} (output {out}, log {tool_log(spec, home)})")
        return row
    try:
        row["reported"] = parse_report(spec, report, TASK).model_dump()
    except ValueError as e:
        row["error"] = f"{report}: {e}"
        return row
    if not sink:
        row["index"] = index_facts(url)
    gt = truth(poller.samples, warmup_s, poller.errors)
    row["truth"] = gt.model_dump() if gt else None
    row["polls"] = [[round(t, 3), n, round(c, 3)] for t, n, c in poller.samples]  # wall time, index_total, tool CPU s
    return row


def run_tool(tool: ToolSpec, args: argparse.Namespace, corpus: Corpus, load: LoadSettings, work: Path,
             run_counter: list[int]) -> list[dict[str, Any]]:
    """Start the tool's cluster, run the pairs on it, stop it."""
    tracks = sidebyside_dir() / "tracks" / f"n{corpus.documents}"
    bench_track = write_track(tracks / "bench" / "sidebyside", BENCH.track_file, corpus, load)
    tool_track = write_track(tracks / tool.name / "sidebyside", tool.track_file, corpus, load)
    timeout_s = load.warmup_s + load.time_period_s + 600
    rows: list[dict[str, Any]] = []
    print(f"starting {tool.engine} {tool.engine_version} for {tool.name} ...", flush=True)
    provisioner = LocalProvisioner(f"sidebyside-{tool.name}-{work.name[-8:]}", work / f"cluster-{tool.name}")
    try:
        info = provisioner.start(ClusterSpec(nodes=1, car=["defaults", args.heap], engine=tool.engine,  # type: ignore[arg-type]
                                             version=tool.engine_version), timeout=240)
        url = info.hosts[0]
        target = url.removeprefix("http://")
        for pair in range(1, args.pairs + 1):
            # A B, B A, ...: a cluster that speeds up as it warms (it does: OpenSearch's first minute here
            # indexes at half the rate of its fifth) favours neither tool.
            order = ((BENCH, bench_track), (tool, tool_track))
            for spec, track in (order if pair % 2 else order[::-1]):
                run_counter[0] += 1
                row = one_run(spec, run_counter[0], track, target, url, load.warmup_s, timeout_s, work)
                row.update(pair=pair, cluster=f"{tool.engine} {tool.engine_version}", compared_with=tool.name)
                rows.append(row)
                if "error" in row and spec is tool and pair == 1:
                    row["tool_unusable"] = True  # the reason is printed once, by the caller
                    print(f"  run {row['run']} {spec.name}: FAILED", flush=True)
                    return rows
                print(f"  run {row['run']} {spec.name}: " + (f"FAILED {row['error']}" if "error" in row else
                      f"mean {row['reported']['mean']:.0f} docs/s ({row['wall_s']} s)"), flush=True)
    finally:
        provisioner.stop_all()
    return rows


def run_sink(tools: list[ToolSpec], args: argparse.Namespace, corpus: Corpus, load: LoadSettings, work: Path,
             run_counter: list[int]) -> list[dict[str, Any]]:
    """Start the null sink (counting the documents it receives), run bench, the raw probe and the tools on it in
    rotating order per pair (forwards, then backwards), stop it. A tool that fails its first run is dropped."""
    tracks = sidebyside_dir() / "tracks" / f"sink-n{corpus.documents}"
    lineup: list[tuple[ToolSpec, Path]] = [
        (BENCH, write_track(tracks / "bench" / "sidebyside", BENCH.track_file, corpus, load, sink=True)),
        (RAW_PROBE, tracks),
        *((t, write_track(tracks / t.name / "sidebyside", t.track_file, corpus, load, sink=True)) for t in tools)]
    timeout_s = load.warmup_s + load.time_period_s + 600
    probe = [f"--clients={load.clients}", f"--bulk-size={load.bulk_size}",
             f"--seconds={load.warmup_s + load.time_period_s}", f"--docs={min(corpus.documents, 200_000)}"]
    port = free_port()
    print(f"starting the null sink on 127.0.0.1:{port} ({args.sink_processes} process(es)) ...", flush=True)
    sinks = start_in_background(port, args.sink_processes, count_docs=True)
    url, target = f"http://127.0.0.1:{port}", f"127.0.0.1:{port}"
    rows: list[dict[str, Any]] = []
    try:
        for pair in range(1, args.pairs + 1):
            for spec, track in (lineup if pair % 2 else lineup[::-1]):
                run_counter[0] += 1
                row = one_run(spec, run_counter[0], track, target, url, load.warmup_s, timeout_s, work, sink=True,
                              probe=probe)
                row.update(pair=pair, cluster="null sink", compared_with="null sink")
                rows.append(row)
                if "error" in row and pair == 1 and spec.name in OTHER_TOOLS:
                    print(f"  run {row['run']} {spec.name}: FAILED; {spec.name} cannot run against the null sink "
                          f"here: {row['error']}", flush=True)
                    lineup = [(t, p) for t, p in lineup if t is not spec]
                    continue
                print(f"  run {row['run']} {spec.name}: " + (f"FAILED {row['error']}" if "error" in row else
                      f"mean {row['reported']['mean']:,.0f} docs/s ({row['wall_s']} s)"), flush=True)
    finally:
        for sink in sinks:
            sink.terminate()
    return rows


def fmt(v: float | None, digits: int = 0) -> str:
    if v is None or v != v:
        return "-"
    return f"{v:,.{digits}f}"


def reported_table(rows: list[dict[str, Any]]) -> str:
    """Per run: what the tool reports, its client CPU and the index it left."""
    headers = ["run", "pair", "tool", "cluster", "min", "median", "max", "mean", "p50 ms", "p99 ms", "client cores",
               "shards/replicas", "docs in index"]
    body = []
    for r in rows:
        if "error" in r:
            body.append([r["run"], r["pair"], r["tool"], r["cluster"], "FAILED"] + [""] * (len(headers) - 5))
            continue
        rep, gt, idx = r["reported"], r.get("truth") or {}, r.get("index", {})
        body.append([r["run"], r["pair"], r["tool"], r["cluster"], *(fmt(rep[s]) for s in STATS),
                     fmt(rep["latency_p50"], 1), fmt(rep["latency_p99"], 1), fmt(gt.get("client_cpu_cores"), 3),
                     f"{idx['shards']}/{idx['replicas']}" if "shards" in idx else "-", fmt(idx.get("documents"))])
    return tabulate(body, headers=headers, disable_numparse=True, colalign=("right",) * len(headers))


def truth_table(rows: list[dict[str, Any]]) -> str:
    """Per run: the cluster's own docs/s over the tool's measured period (sidebyside/groundtruth.py)."""
    headers = ["run", "tool", "true min/s", "true median/s", "true max/s", "true mean", "reported mean / true mean",
               "running mean min/median/max", "measured s", "poll s"]
    body = []
    for r in rows:
        gt = r.get("truth")
        if "error" in r or not gt:
            continue
        body.append([r["run"], r["tool"], fmt(gt["min"]), fmt(gt["median"]), fmt(gt["max"]), fmt(gt["mean"]),
                     fmt(r["reported"]["mean"] / gt["mean"], 3) if gt["mean"] else "-",
                     "/".join(fmt(gt[k]) for k in ("running_min", "running_median", "running_max")),
                     fmt(gt["measured_s"], 1), fmt(gt["poll_interval_s"], 2)])
    return tabulate(body, headers=headers, disable_numparse=True, colalign=("right",) * len(headers))


def _value(r: dict[str, Any], stat: str) -> float | None:
    if stat == "docs_per_cpu_s":  # documents the cluster (or sink) received per CPU second of the tool
        gt = r.get("truth") or {}
        cores = gt.get("client_cpu_cores")
        return gt["mean"] / cores if gt.get("mean") and cores and cores == cores else None
    if stat in ("latency_p50", "latency_p99", *STATS):
        return r["reported"].get(stat)
    gt = r.get("truth") or {}
    return gt.get(stat.removeprefix("true_"))


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """bench/tool per pair and target for every reported statistic (and for the ground truth mean as a
    yardstick); against the raw probe only the means exist."""
    out = []
    ok = [r for r in rows if "error" not in r]
    for cluster, pair in sorted({(r["cluster"], r["pair"]) for r in ok}):
        mine = [r for r in ok if (r["cluster"], r["pair"]) == (cluster, pair)]
        b = [r for r in mine if r["tool"] == "bench"]
        for tool in sorted({r["tool"] for r in mine} - {"bench"}):
            o = [r for r in mine if r["tool"] == tool]
            if not b:
                continue
            entry: dict[str, Any] = {"pair": pair, "tool": tool, "cluster": cluster}
            for stat in (*STATS, "latency_p50", "latency_p99", "true_mean", "docs_per_cpu_s"):
                x, y = _value(b[0], stat), _value(o[0], stat)
                entry[stat] = x / y if x is not None and y else None
            out.append(entry)
    return out


def spreads(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per tool (and cluster) and statistic: min..max over its runs, and that range as % of the median run."""
    out = []
    ok = [r for r in rows if "error" not in r]
    for key in sorted({(r["tool"], r["cluster"]) for r in ok}):
        mine = [r for r in ok if (r["tool"], r["cluster"]) == key]
        for stat in (*STATS, "latency_p50", "latency_p99", "true_mean", "true_min", "true_median", "true_max"):
            vals = sorted(v for v in (_value(r, stat) for r in mine) if v is not None)
            if not vals:
                continue
            mid = statistics.median(vals)
            out.append({"tool": key[0], "cluster": key[1], "statistic": stat, "runs": len(vals), "min": vals[0],
                        "max": vals[-1], "range_pct_of_median": 100 * (vals[-1] - vals[0]) / mid if mid else None})
    return out


def _ratio_groups(rat: list[dict[str, Any]]) -> dict[tuple[str, str], list[float]]:
    """The per-pair true-mean ratios of bench over each tool, per target."""
    groups: dict[tuple[str, str], list[float]] = {}
    for e in rat:
        if e["true_mean"] is not None:
            groups.setdefault((e["cluster"], e["tool"]), []).append(e["true_mean"])
    return groups


def hide_esrally_from_argv() -> None:
    """Rally refuses to start while another Python process has "esrally" anywhere in its command line
    (esrally.utils.process.is_rally_process), and ``--tool esrally`` puts it in this script's own: re-execute with
    the tool named in the environment instead, so the command line users type stays the documented one."""
    if not any("esrally" in arg for arg in sys.argv[1:]):
        return
    argv, tool = [], None
    it = iter(sys.argv[1:])
    for arg in it:
        if arg == "--tool":
            tool = next(it, "")
        elif arg.startswith("--tool="):
            tool = arg.split("=", 1)[1]
        else:
            argv.append(arg)
    if tool is None or any("esrally" in arg for arg in argv):
        sys.exit("only --tool may name esrally (Rally will not start while a command line contains 'esrally')")
    os.environ[TOOL_ENV] = tool
    os.execv(sys.executable, [sys.executable, sys.argv[0], *argv])


TOOL_ENV = "SIDEBYSIDE_TOOL"


def spread_table(spr: list[dict[str, Any]]) -> str:
    """One row per statistic, one column per tool and cluster."""
    columns = list(dict.fromkeys((s["tool"], s["cluster"]) for s in spr))
    stats = list(dict.fromkeys(s["statistic"] for s in spr))
    cell = {(s["tool"], s["cluster"], s["statistic"]): s for s in spr}
    body = []
    for stat in stats:
        line = [stat]
        for tool, cluster in columns:
            c = cell.get((tool, cluster, stat))
            line.append(f"{fmt(c['min'])} .. {fmt(c['max'])} ({fmt(c['range_pct_of_median'], 1)} %)" if c else "-")
        body.append(line)
    runs = {k: max(s["runs"] for s in spr if (s["tool"], s["cluster"]) == k) for k in columns}
    headers = ["statistic", *(f"{t} @ {c} ({runs[(t, c)]} runs)" for t, c in columns)]
    return tabulate(body, headers=headers, disable_numparse=True)


def main() -> None:
    hide_esrally_from_argv()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--time-period", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--bulk-size", type=int, default=5000)
    ap.add_argument("--docs", type=int, default=500_000, help="documents in the generated corpus (looped)")
    ap.add_argument("--tool", choices=["osb", "esrally", "both"], default=os.environ.pop(TOOL_ENV, "both"))
    ap.add_argument("--target", choices=["sink", "cluster", "both"], default="both",
                    help="the null sink (with the raw probe), a real local cluster, or both (sink first)")
    ap.add_argument("--sink-processes", type=int, default=1)
    ap.add_argument("--heap", default="1gheap", help="car config for the node's heap")
    ap.add_argument("--json-file", help="where to write the JSON results (default: under the bench cache)")
    a = ap.parse_args()
    if min(a.pairs, a.time_period, a.clients, a.bulk_size, a.docs) < 1 or a.warmup < 0:
        sys.exit("--pairs, --time-period, --clients, --bulk-size and --docs must be positive, --warmup >= 0")

    os.environ.setdefault("BENCH_CACHE", str(Path.home() / ".bench"))
    tools = [OTHER_TOOLS[t] for t in (("osb", "esrally") if a.tool == "both" else (a.tool,))]
    for t in tools:
        ensure_tool(t)
    corpus = corpus_file(a.docs)
    load = LoadSettings(clients=a.clients, bulk_size=a.bulk_size, warmup_s=a.warmup, time_period_s=a.time_period)
    work = Path(tempfile.mkdtemp(prefix="bench-sidebyside-"))
    os.environ["BENCH_HOME"] = str(work / "provisioner-home")  # the provisioner's trial files, not the user's
    rows: list[dict[str, Any]] = []
    counter = [0]
    if a.target in ("sink", "both"):
        rows += run_sink(tools, a, corpus, load, work, counter)
    requested = [t.name for t in tools]
    while tools and a.target in ("cluster", "both"):
        t = tools.pop(0)
        done = run_tool(t, a, corpus, load, work, counter)
        rows += done
        if done and done[-1].get("tool_unusable"):
            fallback = "" if OSB.name in requested else "; continuing with osb only"
            print(f"{t.name} cannot run against {t.engine} {t.engine_version} here: {done[-1]['error']}{fallback}",
                  flush=True)
            if fallback:
                ensure_tool(OSB)
                tools.append(OSB)

    print()
    print(f"index-append docs/s (bulk {a.bulk_size}, {a.clients} clients, warmup {a.warmup} s, "
          f"time-period {a.time_period} s, {corpus.documents:,} docs looped, {corpus.uncompressed_bytes / corpus.documents:.0f} B/doc)")
    print(reported_table(rows))
    print("\nground truth: the cluster's indices.indexing.index_total over the tool's measured period")
    print(truth_table(rows))
    for r in rows:
        if "error" in r:
            print(f"run {r['run']} ({r['tool']}) failed: {r['error']}")
    rat = ratios(rows)
    if rat:
        print("\nbench / tool, per pair (true mean: the documents the cluster or sink counted; per CPU s: true "
              "docs per CPU second of the tool)")
        print(tabulate([[e["cluster"], e["pair"], e["tool"],
                         *(fmt(e[s], 3) for s in (*STATS, "latency_p50", "latency_p99", "true_mean",
                                                  "docs_per_cpu_s"))] for e in rat],
                       headers=["target", "pair", "tool", "min", "median", "max", "mean", "p50", "p99", "true mean",
                                "per CPU s"],
                       disable_numparse=True))
        for (cluster, tool), vals in _ratio_groups(rat).items():
            print(f"  {cluster}, bench / {tool}: true mean {fmt(statistics.mean(vals), 3)} over {len(vals)} pair(s)"
                  f" (range {fmt(min(vals), 3)} .. {fmt(max(vals), 3)})")
    spr = spreads(rows)
    if spr:
        print("\nrun-to-run spread per tool: min .. max over its runs (range as % of the median run)")
        print(spread_table(spr))
    result = {
        "settings": {"target": a.target, "sink_processes": a.sink_processes, "pairs": a.pairs, "time_period_s": a.time_period, "warmup_s": a.warmup, "clients": a.clients,
                     "bulk_size": a.bulk_size, "documents": corpus.documents,
                     "uncompressed_bytes": corpus.uncompressed_bytes, "heap": a.heap,
                     "tools": {t.name: f"{t.package}=={t.version}" for t in tools}},
        "machine": f"{platform.node()} {psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, "
                   f"load avg {os.getloadavg()[0]:.1f}, Python {platform.python_version()}",
        "runs": rows, "ratios_bench_over_tool": rat, "spread": spr,
    }
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = Path(a.json_file) if a.json_file else sidebyside_dir() / "results" / f"sidebyside-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    print(f"\nJSON: {path}\nrun outputs and tool logs: {work}")


if __name__ == "__main__":
    main()
