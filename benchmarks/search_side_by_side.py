"""Search side by side: bench's search statistics next to Rally's and OpenSearch Benchmark's, into the null sink.

Every tool runs the same track (one ``match_all`` search task, ``--clients`` clients, ``--warmup`` s then
``--time-period`` s) with ``--pipeline=benchmark-only`` against the null sink (benchmarks.nullsink), in rotating
order per pair (bench, esrally, osb, then backwards: ABBA). Two modes (``--mode``):

- ``flat``: as fast as the clients go; the sink answers at once, so throughput and latency are each tool's own;
- ``stall``: paced at ``--target-throughput`` ops/s while the sink holds every answer due in the first second of
  each ten seconds of the epoch clock until it ends (``--stall 1/10``, wrk2's coordinated-omission test). A tool
  that measures latency from when a request was due reports the analytic distribution: p50 ≈ 0, p99 ≈ 900 ms,
  p99.9 ≈ 990 ms (a tenth of the requests fall in a stall, uniformly); its service time shows the stall only
  for the requests in flight when it began. A tool that omits reports the stall in neither.
- ``node`` (``--target node``, alone or with the sink's modes): the flat search against a real node instead: per
  other tool, bench's provisioner starts that tool's engine (OSB: OpenSearch 2.19.1, esrally: Elasticsearch
  8.19.21; 1 node, ``--heap``), the script indexes ``--docs`` small documents into ``logs`` (1 shard, 0 replicas)
  and refreshes, and bench and the tool take turns (ABBA) on it. The node, not the driver, is the limit there:
  the figures show what each tool reports for the same node.

Rally and OSB are installed once from PyPI into venvs under the bench cache (benchmarks/sidebyside/tools.py). For
every run it prints what the tool reports (throughput mean/median, latency p50/p90/p99/p99.9, service time
p50/p99, error rate) and, for the stall, the analytic latency percentiles. Numbers are printed, never judged:

    python benchmarks/search_side_by_side.py [--mode flat|stall|both] [--tool osb|esrally|both|none] [--pairs 1]
        [--clients 64] [--stall-clients 10] [--target-throughput 200] [--time-period 20] [--warmup 5]
        [--target sink|node|both] [--docs 10000] [--heap 1gheap]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as dt
import json
import os
import platform
import re
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import psutil
from sidebyside.tools import BENCH, ESRALLY, OSB, ToolSpec, command, ensure_tool, environment, wait_for_rally_to_end
from tabulate import tabulate

from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterSpec
from benchmarks.nullsink import free_port, start_in_background

TASK = "match-all"
STALL = (1.0, 10.0)
# (percentile, ms) of the stall mode's latency: P(latency > y) = (1 - y) / 10 for y in [0, 1 s)
ANALYTIC = {50.0: 0.0, 90.0: 0.0, 99.0: 900.0, 99.9: 990.0}
_PCT = re.compile(r"^([0-9.]+)(?:th)? percentile (latency|service time)$")


def track_body(clients: int, warmup: int, time_period: int, target: float | None) -> dict[str, Any]:
    task: dict[str, Any] = {"name": TASK, "operation": {"operation-type": "search", "index": "logs",
                                                        "body": {"query": {"match_all": {}}, "size": 10}},
                            "clients": clients, "warmup-time-period": warmup, "time-period": time_period}
    if target is not None:
        task["target-throughput"] = target
    return {"version": 2, "description": "search side by side: one match_all search", "indices": [{"name": "logs"}],
            "schedule": [task]}


def parse(rows: list[tuple[str, str, str]]) -> dict[str, Any]:
    """(metric, task, value) rows as Rally, OSB and bench name them."""
    out: dict[str, Any] = {"latency": {}, "service": {}}
    for metric, task, value in rows:
        if task != TASK or value in ("", None):
            continue
        m = _PCT.match(metric)
        if m:
            out["latency" if m.group(2) == "latency" else "service"][float(m.group(1))] = float(value)
        elif metric in ("Mean Throughput", "Median Throughput", "error rate"):
            out[metric] = float(value)
    return out


def one_run(spec: ToolSpec, track: Path, target: str, work: Path, timeout_s: float, run_no: int) -> dict[str, Any]:
    home = work / f"home-{run_no}-{spec.name}"
    home.mkdir(parents=True)
    report = work / f"run{run_no}-{spec.name}.{'json' if spec.name == 'bench' else 'csv'}"
    if spec.name == "esrally" and wait_for_rally_to_end():
        return {"tool": spec.name, "error": "earlier Rally processes still running"}
    cmd = command(spec, track, target, report)
    t0 = time.monotonic()
    with open(work / f"run{run_no}-{spec.name}.out", "w") as log:
        proc = subprocess.Popen(cmd, env=environment(spec, home), stdout=log, stderr=subprocess.STDOUT)
        ps = psutil.Process(proc.pid)
        cpu = 0.0
        while proc.poll() is None and time.monotonic() - t0 < timeout_s:
            try:
                cpu = sum(sum(p.cpu_times()[:2]) for p in [ps, *ps.children(recursive=True)])
            except psutil.NoSuchProcess:
                pass
            time.sleep(1)
        if proc.poll() is None:
            proc.terminate()
        rc = proc.wait(60)
    row: dict[str, Any] = {"tool": spec.name, "wall_s": round(time.monotonic() - t0, 1), "cpu_s": round(cpu, 1)}
    if rc != 0 or not report.is_file():
        tail = (work / f"run{run_no}-{spec.name}.out").read_text(errors="replace").strip().splitlines()[-3:]
        row["error"] = f"exit {rc}: {' | '.join(tail)[-300:]}"
        return row
    text = report.read_text()
    if spec.name == "bench":
        rows = [(r["metric"], r["task"], r["value"]) for r in json.loads(text)["rows"]]
    else:
        rows = [(r[0], r[1], r[2]) for r in csv.reader(text.splitlines()) if len(r) >= 3]
    row.update(parse(rows))
    return row


def fill_index(url: str, docs: int) -> None:
    """``logs`` with ``docs`` small documents, 1 shard, 0 replicas, refreshed: what the searches read."""
    def call(method: str, path: str, body: bytes | None = None, ndjson: bool = False) -> None:
        req = urllib.request.Request(url + path, data=body, method=method, headers={
            "Content-Type": "application/x-ndjson" if ndjson else "application/json"})
        with urllib.request.urlopen(req, timeout=120) as resp:
            resp.read()

    with contextlib.suppress(urllib.error.HTTPError):
        call("DELETE", "/logs")
    call("PUT", "/logs", json.dumps({"settings": {"number_of_shards": 1, "number_of_replicas": 0}}).encode())
    for start in range(0, docs, 5000):
        lines = "".join('{"index":{}}\n' + json.dumps({"n": i, "message": f"line {i}", "status": 200 + i % 5}) + "\n"
                        for i in range(start, min(docs, start + 5000)))
        call("POST", "/logs/_bulk", lines.encode(), ndjson=True)
    call("POST", "/logs/_refresh")


def node_runs(tools: list[ToolSpec], a: argparse.Namespace, work: Path, run_no: int) -> tuple[list[dict[str, Any]], int]:
    """Flat mode against each other tool's engine, started by bench's provisioner, bench and the tool ABBA."""
    rows: list[dict[str, Any]] = []
    for tool in tools[1:]:
        folder = {t.name: work / f"node-{tool.name}-{t.name}" for t in (BENCH, tool)}
        for t in (BENCH, tool):
            folder[t.name].mkdir()
            (folder[t.name] / t.track_file).write_text(json.dumps(track_body(a.clients, a.warmup, a.time_period, None)))
        print(f"starting {tool.engine} {tool.engine_version} for {tool.name} ...", flush=True)
        provisioner = LocalProvisioner(f"search-sbs-{tool.name}-{work.name[-8:]}", work / f"cluster-{tool.name}")
        try:
            info = provisioner.start(ClusterSpec(nodes=1, car=["defaults", a.heap], engine=tool.engine,  # type: ignore[arg-type]
                                                 version=tool.engine_version), timeout=240)
            fill_index(info.hosts[0], a.docs)
            target = info.hosts[0].removeprefix("http://")
            for pair in range(1, a.pairs + 1):
                for t in ((BENCH, tool) if pair % 2 else (tool, BENCH)):
                    run_no += 1
                    row = one_run(t, folder[t.name], target, work, a.warmup + a.time_period + 300, run_no)
                    row.update(mode=f"node ({tool.engine})", pair=pair, clients=a.clients, target_throughput=None)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        finally:
            provisioner.stop_all()
    return rows, run_no


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=("flat", "stall", "both"), default="both")
    ap.add_argument("--tool", choices=("osb", "esrally", "both", "none"), default="both")
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--clients", type=int, default=64, help="clients of the flat mode")
    ap.add_argument("--stall-clients", type=int, default=10, help="clients of the stall mode")
    ap.add_argument("--target-throughput", type=float, default=200, help="ops/s of the stall mode")
    ap.add_argument("--time-period", type=int, default=20, help="a multiple of 10 s keeps the stall share exact")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json-file")
    ap.add_argument("--target", choices=("sink", "node", "both"), default="sink",
                    help="the null sink (flat and stall modes), real nodes (flat), or both")
    ap.add_argument("--docs", type=int, default=10_000, help="documents in the real node's index")
    ap.add_argument("--heap", default="1gheap", help="the real node's heap (a car mixin)")
    a = ap.parse_args()
    tools = [BENCH] + {"osb": [OSB], "esrally": [ESRALLY], "both": [ESRALLY, OSB], "none": []}[a.tool]
    for t in tools[1:]:
        ensure_tool(t)
    work = Path(tempfile.mkdtemp(prefix="search-side-by-side-"))
    rows: list[dict[str, Any]] = []
    run_no = 0
    modes = (("flat", "stall") if a.mode == "both" else (a.mode,)) if a.target != "node" else ()
    for mode in modes:
        clients = a.clients if mode == "flat" else a.stall_clients
        target_tp = None if mode == "flat" else a.target_throughput
        tracks = {}
        for t in tools:
            folder = work / f"{mode}-{t.name}"
            folder.mkdir()
            (folder / t.track_file).write_text(json.dumps(track_body(clients, a.warmup, a.time_period, target_tp)))
            tracks[t.name] = folder
        port = free_port()
        sinks = start_in_background(port, stall=STALL if mode == "stall" else None)
        try:
            for pair in range(1, a.pairs + 1):
                for t in (tools if pair % 2 else tools[::-1]):
                    run_no += 1
                    row = one_run(t, tracks[t.name], f"127.0.0.1:{port}", work, a.warmup + a.time_period + 300,
                                  run_no)
                    row.update(mode=mode, pair=pair, clients=clients, target_throughput=target_tp)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        finally:
            for s in sinks:
                s.terminate()
    if a.target != "sink":
        node_rows, run_no = node_runs(tools, a, work, run_no)
        rows += node_rows

    def cell(r: dict[str, Any], kind: str, p: float) -> str:
        v = r.get(kind, {}).get(p)
        return "" if v is None else f"{v:,.1f}"

    table = []
    for r in rows:
        if "error" in r:
            table.append([r["mode"], r["pair"], r["tool"], "FAILED: " + r["error"][:80]] + [""] * 8)
            continue
        table.append([r["mode"], r["pair"], r["tool"], f"{r.get('Mean Throughput', 0):,.0f}",
                      f"{r.get('Median Throughput', 0):,.0f}", *(cell(r, "latency", p) for p in ANALYTIC),
                      cell(r, "service", 50.0), cell(r, "service", 99.0), r.get("error rate", "")])
    if any(r["mode"] == "stall" for r in rows):
        table.append(["stall", "", "analytic", "", "", *(f"{v:,.1f}" for v in ANALYTIC.values()), "≈ 0", "≈ 0", 0])
    print(tabulate(table, headers=["mode", "pair", "tool", "mean ops/s", "median ops/s", "lat p50 ms", "p90", "p99",
                                   "p99.9", "svc p50 ms", "svc p99", "error %"]))
    meta = {"date": dt.date.today().isoformat(), "load_avg": round(os.getloadavg()[0], 1),
            "machine": f"{platform.node()} {psutil.cpu_count()} cores, Python {platform.python_version()}"}
    print(json.dumps(meta))
    if a.json_file:
        Path(a.json_file).write_text(json.dumps({"meta": meta, "runs": rows}, indent=2))


if __name__ == "__main__":
    main()
