"""The ``profile`` device: where each node's CPU goes, as flame graphs per node and task.

Right before the schedule it starts a Java Flight Recorder recording of execution samples only
(``telemetry-profiles/jfr/bench-profile.jfc``, every ``profile-interval`` ms) in the server JVM of every node of the race's
clusters that runs on this machine -- through ``jcmd JFR.start``, so nodes bench did not start (``--target-hosts``
on 127.0.0.1) are profiled too -- and stops it when the schedule ended. Once the race is measured, the recording is
cut into the time window of each task (its first request to its last answer; warmup left out) and of the whole
schedule (``all``) by ``JfrCollapse.java``, run on the node's own JDK. Per node and window the trial keeps, under
``<trial dir>/profiles/<cluster>/<node>/``: the recording, the collapsed stacks (``<task>.collapsed``) and a flame
graph (``<task>.html``).

``profile-sampler: async-profiler`` samples with async-profiler instead (``async_profiler.py``): loaded through
``jcmd JVMTI.agent_load`` into the same JVMs, writing the same JFR format, cut and drawn the same way.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psutil
from pydantic import BaseModel

from bench.driver.profiling import DRIVER_PROFILES
from bench.telemetry import async_profiler
from bench.telemetry.config import TelemetryConfig, profiles_dir
from bench.telemetry.device import TelemetryError
from bench.telemetry.flamegraph import parse_collapsed, pool_shares, render_page, top_changes, tree
from bench.telemetry.jvm import jcmd, jdk_tool
from bench.trials.model import Trials
from bench.util.errors import ConfigError
from bench.util.redact import redact_text

log = logging.getLogger(__name__)

DEVICE = "profile"
SECTION = "profile"
ALL = "all"  # the window of the whole schedule
COLLAPSE_TIMEOUT = 600.0


class Graph(BaseModel):
    """One flame graph of the trial: a node's samples in one window."""

    cluster: str
    node: str
    task: str  # a task's name, or "all"
    samples: int
    collapsed: str  # relative to the trial dir
    html: str
    pools: dict[str, float] = {}  # share of the samples per thread pool (root frame)
    top: list[tuple[str, float]] = []  # frames holding the most samples (inclusive share), thread pools left out


class ProfileSection(BaseModel):
    interval_ms: float
    graphs: list[Graph] = []
    notes: list[str] = []


@dataclass
class Recording:
    cluster: str
    node: str
    proc: psutil.Process
    file: Path
    agent: Path | None = None  # async-profiler's library, when it samples


def safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_"


def template(config: TelemetryConfig, folder: Path) -> Path:
    """The JFR settings of the recording, with the configured period, readable by the node's user."""
    period = float(config.params.get("profile-interval") or 20.0)
    text = (profiles_dir() / "jfr" / "bench-profile.jfc").read_text().replace("PERIOD", f"{period:g} ms")
    path = folder / "bench-profile.jfc"
    path.write_text(text)
    path.chmod(0o644)
    return path


