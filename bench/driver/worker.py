"""A load-driver worker process: runs its share of a step's clients on its own asyncio loop.

It hears the coordinator's commands and answers with messages, the classes of ``bench.driver.messages`` (which says
the protocol), through the coordinator's WorkerPool (multiprocessing queues by default).
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from bench.driver.arrival_loop import Slot, run_arrivals
from bench.driver.bulk.step_corpora import CorporaPrepared, prepare_step_documents
from bench.driver.client_loop import run_client
from bench.driver.loop_load import LoopLoad, LoopProbe
from bench.driver.messages import (
    Arrivals,
    Cancel,
    Cancelled,
    Command,
    EndStep,
    Failure,
    Go,
    Message,
    Ready,
    Samples,
    Shutdown,
    Step,
    StepDone,
    StepPlan,
    Stop,
    TaskDone,
    WorkerError,
)
from bench.driver.param_sources import SourceContext, param_source
from bench.driver.profiling import profiled
from bench.driver.runners.core import Context, with_retries
from bench.driver.runners.registry import runner_for
from bench.driver.runners.request_options import with_request_options
from bench.driver.samples import SampleFields
from bench.driver.track_code import TrackCode
from bench.driver.worker_extensions import load_extensions
from bench.http.client import ClusterTarget, RawHttp
from bench.provision.osuser import pdeathsig_preexec
from bench.track.model import Task
from bench.util.errors import BenchError
from bench.util.memory import out_of_memory

FLUSH_INTERVAL = 0.5
# A batch is flushed at this many samples too: the transport pickles a batch in one C call that holds the GIL
# (multiprocessing's feeder thread), so the worker's event loop stalls as long as that takes. Half a second of
# 20,000 requests/s took 6-8 ms, every half second: the requests due then went out that late.
FLUSH_SAMPLES = 1000

log = logging.getLogger(__name__)


class Commands(Protocol):
    """Where a worker reads the coordinator's commands: a blocking ``get`` (a multiprocessing queue locally)."""

    def get(self) -> Command: ...


class Results(Protocol):
    """Where a worker puts its messages for the coordinator."""

    def put(self, msg: Message, /) -> None: ...


def raise_nofile_limit() -> None:
    """Thousands of clients need as many sockets: lift the soft file-descriptor limit to the hard one."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY or soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 1 << 20, hard))
    except (ImportError, ValueError, OSError) as e:  # not fatal: few clients need few descriptors
        log.warning("could not raise the open-files limit: %s", e)


FD_RESERVE = 32  # descriptors a worker needs besides its clients' sockets (queues, logs, corpus files, pipes)


def check_nofile_limit(wid: int, clients: int, targets: int) -> None:
    """A worker whose clients cannot all have a socket would report "Too many open files" as failed requests, as
    if the cluster had refused them: it fails the step before any request instead."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, ValueError, OSError):
        return
    need = clients * targets + FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < need:
        raise BenchError(f"load driver worker bench-worker-{wid} runs {clients} client(s) against {targets} "
                         f"cluster(s) and needs about {need} open files, but may open {soft} (ulimit -n): raise "
                         "the limit (ulimit -Hn, LimitNOFILE=) or use fewer clients per --worker-processes")


def _die_with_parent() -> None:
    """A worker outlives a ``kill -9`` of bench otherwise (and keeps sending load): the kernel kills it instead."""
    pdeathsig_preexec(signal.SIGKILL)()
    parent = mp.parent_process()
    if parent is not None and os.getppid() != parent.pid:  # bench died before the prctl: we were reparented
        os.kill(os.getpid(), signal.SIGKILL)


def worker_main(wid: int, commands: Commands, results: Results, extensions: dict[str, str] | None = None) -> None:
    """A local worker process's main: the process set up as a child of bench, then the worker loop."""
    _die_with_parent()
    # Ctrl-C in a terminal reaches the whole process group: the coordinator decides when we stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise_nofile_limit()
    with profiled(wid):
        run_worker(wid, commands, results, extensions)


