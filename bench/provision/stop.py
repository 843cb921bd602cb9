"""``bench stop <trial>``: stop the nodes a ``--keep-cluster`` race left running, as a normal stop would.

The race records what it kept in ``<trial dir>/kept.json``: per node its guard and node processes (with
start times, so a reused pid is never signalled), its folder and where its logs go. Stopping signals the
guard (it shuts the node down: SIGTERM, then SIGKILL after the grace), kills whatever is left, copies the
logs into the trial, removes the node folder, and then the record.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
from pathlib import Path

import psutil
from pydantic import BaseModel, ValidationError

from bench.provision.guard import copy_path
from bench.util.errors import BenchError, StoreError

log = logging.getLogger(__name__)

KEPT_FILE = "kept.json"


class KeptProcess(BaseModel):
    pid: int
    started: float


class KeptNode(BaseModel):
    cluster: str
    node: str
    url: str
    guard: KeptProcess | None
    processes: list[KeptProcess]
    folder: str
    # (source, destination) pairs: what a node keeps with the trial, the same list a normal stop copies.
    copies: list[tuple[str, str]]
    grace: float


class KeptNodes(BaseModel):
    nodes: list[KeptNode]


def process_record(p: psutil.Process) -> KeptProcess | None:
    try:
        return KeptProcess(pid=p.pid, started=p.create_time())
    except psutil.Error:
        return None


def record_kept(trial_dir: Path, node: KeptNode) -> None:
    """Add a kept node to the trial's record (read by ``bench stop``)."""
    path = trial_dir / KEPT_FILE
    kept = read_kept(trial_dir) or KeptNodes(nodes=[])
    kept.nodes = [n for n in kept.nodes if (n.cluster, n.node) != (node.cluster, node.node)] + [node]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(kept.model_dump_json(indent=2))


def read_kept(trial_dir: Path) -> KeptNodes | None:
    path = trial_dir / KEPT_FILE
    if not path.is_file():
        return None
    try:
        return KeptNodes.model_validate_json(path.read_text())
    except (OSError, ValidationError) as e:
        raise StoreError(f"{path} cannot be read ({str(e).splitlines()[0]}): stop the nodes listed in it by hand "
                         "and delete it") from None


def keep_logs(node: str, copies: list[tuple[str, str]]) -> list[str]:
    """Copy what a node keeps with the trial; returns a line per copy that failed (e.g. the disk is full), so
    stopping goes on: the node's folder must still be removed."""
    missed: list[str] = []
    for src, dst in copies:
        try:
            copy_path(src, dst)
        except shutil.Error as e:  # copytree: one (src, dst, reason) per file that failed
            failed = e.args[0] if e.args and isinstance(e.args[0], list) else []
            reason = str(failed[0][2]) if failed else str(e)[:200]
            missed.append(f"node {node}: {len(failed)} file(s) of {src} were not kept in {dst}: {reason}")
        except OSError as e:
            missed.append(f"node {node}: {src} was not kept in {dst}: {e.strerror or e}")
    for line in missed:
        log.warning("%s", line)
    return missed


def _live(rec: KeptProcess | None) -> psutil.Process | None:
    if rec is None:
        return None
    try:
        p = psutil.Process(rec.pid)
        if abs(p.create_time() - rec.started) < 1.0 and p.status() != psutil.STATUS_ZOMBIE:
            return p
    except psutil.Error:
        pass
    return None


def stop_kept_node(node: KeptNode) -> list[str]:
    """Stop one kept node; returns what could not be kept with the trial (empty when all was kept)."""
    guard = _live(node.guard)
    procs = [p for p in (_live(r) for r in node.processes) if p is not None]
    if guard is not None:
        try:
            guard.send_signal(signal.SIGTERM)  # the guard stops the node gracefully, then forcibly
            guard.wait(timeout=node.grace + 20)
        except psutil.TimeoutExpired:
            log.warning("node %s: guard did not stop in time; killing it and the node", node.node)
        except psutil.NoSuchProcess:
            pass
    else:
        for p in procs:
            try:
                p.terminate()
            except psutil.NoSuchProcess:
                pass
    _, alive = psutil.wait_procs(procs, timeout=node.grace if guard is None else 5)
    for p in [*alive, *([guard] if guard is not None and guard.is_running() else [])]:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=10)
    missed = keep_logs(node.node, node.copies)
    shutil.rmtree(node.folder, ignore_errors=True)
    parent = os.path.dirname(node.folder)
    for _ in range(2):  # the cluster's and the trial's node folders, once empty
        try:
            os.rmdir(parent)
        except OSError:
            break
        parent = os.path.dirname(parent)
    return missed


def stop_trial(trial_id: str, trial_dir: Path) -> list[str]:
    """Stop every node the trial kept; returns one line per node (and per log that could not be kept)."""
    kept = read_kept(trial_dir)
    if kept is None or not kept.nodes:
        raise BenchError(f"trial {trial_id} has no kept nodes to stop (only a --keep-cluster race keeps nodes, "
                         "and 'bench stop' stops them once)")
    lines: list[str] = []
    for node in kept.nodes:
        missed = stop_kept_node(node)
        lines.append(f"stopped node {node.node} of cluster {node.cluster} ({node.url}); removed {node.folder}")
        lines += missed
    (trial_dir / KEPT_FILE).unlink(missing_ok=True)
    return lines