def work_dir() -> Path:
    """Where the nodes' JVMs write their recordings: a folder any user can write (the JVM runs as the node's user;
    bench's home may not be reachable for it), moved into the trial afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="bench-profile-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    folder.chmod(0o1777)
    return folder


async def start_recordings(jvms: dict[tuple[str, str], psutil.Process], settings: Path, name: str,
                           folder: Path, agent: Path | None = None, interval_ms: float = 20.0) -> list[Recording]:
    """Start a recording in every JVM: JFR's, or async-profiler's when ``agent`` (its library) is given."""
    out: list[Recording] = []
    try:
        for (cluster, node), proc in sorted(jvms.items()):
            file = folder / f"{safe(cluster)}--{safe(node)}.jfr"
            if agent is None:
                await jcmd(proc, "JFR.start", f"name={name}", f"settings={settings}", f"filename={file}")
            else:
                await async_profiler.start(proc, agent, file, interval_ms)
            out.append(Recording(cluster, node, proc, file, agent))
    except TelemetryError as e:
        await stop_recordings(out, name)
        raise ConfigError(f"telemetry device profile: could not start a recording: {e}") from None
    return out


async def stop_recordings(recordings: list[Recording], name: str) -> list[str]:
    """Stop (and so write) every recording; returns a line per recording that failed."""
    failed: list[str] = []
    for r in recordings:
        try:
            if r.agent is None:
                await jcmd(r.proc, "JFR.stop", f"name={name}")
            else:
                await async_profiler.stop(r.proc, r.agent, r.file)
        except TelemetryError as e:
            failed.append(f"profile of node {r.node} of cluster {r.cluster}: {e}")
    return failed


def task_windows(store: Trials, trial_id: str, schedule: tuple[float, float]) -> list[tuple[str, float, float]]:
    """(name, start, end) in epoch seconds: the whole schedule, then each task from its first measured request to
    its last answer."""
    windows = [(ALL, schedule[0], schedule[1])]
    df = store.samples(trial_id)
    if df.empty:
        return windows
    measured = df[~df["warmup"]] if "warmup" in df and (~df["warmup"]).any() else df
    for task, rows in measured.groupby("task", sort=False):
        windows.append((str(task), float(rows["absolute_time"].min()),
                        float((rows["absolute_time"] + rows["latency"]).max())))
    return windows


def collapse(recording: Recording, windows: list[tuple[str, float, float]], out: Path) -> dict[str, str]:
    """The recording cut into windows: window name -> collapsed stacks (run on the node's own JDK)."""
    java = jdk_tool(recording.proc, "java")
    work = Path(tempfile.mkdtemp(prefix="bench-collapse-"))
    try:
        spec = work / "windows.tsv"
        spec.write_text("".join(f"{i}\t{int(s * 1000)}\t{int(e * 1000) + 1}\n" for i, (_, s, e) in enumerate(windows)))
        source = profiles_dir() / "jfr" / "JfrCollapse.java"
        try:
            res = subprocess.run([str(java), str(source), str(recording.file), str(spec), str(work)],
                                 capture_output=True, text=True, timeout=COLLAPSE_TIMEOUT, check=False,
                                 stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise TelemetryError(f"reading {recording.file.name}: {e}") from None
        if res.returncode != 0:
            raise TelemetryError(f"reading {recording.file.name} failed: "
                                 f"{redact_text(' '.join((res.stderr or res.stdout).split())[:300])}")
        return {name: (work / f"{i}.collapsed").read_text() for i, (name, _, _) in enumerate(windows)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def keep(recordings: list[Recording], windows: list[tuple[str, float, float]], trial_dir: Path,
         interval_ms: float) -> ProfileSection:
    """Collapse, render and keep every recording with the trial; what could not be read becomes a note."""
    section = ProfileSection(interval_ms=interval_ms)
    for r in recordings:
        folder = trial_dir / "profiles" / safe(r.cluster) / safe(r.node)
        folder.mkdir(parents=True, exist_ok=True)
        if not r.file.is_file():
            section.notes.append(f"Profile of node {r.node} of cluster {r.cluster}: the JVM wrote no recording.")
            continue
        if r.file.parent != folder:
            r.file = Path(shutil.move(str(r.file), folder / "recording.jfr"))
        try:
            per_window = collapse(r, windows, folder)
        except TelemetryError as e:
            section.notes.append(f"Profile of node {r.node} of cluster {r.cluster}: {e}")
            continue
        for name, text in per_window.items():
            stacks = parse_collapsed(text)
            base = safe(name)
            (folder / f"{base}.collapsed").write_text(text)
            title = f"{r.cluster}/{r.node} · {name} · {sum(stacks.values())} samples every {interval_ms:g} ms"
            (folder / f"{base}.html").write_text(render_page(tree(stacks), title))
            section.graphs.append(Graph(
                cluster=r.cluster, node=r.node, task=name, samples=sum(stacks.values()),
                collapsed=str((folder / f"{base}.collapsed").relative_to(trial_dir)),
                html=str((folder / f"{base}.html").relative_to(trial_dir)),
                pools={k: round(v, 6) for k, v in sorted(pool_shares(stacks).items(), key=lambda kv: -kv[1])[:12]},
                top=[(c.frame, round(c.share, 6)) for c in top_changes({}, stacks, n=10)]))
            if not stacks:
                section.notes.append(f"Profile of node {r.node} of cluster {r.cluster}, {name}: no samples "
                                     "(the window was shorter than the sampling interval, or the node was idle).")
    return section


def driver_graphs(trial_dir: Path, workers: int | None) -> tuple[list[Graph], list[str]]:
    """Flame graphs of the load driver's workers (``--enable-driver-profiling``, wall-clock Python samples every
    10 ms), from the collapsed stacks the race moved into the trial."""
    graphs: list[Graph] = []
    found = sorted((trial_dir / DRIVER_PROFILES).glob("worker-*/all.collapsed"))
    for path in found:
        stacks = parse_collapsed(path.read_text())
        worker = path.parent.name
        html_path = path.with_suffix(".html")
        html_path.write_text(render_page(tree(stacks), f"driver/{worker} · all · {sum(stacks.values())} wall-clock "
                                                       "samples every 10 ms"))
        graphs.append(Graph(cluster="driver", node=worker, task=ALL, samples=sum(stacks.values()),
                            collapsed=str(path.relative_to(trial_dir)), html=str(html_path.relative_to(trial_dir)),
                            pools={k: round(v, 6) for k, v in pool_shares(stacks).items()},
                            top=[(c.frame, round(c.share, 6)) for c in top_changes({}, stacks, n=10)]))
    notes = [] if found else ["--enable-driver-profiling: no worker left a profile (the workers profile themselves "
                              "only as local processes, not on Ray)."]
    if found and workers and len(found) < workers:
        notes.append(f"--enable-driver-profiling: {len(found)} of {workers} workers left a profile.")
    return graphs, notes