def run_worker(wid: int, commands: Commands, results: Results, extensions: dict[str, str] | None = None, *,
               prepare_corpora: bool = False) -> None:
    """The worker loop, in any thread of any process: ``commands`` has a blocking ``get()``, ``results`` a
    ``put(message)`` (multiprocessing queues locally; another backend's queue-like objects elsewhere).
    ``prepare_corpora``: this worker cannot read the coordinator's corpus files (another machine, another data
    cache) and prepares each step's document sets itself."""
    while True:
        cmd = commands.get()
        if isinstance(cmd, Shutdown):
            return
        if not isinstance(cmd, Step):
            continue  # a late Stop/Go of a step that already ended
        loop = asyncio.new_event_loop()
        stop = asyncio.Event()
        cancel = asyncio.Event()
        go: asyncio.Future[float] = loop.create_future()
        # During a step a thread owns the command queue; it returns at EndStep, which the coordinator sends
        # once it has this worker's StepDone, so the two readers never compete.
        listener = threading.Thread(target=_listen, args=(commands, loop, stop, cancel, go), daemon=True)
        listener.start()
        load: LoopLoad | None = None
        out_of_memory_seen: list[MemoryError] = []
        loop.set_exception_handler(functools.partial(_on_loop_error, out_of_memory_seen, stop, cancel))
        try:
            # Every step (cheap after the first): a failure to load is reported where the coordinator listens.
            load_extensions(extensions or {})
            load = loop.run_until_complete(_run_step(wid, cmd.plan, results, stop, cancel, go, prepare_corpora))
            if out_of_memory_seen:
                raise out_of_memory_seen[0]
        except BenchError as e:
            results.put(WorkerError(wid, str(e)))
        except MemoryError:
            results.put(WorkerError(wid, out_of_memory(
                f"load driver worker bench-worker-{wid}", "raise the limit, or give its clients less to hold "
                "(fewer clients per worker: more --worker-processes; smaller requests or bulks)")))
        except Exception as e:
            log.exception("worker %s failed", wid)
            results.put(WorkerError(wid, f"worker {wid}: {type(e).__name__}: {e}"))
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            results.put(StepDone(wid, load))
            listener.join()
            loop.close()


