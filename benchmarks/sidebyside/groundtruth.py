"""Ground truth for one run: the cluster's own indexed-document counter and the tool's CPU, sampled together.

A thread polls ``GET _nodes/stats/indices/indexing`` every 0.25 s and sums ``indices.indexing.index_total``
over the nodes (a node keeps the counts of deleted shards, so the sum only grows), and reads the CPU seconds
of the tool's processes (psutil; its tree and every process with the run's marker in its environment).
From the series:

- the task's start is the first poll that sees the counter move, its end the first poll that sees the final
  value (both within 0.25 s of the truth); the measured period is [start + warmup, end], like the tools';
- true mean = documents indexed in the measured period / its length;
- true per-second min/median/max: the counter (linearly interpolated between polls) at 1 s edges from the
  measured start, differenced; only whole seconds inside the period count;
- running mean (what Rally's ThroughputCalculator reports at each 1 s edge): documents since the task's start
  / seconds since the task's start, at the same edges; its min/median/max show what the running-mean
  definition does to the same truth;
- client CPU cores: CPU seconds of the tool's processes over the measured period / its length;
- poll interval: the median time between polls (longer than 0.25 s when the machine is busy).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import psutil
import requests
from pydantic import BaseModel

POLL_S = 0.25


MARKER_ENV = "BENCH_SIDEBYSIDE_RUN"


@dataclass
class ToolProcesses:
    """The processes of one tool run: its own tree plus any process carrying the run's marker in its
    environment. Rally's and OSB's actor systems detach their processes from the tool's tree, but they
    inherit its environment, so the marker finds them."""

    root: psutil.Process
    marker: str
    found: dict[int, psutil.Process] = field(default_factory=dict)
    _seen: set[tuple[int, float]] = field(default_factory=set)
    _last_scan: float = 0.0

    def _scan(self) -> None:
        for p in psutil.process_iter(["pid", "create_time"]):
            key = (p.info["pid"], p.info["create_time"] or 0.0)
            if key in self._seen:
                continue
            self._seen.add(key)
            try:
                if p.environ().get(MARKER_ENV) == self.marker:
                    self.found[p.pid] = p
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                pass

    def cpu_seconds(self) -> float:
        """CPU seconds of the live processes (exited children count in children_* once reaped)."""
        if time.monotonic() - self._last_scan > 1.0:
            self._scan()
            self._last_scan = time.monotonic()
        procs = {self.root.pid: self.root, **self.found}
        try:
            procs.update({c.pid: c for c in self.root.children(recursive=True)})
        except psutil.NoSuchProcess:
            pass
        total = 0.0
        for p in procs.values():
            try:
                t = p.cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                pass
        return total


@dataclass
class Poller:
    """Samples (wall time, index_total, tool CPU seconds) until stopped."""

    url: str
    processes: ToolProcesses
    samples: list[tuple[float, int, float]] = field(default_factory=list)
    errors: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _total(self, session: requests.Session) -> int:
        r = session.get(f"{self.url}/_nodes/stats/indices/indexing",
                        params={"filter_path": "nodes.*.indices.indexing.index_total"}, timeout=5)
        r.raise_for_status()
        return sum(int(n["indices"]["indexing"]["index_total"]) for n in r.json()["nodes"].values())

    def _run(self) -> None:
        with requests.Session() as s:
            while not self._stop.is_set():
                t0 = time.monotonic()
                try:
                    total = self._total(s)
                    self.samples.append((time.time(), total, self.processes.cpu_seconds()))
                except (requests.RequestException, KeyError, ValueError):
                    self.errors += 1
                self._stop.wait(max(0.0, POLL_S - (time.monotonic() - t0)))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="groundtruth", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


class Truth(BaseModel):
    mean: float
    min: float
    median: float
    max: float
    running_min: float
    running_median: float
    running_max: float
    measured_s: float
    documents: int
    client_cpu_cores: float
    poll_interval_s: float
    poll_errors: int


def truth(samples: list[tuple[float, int, float]], warmup_s: float, poll_errors: int = 0) -> Truth | None:
    """The ground truth of one run (see the module doc); None when the counter never moved."""
    if len(samples) < 3:
        return None
    t = np.array([s[0] for s in samples])
    raw = np.array([s[1] for s in samples], dtype=float)
    # Only increments count, in case a deleted index's counts leave the node total on some version.
    n = np.concatenate([[0.0], np.cumsum(np.clip(np.diff(raw), 0, None))])
    cpu = np.array([s[2] for s in samples])
    moved = np.nonzero(n > n[0])[0]
    if moved.size == 0:
        return None
    start = t[moved[0]]
    end = t[int(np.argmax(n >= n[-1]))]
    m0 = start + warmup_s
    if end - m0 < 1.0:
        return None

    def at(x: np.ndarray | float) -> np.ndarray:
        return np.interp(x, t, n)

    edges = np.arange(m0, end + 1e-9, 1.0)
    per_second = np.diff(at(edges))
    docs = float(at(end) - at(m0))
    running = (at(edges[1:]) - at(start)) / (edges[1:] - start)
    ok = ~np.isnan(cpu)
    cores = float((np.interp(end, t[ok], cpu[ok]) - np.interp(m0, t[ok], cpu[ok])) / (end - m0)) if ok.sum() > 1 \
        else float("nan")
    return Truth(mean=docs / (end - m0), min=float(per_second.min()), median=float(np.median(per_second)),
                 max=float(per_second.max()), running_min=float(running.min()),
                 running_median=float(np.median(running)), running_max=float(running.max()),
                 measured_s=float(end - m0), documents=int(round(docs)), client_cpu_cores=cores,
                 poll_interval_s=float(np.median(np.diff(t))), poll_errors=poll_errors)
