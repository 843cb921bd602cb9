"""The tools compared with bench: installed once into throw-away venvs under the bench cache, run, and read.

Each tool writes its summary to a file (bench: JSON report; Rally/OSB: CSV report) and the side-by-side reads
the index-append task's throughput (min/mean/median/max) and latency percentiles from it.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from pydantic import BaseModel

from bench.util.home import cache_home


class ToolSpec(BaseModel):
    name: str  # "bench", "osb", "esrally"
    package: str | None  # PyPI package; None for bench itself
    version: str | None
    executable: str | None
    track_file: str  # track.json / workload.json
    engine: str  # the cluster it is compared on
    engine_version: str


OSB = ToolSpec(name="osb", package="opensearch-benchmark", version="2.4.0", executable="opensearch-benchmark",
               track_file="workload.json", engine="opensearch", engine_version="2.19.1")
ESRALLY = ToolSpec(name="esrally", package="esrally", version="2.13.0", executable="esrally",
                   track_file="track.json", engine="elasticsearch", engine_version="8.19.21")
BENCH = ToolSpec(name="bench", package=None, version=None, executable=None, track_file="track.json",
                 engine="any", engine_version="any")
# The ceiling into the null sink: bare asyncio re-sending prebuilt bodies (benchmarks/raw_probe.py), no track.
RAW_PROBE = ToolSpec(name="raw-probe", package=None, version=None, executable=None, track_file="track.json",
                     engine="null sink", engine_version="-")
OTHER_TOOLS = {"osb": OSB, "esrally": ESRALLY}


class ToolResult(BaseModel):
    """What a tool reports for the bulk task (docs/s and ms)."""

    min: float | None  # None: the tool reports only a mean (the raw probe)
    mean: float
    median: float | None
    max: float | None
    latency_p50: float | None
    latency_p99: float | None


def tool_venv(spec: ToolSpec) -> Path:
    return cache_home() / "tools" / f"{spec.name}-{spec.version}"


def ensure_tool(spec: ToolSpec) -> Path:
    """The tool's executable, installing ``package==version`` into its venv on first use only."""
    assert spec.package and spec.executable
    venv = tool_venv(spec)
    exe = venv / "bin" / spec.executable
    marker = venv / ".installed"
    if marker.is_file() and exe.is_file():
        return exe
    shutil.rmtree(venv, ignore_errors=True)  # a half-made venv from an interrupted install
    print(f"installing {spec.package}=={spec.version} into {venv} (once)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"{spec.package}=={spec.version}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"pip install {spec.package}=={spec.version} failed: {done.stderr.strip()[-500:]}")
    marker.write_text(f"{spec.package}=={spec.version}\n")
    return exe


def command(spec: ToolSpec, track_dir: Path, target: str, report: Path, *, probe: list[str] | None = None
            ) -> list[str]:
    """The benchmark-only command line of one run against ``target`` (host:port); ``probe``: the raw probe's
    load arguments (clients, bulk size, seconds)."""
    if spec.name == "raw-probe":
        host, _, port = target.rpartition(":")
        return [sys.executable, str(Path(__file__).resolve().parent.parent / "raw_probe.py"), f"--host={host}",
                f"--port={port}", *(probe or []), f"--json-file={report}"]
    if spec.name == "bench":
        return [sys.executable, "-m", "bench", "--quiet", "race", f"--track-path={track_dir}",
                f"--target-hosts={target}", "--report-format=json", f"--report-file={report}"]
    exe = str(tool_venv(spec) / "bin" / str(spec.executable))
    if spec.name == "osb":
        # OSB 2.4.0 names the subcommand "run" ("execute-test" is deprecated).
        return [exe, "run", "--pipeline=benchmark-only", f"--workload-path={track_dir}", f"--target-hosts={target}",
                "--offline", "--results-format=csv", f"--results-file={report}"]
    # Given the version, Rally does not derive it from GET / (which some Elasticsearch builds answer with 405).
    return [exe, "race", "--pipeline=benchmark-only", f"--track-path={track_dir}", f"--target-hosts={target}",
            f"--distribution-version={spec.engine_version}", "--offline", "--report-format=csv",
            f"--report-file={report}"]