def _on_loop_error(seen: list[MemoryError], stop: asyncio.Event, cancel: asyncio.Event,
                   loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Out of memory inside the event loop's own machinery (a socket read) closes that connection, which its
    request would report as a connection error: the step ends instead, and the worker reports the memory."""
    error = context.get("exception")
    if not isinstance(error, MemoryError):
        loop.default_exception_handler(context)
        return
    if not seen:
        seen.append(error)
        stop.set()
        cancel.set()


def _routing_watchers(jobs: list[tuple[Any, ...]], https: dict[str, RawHttp], targets: list[ClusterTarget],
                      default_cluster: str) -> list[asyncio.Task[None]]:
    """One task per shard-aware routing watch of this worker's clients (shared by the clients of a task run)."""
    watches = {id(w): w for *_, source, _ in jobs if (w := getattr(source, "routing_watch", None)) is not None
               and w.interval > 0}
    out = []
    for w in watches.values():
        name = w.cluster or default_cluster
        scheme = next(t for t in targets if t.name == name).urls()[0].split("://", 1)[0]
        out.append(asyncio.create_task(w.run(https[name], scheme)))
    return out


def _listen(commands: Commands, loop: asyncio.AbstractEventLoop, stop: asyncio.Event, cancel: asyncio.Event,
            go: asyncio.Future[float]) -> None:
    def call(fn: Callable[[], object]) -> None:
        try:
            loop.call_soon_threadsafe(fn)
        except RuntimeError:  # the loop already finished
            pass

    def start(at: float) -> None:  # on the loop
        if not go.done():
            go.set_result(at)

    while True:
        cmd = commands.get()
        if isinstance(cmd, Go):
            call(functools.partial(start, cmd.start_at))
        elif isinstance(cmd, Cancel):
            call(cancel.set)
        elif isinstance(cmd, Stop | EndStep | Shutdown):
            call(stop.set)
            call(lambda: start(time.monotonic()))
            if not isinstance(cmd, Stop):
                return


class StepStopped(Exception):
    """The step was stopped before this worker was ready."""


async def _prepare_documents(plan: StepPlan, stop: asyncio.Event) -> CorporaPrepared | None:
    """Prepare the step's document sets here, off the loop so that a Stop (Ctrl-C, another worker's error)
    is heard while a node downloads for minutes; returns the time it took (None: nothing to prepare), or
    raises StepStopped. A preparation left behind finishes or dies with the process: every file is written
    under a temporary name and renamed when complete, so nothing half-made is ever read."""
    assert plan.corpora is not None
    corpora = plan.corpora
    tasks = {plan.tasks[ti].name for ti, _ in plan.clients}
    track = plan.track_code.track if plan.track_code is not None else None
    started = time.monotonic()
    loop = asyncio.get_running_loop()
    # (document sets prepared, CPU seconds it took)
    done: asyncio.Future[tuple[int, float]] = loop.create_future()

    def settle(outcome: tuple[int, float] | BaseException) -> None:
        if done.done():
            return
        if isinstance(outcome, BaseException):
            done.set_exception(outcome)
        else:
            done.set_result(outcome)

    def prepare() -> None:
        cpu = time.thread_time()
        outcome: tuple[int, float] | BaseException
        try:
            sets = prepare_step_documents(corpora, plan.documents, tasks, track)
            outcome = (sets, time.thread_time() - cpu)
        except BaseException as e:  # noqa: BLE001 - handed to the loop, which raises it
            outcome = e
        try:
            loop.call_soon_threadsafe(settle, outcome)
        except RuntimeError:  # the step was stopped and its loop closed: nobody waits any more
            pass

    threading.Thread(target=prepare, name="bench-corpus-prepare", daemon=True).start()
    stopped = asyncio.ensure_future(stop.wait())
    waiting: set[asyncio.Future[Any]] = {done, stopped}
    try:
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if not done.done():
        raise StepStopped
    sets, cpu_seconds = done.result()
    return CorporaPrepared(time.monotonic() - started, cpu_seconds) if sets else None


Job = tuple[Task, int, Any, Any, Any]  # task, client id, runner, param source, offsets


def _jobs(plan: StepPlan, code: TrackCode | None) -> list[Job]:
    """Each client of this worker with its runner and parameter source (a track's own where it registers them)."""
    gzip_for = {t.name: t.options.http_compress for t in plan.targets}
    default_index = next(iter(plan.indices), None) if len(plan.indices) == 1 else None
    jobs: list[Job] = []
    for task_idx, client_id in plan.clients:
        task = plan.tasks[task_idx]
        op = task.operation
        custom = code.parts(task, client_id) if code is not None else None
        runner = (custom.runner if custom is not None and custom.runner is not None
                  else with_retries(with_request_options(runner_for(op.operation_type), op.name, op.operation_type,
                                                         op.params), op.params))
        source = custom.source if custom is not None and custom.source is not None else param_source(
            task, SourceContext(client_id, plan.documents.get(task.name, []), gzip_for, plan.default_cluster,
                                default_index))
        jobs.append((task, client_id, runner, source, custom.offsets if custom is not None else None))
    return jobs


async def _connect(jobs: list[Job], https: dict[str, RawHttp], default_cluster: str) -> None:
    """Every client's connection opened before the common start, so that no client's first request measures its
    connect (thousands at once are a storm in the server's accept queue)."""
    clients_of: dict[str, int] = {}
    for task, *_ in jobs:
        name = task.operation.params.get("cluster", default_cluster)
        if isinstance(name, str):
            clients_of[name] = clients_of.get(name, 0) + 1
    await asyncio.gather(*(https[n].connect(c) for n, c in clients_of.items() if n in https))


async def _run_step(wid: int, plan: StepPlan, results: Results, stop: asyncio.Event, cancel: asyncio.Event,
                    go: asyncio.Future[float], prepare_corpora: bool = False) -> LoopLoad | None:
    """Run the worker's share of the step; returns how busy its loop was once the step started."""
    prepared = None
    if prepare_corpora and plan.corpora is not None:
        try:
            prepared = await _prepare_documents(plan, stop)
        except StepStopped:
            return None
    per_cluster = max(1, len(plan.clients))
    check_nofile_limit(wid, len(plan.clients), len(plan.targets))
    https = {t.name: RawHttp(t, connections=per_cluster) for t in plan.targets}
    ctx = Context(http=https, default_cluster=plan.default_cluster, indices=plan.indices,
                  definitions=plan.definitions)
    code = TrackCode(plan.track_code, plan.targets, plan.default_cluster, per_cluster) if plan.track_code else None
    jobs = _jobs(plan, code)
    for h in https.values():
        await h.__aenter__()
    try:
        await _connect(jobs, https, plan.default_cluster)
        # Python's full collections walk every tracked object: here the modules, the track and its documents, so
        # at 20,000 paced searches/s one took ~75 ms once a second and every request due meanwhile started that
        # late (p99 latency 89 ms against 4 ms of service time). What exists now lives through the step: collect
        # once before the start, then keep it out of the collector's walks until the step ends.
        gc.collect()
        gc.freeze()
        results.put(Ready(wid, prepared))
        start_at = await go
        return await _StepClients(wid, plan, results, stop, cancel, ctx).run(jobs, https, start_at)
    finally:
        gc.unfreeze()
        for h in https.values():
            await h.__aexit__(None, None, None)
        if code is not None:
            await code.close()


class _StepClients:
    """The clients of one worker's step from their common start: each in a task of its own, their samples flushed
    to the coordinator every FLUSH_INTERVAL, every FLUSH_SAMPLES and when a task's clients end, all cancelled on
    Cancel."""

    def __init__(self, wid: int, plan: StepPlan, results: Results, stop: asyncio.Event, cancel: asyncio.Event,
                 ctx: Context) -> None:
        self.wid, self.plan, self.results, self.stop, self.cancel, self.ctx = wid, plan, results, stop, cancel, ctx
        self.buffer: list[SampleFields] = []  # plain tuples: see SampleFields
        self.failed = False
        self.cancelled = 0
        self.by_task: dict[str, list[asyncio.Task[None]]] = {}

    def on_failure(self, msg: str) -> None:
        if self.plan.report_failures and not self.failed:
            self.failed = True
            self.results.put(Failure(self.wid, msg))

    def count_cancelled(self) -> None:
        self.cancelled += 1

    def record(self, sample: SampleFields) -> None:
        self.buffer.append(sample)
        if len(self.buffer) >= FLUSH_SAMPLES:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            batch = self.buffer[:]
            self.buffer.clear()
            self.results.put(Samples.of(self.wid, batch))

    async def flusher(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_INTERVAL)
            self.flush()

    async def one(self, job: Job, start_at: float) -> None:
        task, client_id, runner, source, offsets = job
        try:
            await run_client(task, client_id, self.ctx, runner, source, start_at, self.record, self.stop,
                             self.on_failure, on_cancel=self.count_cancelled, offsets=offsets)
        except asyncio.CancelledError:
            if not self.cancel.is_set():
                raise

    def cancel_clients(self) -> None:
        for ts in self.by_task.values():
            for t in ts:
                t.cancel()

    async def canceller(self) -> None:
        await self.cancel.wait()
        self.cancel_clients()

    async def arrivals(self, jobs: list[Job], start_at: float) -> None:
        """An arrival-rate task's clients on this worker, run by one dispatcher (``bench.driver.arrival_loop``)."""
        task = jobs[0][0]
        slots = [Slot(client_id, runner, source) for _, client_id, runner, source, _ in jobs]
        try:
            count = await run_arrivals(task, slots, self.ctx, start_at, self.record, self.stop,
                                       self.on_failure, on_cancel=self.count_cancelled)
        except asyncio.CancelledError:
            if not self.cancel.is_set():
                raise
            return
        self.results.put(Arrivals(self.wid, count.task, count.operation_type, count.scheduled, count.dropped,
                                  count.dropped_late))

    def start(self, jobs: list[Job], start_at: float) -> None:
        """A task of its own per closed-loop client; one per arrival-rate task."""
        open_model: dict[str, list[Job]] = {}
        for job in jobs:
            if job[0].arrival is not None:
                open_model.setdefault(job[0].name, []).append(job)
            else:
                self.by_task.setdefault(job[0].name, []).append(asyncio.create_task(self.one(job, start_at)))
        for name, js in open_model.items():
            self.by_task[name] = [asyncio.create_task(self.arrivals(js, start_at))]

    async def watch(self, name: str, ts: list[asyncio.Task[None]]) -> None:
        await asyncio.gather(*ts)
        self.flush()
        self.results.put(TaskDone(self.wid, name))

    async def run(self, jobs: list[Job], https: dict[str, RawHttp], start_at: float) -> LoopLoad:
        plan = self.plan
        probe = LoopProbe(len(plan.clients), tuple(dict.fromkeys(plan.tasks[ti].name for ti, _ in plan.clients)))
        probe.start()
        self.start(jobs, start_at)
        fl = asyncio.create_task(self.flusher())
        cn = asyncio.create_task(self.canceller())
        watchers = _routing_watchers(jobs, https, plan.targets, plan.default_cluster)
        try:
            await asyncio.gather(*(self.watch(n, ts) for n, ts in self.by_task.items()))
        finally:
            fl.cancel()
            cn.cancel()
            for w in watchers:
                w.cancel()
            # A client that raised (a bad parameter, out of memory) ends the step: the others and the probe
            # stop with it rather than be destroyed pending when the loop closes.
            probe.stop()
            self.cancel_clients()
            if self.cancelled:
                self.results.put(Cancelled(self.wid, self.cancelled))
            self.flush()
        return probe.result()
