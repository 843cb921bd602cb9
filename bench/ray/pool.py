"""The load-driver workers as Ray actors on a Ray cluster's nodes: a WorkerPool for ``--load-driver=ray:ADDRESS``.

Each actor runs the worker loop of a local worker process (``bench.ray.actor``). Commands are actor calls (in
order: one thread serves them); messages come back by long polls, one in flight per actor, read by a thread that
hands them to the coordinator's loop. The common start (``Go``) is sent in each node's own monotonic clock, whose
offset to ours is measured at start.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

import bench
from bench.driver.backends import OpenedPool
from bench.driver.bulk.step_corpora import CorporaPrepared
from bench.driver.messages import Command, Go, Message, Ready, Step, WorkerError
from bench.driver.samples import TelemetryRow
from bench.ray.actor import RayWorker
from bench.ray.busy_nodes import busy_node_notes
from bench.ray.connect import connect
from bench.util.errors import ConfigError, RaceError

log = logging.getLogger(__name__)

# For every actor to answer once (a node pulling a runtime env takes a while). Only the start waits on it: a
# step's ``Ready`` (after a node downloaded and decompressed its corpus files, however long that takes) is awaited
# by the coordinator without a limit, and Ctrl-C or another node's error stops it.
START_TIMEOUT = 60.0
POLL_WAIT = 0.25  # how long a poll waits on an idle worker: also how late the reader sees a close
STOP_TIMEOUT = 3.0  # for the workers' loops to end before their actors are killed
CLOCK_PROBES = 5  # round trips per worker; the one with the shortest round trip gives the clock offset
DEVICE = "load-driver"  # the telemetry rows the pool stores with the trial: one set per Ray node


@dataclass(frozen=True, slots=True)
class _Lost:
    """The reader's word that worker ``wid``'s actor stopped answering (its node lost): ``next_message`` makes it
    a WorkerError, and only then counts the worker as exited, so the coordinator reads the node's name first."""

    wid: int
    message: str


@dataclass
class RayNode:
    node_id: str
    ip: str
    cpus: int

    @property
    def name(self) -> str:
        return f"Ray node {self.ip} ({self.node_id[:8]})"


def cluster_nodes() -> list[RayNode]:
    """The live nodes with CPUs, the one bench runs on first (ray.init joined through it), then by id."""
    here = ray.get_runtime_context().get_node_id()
    nodes = [RayNode(n["NodeID"], n["NodeManagerAddress"], int(n["Resources"].get("CPU", 0)))
             for n in ray.nodes() if n.get("Alive")]
    nodes = [n for n in nodes if n.cpus > 0]
    return sorted(nodes, key=lambda n: (n.node_id != here, n.node_id))


def placement(nodes: list[RayNode], workers: int | None) -> list[RayNode]:
    """The node of each worker: ``workers`` dealt round-robin over the nodes, or one per CPU of each node (also
    round-robin, so the clients the coordinator deals out in worker order spread over the nodes as Rally's do)."""
    if workers is not None:
        return [nodes[i % len(nodes)] for i in range(workers)]
    left = {n.node_id: n.cpus for n in nodes}
    out: list[RayNode] = []
    while any(left.values()):
        for n in nodes:
            if left[n.node_id]:
                left[n.node_id] -= 1
                out.append(n)
    return out


def open_ray_pool(address: str, workers: int | None, hosts: list[str] | None = None) -> OpenedPool:
    started = time.monotonic()
    resolved = connect(address)
    nodes = cluster_nodes()
    if not nodes:
        ray.shutdown()
        raise ConfigError(f"the Ray cluster at {resolved} has no live node with a CPU to run load-driver workers on")
    if hosts:  # Rally's --load-driver-hosts: only the Ray nodes on those machines drive
        unknown = [h for h in hosts if h not in {n.ip for n in nodes}]
        if unknown:
            ray.shutdown()
            raise ConfigError(f"--load-driver-hosts: no Ray node at {', '.join(unknown)} in the cluster at {resolved} "
                              f"(its nodes are at {', '.join(sorted({n.ip for n in nodes}))})")
        nodes = [n for n in nodes if n.ip in hosts]
    where = placement(nodes, workers)
    return OpenedPool(RayWorkerPool(resolved, where, started), len(where))