def environment(spec: ToolSpec, home: Path) -> dict[str, str]:
    """Rally and OSB keep config, logs and results under $HOME/.rally / $HOME/.benchmark: give them a fresh
    home per invocation so the user's own setup is neither read nor changed. bench gets its own BENCH_HOME."""
    env = dict(os.environ)
    env["BENCH_CACHE"] = str(cache_home())
    if spec.name == "bench":
        env["BENCH_HOME"] = str(home)
    else:
        env["HOME"] = str(home)
        env.pop("BENCHMARK_HOME", None)
        env.pop("RALLY_HOME", None)
    return env


def tool_log(spec: ToolSpec, home: Path) -> Path | None:
    """Where the tool's own log is, to point at when a run fails."""
    p = {"osb": home / ".benchmark" / "logs" / "benchmark.log", "esrally": home / ".rally" / "logs" / "rally.log",
         "bench": home / "logs"}.get(spec.name)
    return p


# Causes recognised in a failed run's output, as one line for the user.
_KNOWN_FAILURES = {
    "Incorrect HTTP method for uri [/]": "its client checks the product with GET /, which this Elasticsearch build "
                                         "answers with 405 (the root endpoint's module is not in the zip)",
    "There are other Rally processes running": "Rally refuses to start while another process has 'esrally' in its "
                                               "command line",
}


def wait_for_rally_to_end(timeout: float = 60.0) -> list[int]:
    """Rally will not start while another Rally process runs (its esrally.utils.process.is_rally_process: a
    process named esrally/rally, or a Python one with "esrally" in its command line other than esrallyd): wait
    for the previous run's to end. The pids still there after ``timeout`` seconds."""
    import time

    import psutil

    def others() -> list[int]:
        out = []
        for p in psutil.process_iter(["pid", "name", "cmdline"]):
            name, cmd = (p.info["name"] or ""), (p.info["cmdline"] or [])
            if p.info["pid"] == os.getpid():
                continue
            if name in ("esrally", "rally") or (name.lower().startswith("python") and any("esrally" in c for c in cmd)
                                                and not any("esrallyd" in c for c in cmd)):
                out.append(p.info["pid"])
        return out

    deadline = time.monotonic() + timeout
    while (left := others()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def failure_reason(output: str) -> str | None:
    """A one-line cause for a failed run when its output shows a known one."""
    return next((reason for needle, reason in _KNOWN_FAILURES.items() if needle in output), None)


_PCT = re.compile(r"^([0-9.]+)(?:th)? percentile latency$")


def parse_rows(rows: list[tuple[str, str, str]], task: str) -> ToolResult:
    """(metric, task, value) rows as Rally, OSB and bench name them: "Min Throughput", "50th percentile latency"."""
    values: dict[str, float] = {}
    latency: dict[float, float] = {}
    for metric, row_task, value in rows:
        if row_task != task or value in ("", None):
            continue
        m = _PCT.match(metric)
        if m:
            latency[float(m.group(1))] = float(value)
        else:
            values[metric] = float(value)
    missing = [k for k in ("Min", "Mean", "Median", "Max") if f"{k} Throughput" not in values]
    if missing:
        raise ValueError(f"report has no {', '.join(missing)} Throughput for task {task}")
    return ToolResult(min=values["Min Throughput"], mean=values["Mean Throughput"],
                      median=values["Median Throughput"], max=values["Max Throughput"],
                      latency_p50=latency.get(50.0), latency_p99=latency.get(99.0))


def parse_csv_report(text: str, task: str) -> ToolResult:
    """Rally's/OSB's CSV report: a header, then rows of Metric,Task,Value,Unit."""
    return parse_rows([(r[0], r[1], r[2]) for r in csv.reader(text.splitlines()) if len(r) >= 3], task)


def parse_bench_report(text: str, task: str) -> ToolResult:
    """bench's JSON report: {"rows": [{"metric", "task", "value", "unit"}, ...]} with Rally's metric names."""
    report = json.loads(text)
    try:
        return parse_rows([(r["metric"], r["task"], r["value"]) for r in report["rows"]], task)
    except ValueError as e:
        notes = "; ".join(report.get("notes", []))
        raise ValueError(f"{e}{': ' + notes if notes else ''}") from None


def parse_report(spec: ToolSpec, report: Path, task: str) -> ToolResult:
    text = report.read_text()
    if spec.name == "raw-probe":
        probe = json.loads(text)
        return ToolResult(min=None, mean=probe["docs_per_s"], median=None, max=None, latency_p50=None,
                          latency_p99=None)
    return parse_bench_report(text, task) if spec.name == "bench" else parse_csv_report(text, task)