class RayWorkerPool:
    def __init__(self, address: str, where: list[RayNode], started: float) -> None:
        self.address = address
        self._where = where
        self._started = started  # when joining the cluster began: start-up cost counts from there
        self._actors: list[Any] = []
        self._pids: dict[int, int] = {}
        self._local_ip = ray.util.get_node_ip_address()
        # Actors on other nodes prepare their own corpus files (by node, not IP: two nodes of one machine may have
        # different data caches).
        self._here = ray.get_runtime_context().get_node_id()
        self._step = -1  # the step whose plans were sent last
        self._prepare_s: dict[tuple[str, int], float] = {}  # (node name, step) -> its slowest worker's seconds
        # Per worker, the wall and CPU seconds of the preparations after the first ``Go``: not driving, so left out
        # of the driver's CPU per worker.
        self._prepare_after_go: dict[int, tuple[float, float]] = {}
        self.clock_offsets: dict[str, float] = {}  # node name -> its monotonic clock minus ours (seconds)
        self._offset: list[float] = []
        self.startup_seconds: float | None = None
        self._lost: set[int] = set()  # workers whose loss the coordinator has been told about
        self._messages: asyncio.Queue[Message | _Lost] | None = None
        self._reader: threading.Thread | None = None
        self._closing = threading.Event()
        self._closed = False
        # (our monotonic at the first ``Go``, each worker's CPU seconds then: answers read only at the end)
        self._cpu_at_go: tuple[float, list[Any]] | None = None
        self.node_cpu: dict[str, float] = {}  # node name -> CPU cores per worker from the first start to the end

    # -- WorkerPool ------------------------------------------------------------------------------
    def start(self, count: int, extensions: dict[str, str]) -> None:
        assert count == len(self._where), "the coordinator starts as many workers as open_ray_pool placed"
        # ray.remote's overloads leave out concurrency_groups, an actor option Ray documents (and .options() refuses)
        remote = ray.remote(concurrency_groups={"results": 1})(RayWorker)  # type: ignore[call-overload]
        env = {"env_vars": {"PYTHONPATH": _bench_root()}}
        try:
            for wid, node in enumerate(self._where):
                self._actors.append(remote.options(
                    num_cpus=0, runtime_env=env, name=None,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
                ).remote(wid, extensions, node.name, node.node_id != self._here))
            infos = self._await([a.info.remote() for a in self._actors], "start")
            self._pids = {wid: i["pid"] for wid, i in enumerate(infos) if i["ip"] == self._local_ip}
            self._offset = [self._measure_offset(a) for a in self._actors]
        except BaseException:
            self.close()
            raise
        for wid, node in enumerate(self._where):
            self.clock_offsets.setdefault(node.name, self._offset[wid])
        self.startup_seconds = time.monotonic() - self._started
        per_node: dict[str, int] = {}
        for node in self._where:
            per_node[node.name] = per_node.get(node.name, 0) + 1
        log.info("Ray load driver at %s: %s; clock offsets %s; started in %.2f s", self.address,
                 ", ".join(f"{k}: {v} worker(s)" for k, v in per_node.items()),
                 ", ".join(f"{k}: {v * 1000:+.3f} ms" for k, v in self.clock_offsets.items()), self.startup_seconds)

    def send(self, wid: int, cmd: Command) -> None:
        if isinstance(cmd, Step):
            self._step = cmd.plan.step
        if isinstance(cmd, Go):  # the common start in the worker's own clock
            if self._cpu_at_go is None and wid == 0:  # asked, not awaited: the start must not wait for it
                self._cpu_at_go = (time.monotonic(), self._ask_cpu())
            cmd = Go(cmd.start_at + self._offset[wid])
        self._actors[wid].send.remote(cmd)

    def broadcast(self, cmd: Command) -> None:
        for wid in range(len(self._actors)):
            self.send(wid, cmd)

    async def next_message(self, timeout: float) -> Message | None:
        if self._messages is None:
            self._messages = asyncio.Queue()
            self._reader = threading.Thread(target=self._read, args=(asyncio.get_running_loop(), self._messages),
                                            daemon=True, name="bench-ray-results")
            self._reader.start()
        try:
            msg = await asyncio.wait_for(self._messages.get(), timeout)
        except asyncio.TimeoutError:
            return None
        if isinstance(msg, _Lost):
            # Only now does the worker count as exited: the coordinator reads the node's name first.
            self._lost.add(msg.wid)
            return WorkerError(msg.wid, msg.message)
        if isinstance(msg, Ready) and msg.prepared is not None:
            self._prepared(msg.wid, msg.prepared)
        return msg

    def exit_codes(self) -> dict[int, int | None]:
        return {wid: (-1 if wid in self._lost else None) for wid in range(len(self._actors))}

    def pids(self) -> list[int]:
        """The workers on this machine only: host telemetry cannot see another machine's processes."""
        return list(self._pids.values())

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        self._report_cpu()
        live = [a for wid, a in enumerate(self._actors) if wid not in self._lost]
        try:
            ray.wait([a.stop.remote(STOP_TIMEOUT) for a in live], num_returns=len(live), timeout=STOP_TIMEOUT + 2)
        except Exception as e:  # noqa: BLE001 - the actors are killed below whatever the answer
            log.debug("stopping Ray workers: %s", e)
        for a in self._actors:
            try:
                ray.kill(a)
            except Exception as e:  # noqa: BLE001 - an actor of a lost node is gone already
                log.debug("killing a Ray worker: %s", e)
        if self._reader is not None:
            self._reader.join(POLL_WAIT + 5)
        self._actors.clear()
        ray.shutdown()

    def telemetry(self) -> list[TelemetryRow]:
        """Per Ray node: its workers, its clock's offset to bench's (ms), the driver's CPU per worker (cores), and
        for a node that prepared its own corpus files how long that took (s)."""
        now = time.time()
        rows = []
        prepared = self.corpus_prepare_seconds()
        for name in dict.fromkeys(n.name for n in self._where):
            rows.append(TelemetryRow(now, "driver", name, DEVICE, "workers",
                                     float(sum(1 for n in self._where if n.name == name))))
            if name in self.clock_offsets:
                rows.append(TelemetryRow(now, "driver", name, DEVICE, "clock_offset_ms", self.clock_offsets[name] * 1000))
            if name in self.node_cpu:
                rows.append(TelemetryRow(now, "driver", name, DEVICE, "cpu_cores_per_worker", self.node_cpu[name]))
            if name in prepared:
                rows.append(TelemetryRow(now, "driver", name, DEVICE, "corpus_prepare_s", prepared[name]))
        return rows

    def notes(self) -> list[str]:
        """A node whose workers each used more than BUSY_SHARE of a core: the summary says so (known after
        ``close``)."""
        return busy_node_notes(self.node_cpu)

    def corpus_prepare_seconds(self) -> dict[str, float]:
        """Per node that prepared its own corpus files: the time it took, summed over the steps (per step, its
        slowest worker: a node's workers prepare together)."""
        out: dict[str, float] = {}
        for (name, _step), seconds in self._prepare_s.items():
            out[name] = out.get(name, 0.0) + seconds
        return out

    # -- internals -------------------------------------------------------------------------------
    def _prepared(self, wid: int, prepared: CorporaPrepared) -> None:
        node = self._where[wid]
        key = (node.name, self._step)
        self._prepare_s[key] = max(self._prepare_s.get(key, 0.0), prepared.seconds)
        if self._cpu_at_go is not None:
            wall, cpu = self._prepare_after_go.get(wid, (0.0, 0.0))
            self._prepare_after_go[wid] = (wall + prepared.seconds, cpu + prepared.cpu_seconds)
        log.info("%s: bench-worker-%d prepared the corpus files of step %d in its own data cache in %.2f s "
                 "(%.2f CPU s)", node.name, wid, self._step, prepared.seconds, prepared.cpu_seconds)

    def _await(self, refs: list[Any], what: str) -> list[Any]:
        ready, pending = ray.wait(refs, num_returns=len(refs), timeout=START_TIMEOUT)
        if pending:
            late = sorted({self._where[refs.index(r)].name for r in pending})
            raise RaceError(f"Ray load-driver workers did not {what} within {START_TIMEOUT:.0f} s on "
                            f"{', '.join(late)}")
        out = []
        for wid, ref in enumerate(refs):
            try:
                out.append(ray.get(ref))
            except Exception as e:  # noqa: BLE001 - e.g. bench cannot be imported there, or the node just died
                raise RaceError(f"Ray load-driver worker bench-worker-{wid} failed to {what} on "
                                f"{self._where[wid].name}: {_first_line(e)}") from None
        return out

    def _ask_cpu(self) -> list[Any]:
        return [None if wid in self._lost else a.cpu_seconds.remote() for wid, a in enumerate(self._actors)]

    def _cpu_seconds(self, refs: list[Any]) -> list[float]:
        """Each worker's CPU seconds (NaN where it does not answer soon: lost, or too busy to tell)."""
        asked = [r for r in refs if r is not None]
        if not asked:
            return [float("nan")] * len(refs)
        ready, _ = ray.wait(asked, num_returns=len(asked), timeout=2.0)
        out = []
        for r in refs:
            try:
                out.append(float(ray.get(r)) if r is not None and r in ready else float("nan"))
            except Exception:  # noqa: BLE001 - a lost worker: no figure for it
                out.append(float("nan"))
        return out

    def _report_cpu(self) -> None:
        """The driver's CPU per node (host telemetry sees this machine's workers only): a node whose workers
        each used more than BUSY_SHARE of a core may have limited the load, and is flagged (``notes``). A worker's
        corpus preparations between steps are not driving: their CPU and time are left out."""
        if self._cpu_at_go is None or not self._actors:
            return
        t0, asked = self._cpu_at_go
        before = self._cpu_seconds(asked)
        after = self._cpu_seconds(self._ask_cpu())
        wall = time.monotonic() - t0
        per_node: dict[str, list[float]] = {}
        for wid, node in enumerate(self._where):
            prep_wall, prep_cpu = self._prepare_after_go.get(wid, (0.0, 0.0))
            used = after[wid] - before[wid] - prep_cpu
            driving = wall - prep_wall
            if used == used:  # not NaN
                per_node.setdefault(node.name, []).append(max(0.0, used) / driving if driving > 0 else 0.0)
        for name, shares in per_node.items():
            self.node_cpu[name] = sum(shares) / len(shares)
        for note in busy_node_notes(self.node_cpu):
            log.warning("%s", note)
        log.info("Ray load driver CPU per worker: %s",
                 ", ".join(f"{k}: {v * 100:.0f} %" for k, v in self.node_cpu.items()))

    def _measure_offset(self, actor: Any) -> float:
        best = (float("inf"), 0.0)
        for _ in range(CLOCK_PROBES):
            t0 = time.monotonic()
            remote = ray.get(actor.monotonic.remote(), timeout=START_TIMEOUT)
            t1 = time.monotonic()
            best = min(best, (t1 - t0, remote - (t0 + t1) / 2))
        return best[1]

    def _read(self, loop: asyncio.AbstractEventLoop, messages: asyncio.Queue[Message | _Lost]) -> None:
        def deliver(msg: Message | _Lost) -> bool:
            try:
                loop.call_soon_threadsafe(messages.put_nowait, msg)
                return True
            except RuntimeError:  # the loop is closed: nobody waits any more
                return False

        def poll(wid: int) -> Any:
            return self._actors[wid].poll.options(concurrency_group="results").remote(POLL_WAIT)

        pending = {poll(wid): wid for wid in range(len(self._actors))}
        while pending and not self._closing.is_set():
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_WAIT * 2)
            for ref in ready:
                wid = pending.pop(ref)
                try:
                    batch = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - the actor or its node is gone: the race fails naming it
                    if self._closing.is_set():
                        return
                    if not deliver(_Lost(wid, self._loss(wid, e))):
                        return
                    continue
                for msg in batch:
                    if not deliver(msg):
                        return
                pending[poll(wid)] = wid

    def _loss(self, wid: int, e: BaseException) -> str:
        node = self._where[wid]
        try:
            alive = any(n["NodeID"] == node.node_id and n.get("Alive") for n in ray.nodes())
        except Exception:  # noqa: BLE001 - the cluster itself may be going: then the node is lost too
            alive = False
        # Right after a node dies the cluster may still list it alive (its health checks have not failed yet).
        what = (f"{node.name} lost" if not alive
                else f"{node.name} (or its worker bench-worker-{wid}) stopped answering")
        return f"{what} during the race ({type(e).__name__}); what was measured until then is kept"


def _bench_root() -> str:
    """The folder bench is imported from here: on one machine (or a shared path) a checkout run through
    PYTHONPATH is then the bench the actors run too; elsewhere the nodes' installed bench is used."""
    return str(Path(bench.__file__).resolve().parent.parent)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[-1] if text else ''}"
