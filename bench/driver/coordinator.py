"""Runs a challenge's schedule across worker processes.

Steps (a task, or a parallel block) run one after another. For each step the coordinator deals
the clients out to the workers (a ``WorkerPool``: local processes by default), lets them prepare (bulk
bodies are built then), starts them at one common instant, forwards their samples to the sink as they
arrive (the trial store and progress display), and ends the step when every client is done, when the
``completed-by`` task is done, on ``--on-error=abort``, on a failed health check (a node died) or on
request (Ctrl-C).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, assert_never

import psutil

from bench.driver import loop_load
from bench.driver.arrival_counts import arrival_rows
from bench.driver.bulk.shard_lookup import with_shard_tables
from bench.driver.bulk.step_corpora import StepCorpora, step_corpora
from bench.driver.messages import (
    Arrivals,
    Cancel,
    Cancelled,
    EndStep,
    Failure,
    Go,
    Message,
    Ready,
    Samples,
    Step,
    StepDone,
    StepPlan,
    Stop,
    TaskDone,
    WorkerError,
)
from bench.driver.mp_pool import MpWorkerPool
from bench.driver.pool import WorkerPool
from bench.driver.runners.track_defs import TrackDefinitions, track_definitions
from bench.driver.samples import RequestSample, TelemetryRow
from bench.driver.track_code import TrackCodePlan, plan_for
from bench.driver.worker_extensions import extension_paths
from bench.http.client import ClusterTarget
from bench.track.corpus import CorpusRecipe
from bench.track.model import DocumentsSpec, Parallel, Task, Track
from bench.util.errors import RaceError, RaceInterrupted

log = logging.getLogger(__name__)

START_DELAY = 0.1  # seconds between Go and the common start, so every worker starts on time
WORKER_TIMEOUT = 30.0  # how long a worker may take to stop once told to
# How long a worker may stay stopped (SIGSTOP, a debugger) before the race fails: it sends nothing, answers
# nothing and would hold the step forever; what it timed meanwhile would be the pause, not the cluster.
STOPPED_GRACE = 5.0


class StepListener:
    """What the coordinator tells about progress; the race's display implements it."""

    def step_started(self, tasks: list[Task]) -> None: ...
    def samples(self, batch: list[RequestSample]) -> None: ...
    def task_done(self, task: str) -> None: ...
    def step_ended(self) -> None: ...

    def stop(self) -> str | None:
        """Asked after each batch of samples: why the race must end now (the running step stops, its in-flight
        requests are answered and kept, no later step runs), or None to go on."""
        return None


class Listeners(StepListener):
    """Several listeners as one (the display and a watch); the first reason to stop wins."""

    def __init__(self, *listeners: StepListener) -> None:
        self.listeners = listeners

    def step_started(self, tasks: list[Task]) -> None:
        for li in self.listeners:
            li.step_started(tasks)

    def samples(self, batch: list[RequestSample]) -> None:
        for li in self.listeners:
            li.samples(batch)

    def task_done(self, task: str) -> None:
        for li in self.listeners:
            li.task_done(task)

    def step_ended(self) -> None:
        for li in self.listeners:
            li.step_ended()

    def stop(self) -> str | None:
        return next((why for li in self.listeners if (why := li.stop()) is not None), None)


# Told each batch of a step's samples; returns True to end the step early (its clients stop, in-flight requests
# are answered and kept).
SampleWatch = Callable[[list[RequestSample]], bool]
# Runs one step (a task or a parallel block) now; what a step driver calls, as often as it likes.
RunStep = Callable[[Task | Parallel, SampleWatch | None], Awaitable[None]]
# Runs a step of the schedule its own way (through RunStep) and returns True, or returns False to leave it to the
# coordinator: how an extension replaces a task by steps of its own (bench.race.pipeline.RaceHook.drive_step).
StepDriver = Callable[[Task | Parallel, RunStep], Awaitable[bool]]


@dataclass
class _StepRun:
    """One step as the coordinator follows it: which workers are ready and done, which tasks finished, and what
    stops the step (a health problem, a dead or stopped worker, an --on-error=abort failure, an interruption)."""

    co: Coordinator
    no: int
    tasks: list[Task]
    owners: dict[str, set[int]]  # task -> the workers running its clients
    completed_by: str | None
    watch: SampleWatch | None
    ready: set[int] = field(default_factory=set)
    done: set[int] = field(default_factory=set)
    task_done_by: dict[str, set[int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    failure: str | None = None
    stopping: bool = False
    cancelling: bool = False
    started: bool = False

    def stop_all(self) -> None:
        if not self.stopping:
            self.stopping = True
            self.co.pool.broadcast(Stop())

    def check(self, now: float) -> bool:
        """The clock's checks; True when the step must be left at once."""
        co = self.co
        if co._interrupt and not self.cancelling:
            self.cancelling = True
            self.stop_all()
            co.pool.broadcast(Cancel())  # an interruption does not wait for in-flight requests
        problem = co.health_check() if co.health_check and not self.stopping else None
        if problem:
            self.errors.append(problem)
            self.stop_all()
            # The race has failed: requests in flight to a node that died or froze are not waited for
            # (a frozen one would hold each for its whole timeout).
            co.pool.broadcast(Cancel())
        if self.stopping and co._stop_overdue():
            self.errors.append(f"load driver workers did not stop within {WORKER_TIMEOUT:.0f} s")
            return True
        dead = [(wid, code) for wid, code in co.pool.exit_codes().items() if wid not in self.done and code is not None]
        if dead:
            self.errors.append(f"load driver worker bench-worker-{dead[0][0]} died (exit code {dead[0][1]})")
            self.stop_all()
            return True
        stopped = co._stopped_worker(now)
        if stopped is not None:
            self.errors.append(f"load driver worker (pid {stopped}) was stopped (SIGSTOP?) for more than "
                               f"{STOPPED_GRACE:.0f} s: its clients sent nothing meanwhile; resume it with "
                               f"SIGCONT within {STOPPED_GRACE:.0f} s or do not stop it")
            self.stop_all()
            return True
        return False

    def handle(self, msg: Message) -> None:
        co = self.co
        match msg:
            case Ready(wid=wid):
                self.ready.add(wid)
                if len(self.ready) == co.n and not self.stopping:
                    co.pool.broadcast(Go(time.monotonic() + START_DELAY))
                    self.started = True
                    co.listener.step_started(self.tasks)
            case Samples(batch=batch):
                co.sink(batch)
                co.listener.samples(batch)
                if co.stopped is None and (why := co.listener.stop()) is not None:
                    co.stopped = why  # the race ends after this step, which stops now
                    self.stop_all()
                if self.watch is not None and self.watch(batch):  # told every batch, also the answers after a stop
                    self.stop_all()
            case TaskDone(wid=wid, task=name):
                self._task_done(wid, name)
            case Arrivals():
                co.driver_rows.extend(arrival_rows(msg, self.no))
            case Failure(message=text):
                self.failure = self.failure or text
                self.stop_all()
            case WorkerError(message=text):
                self.errors.append(text)
                self.stop_all()
            case Cancelled(count=count):
                co.cancelled += count
            case StepDone(wid=wid, load=load):
                self.done.add(wid)
                if load is not None:
                    co.driver_rows.extend(loop_load.rows(wid, self.no, load))
                co.pool.send(wid, EndStep())
            case _:
                assert_never(msg)

    def _task_done(self, wid: int, name: str) -> None:
        by = self.task_done_by.setdefault(name, set())
        by.add(wid)
        if by >= self.owners[name]:
            self.co.listener.task_done(name)
            if self.completed_by and self.completed_by in (name, "any"):
                self.stop_all()

    def end(self) -> None:
        """The step's outcome: its errors, an abort, an interruption, raised; nothing when it ran through."""
        co = self.co
        if self.started:
            co.listener.step_ended()
        if self.errors:
            raise RaceError(self.errors[0])
        if self.failure:
            raise RaceError(f"{self.failure} (--on-error=abort)")
        if co._interrupt:
            cancelled = (f"; {co.cancelled} in-flight request{'s' if co.cancelled != 1 else ''} cancelled, "
                         "not counted as samples") if co.cancelled else ""
            raise RaceInterrupted(co._interrupt + cancelled)


class Coordinator:
    def __init__(self, *, processes: int, targets: list[ClusterTarget], default_cluster: str,
                 on_error: str = "continue", sink: Callable[[list[RequestSample]], None],
                 listener: StepListener | None = None,
                 health_check: Callable[[], str | None] | None = None, pool: WorkerPool | None = None) -> None:
        self.n = max(1, processes)
        self.targets = targets
        self.default_cluster = default_cluster
        self.on_error = on_error
        self.sink = sink
        self.listener = listener or StepListener()
        self.health_check = health_check
        self.pool: WorkerPool = pool if pool is not None else MpWorkerPool()
        # Resolved now, before the race installs signal handlers or starts workers: an in-process extension the
        # workers could not import is the user's error, not a worker's.
        self._extensions = extension_paths()
        self._interrupt: str | None = None
        # Why a listener ended the race early (StepListener.stop): no step runs after the one it stopped.
        self.stopped: str | None = None
        self.cancelled = 0  # in-flight requests cancelled by an interruption (neither successes nor failures)
        self._wake: asyncio.Event | None = None
        self._definitions = TrackDefinitions()
        # How busy each worker's event loop was, per step (bench.driver.loop_load): stored with the trial.
        self.driver_rows: list[TelemetryRow] = []

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self.pool.start(self.n, self._extensions)

    def close(self) -> None:
        self.pool.close()

    def worker_pids(self) -> list[int]:
        """The worker processes (for telemetry: driver CPU must include them)."""
        return self.pool.pids()

    def interrupt(self, reason: str) -> None:
        """Ask the running step to stop (thread-safe from a signal handler on the loop)."""
        self._interrupt = reason
        if self._wake is not None:
            self._wake.set()

    # -- running -------------------------------------------------------------------------------
    async def run_challenge(self, track: Track, schedule: list[Task | Parallel],
                            documents: dict[str, list[DocumentsSpec]], challenge: str | None = None,
                            step_driver: StepDriver | None = None, corpus_recipe: CorpusRecipe | None = None,
                            code_corpora: list[str] | None = None) -> None:
        """``corpus_recipe`` (and ``code_corpora``, the corpora the track's code reads) let a worker that cannot
        read the coordinator's corpus files prepare its own; without it every worker reads the prepared paths."""
        self._wake = asyncio.Event()
        self._track_code = plan_for(track, challenge)
        self._corpora = ((lambda docs: step_corpora(corpus_recipe, track, docs, code_corpora))
                         if corpus_recipe is not None else None)
        if self._interrupt:
            self._wake.set()
        indices = {i.name: i.body_content for i in track.indices}
        self._definitions = track_definitions(track)
        for no, step in enumerate(schedule):
            async def run(s: Task | Parallel, watch: SampleWatch | None, no: int = no,
                          step: Task | Parallel = step) -> None:
                self.stopped = self.stopped or self.listener.stop()  # also judged as a step ended
                if self.stopped is not None:
                    return
                tasks = s.tasks if isinstance(s, Parallel) else [s]
                completed_by = s.completed_by if isinstance(s, Parallel) else None
                # A driven task's steps carry their own names: their bulk corpora are the original task's.
                docs = {**documents, **{t.name: documents.get(_origin(t, step), []) for t in tasks}}
                await self._run_step(no, tasks, completed_by, docs, indices, watch)

            self.stopped = self.stopped or self.listener.stop()
            if self.stopped is not None:
                break
            if step_driver is None or not await step_driver(step, run):
                await run(step, None)

    def _plans(self, no: int, tasks: list[Task], documents: dict[str, list[DocumentsSpec]],
               indices: dict[str, Any]) -> list[StepPlan]:
        step_docs = {t.name: documents.get(t.name, []) for t in tasks}
        corpora = self._corpora(step_docs) if self._corpora is not None else None
        plans = [StepPlan(no, tasks, [], self.targets, self.default_cluster, step_docs, indices,
                          report_failures=self.on_error == "abort", track_code=self._track_code,
                          definitions=self._definitions, corpora=corpora)
                 for _ in range(self.n)]
        k = 0
        for ti, task in enumerate(tasks):
            for c in range(task.clients):
                plans[k % self.n].clients.append((ti, c))
                k += 1
        return plans

    async def _run_step(self, no: int, tasks: list[Task], completed_by: str | None,
                        documents: dict[str, list[DocumentsSpec]], indices: dict[str, Any],
                        watch: SampleWatch | None = None) -> None:
        assert self._wake is not None
        tasks = await with_shard_tables(tasks, self.targets, self.default_cluster, documents, list(indices))
        plans = self._plans(no, tasks, documents, indices)
        owners: dict[str, set[int]] = {t.name: set() for t in tasks}
        for wid, plan in enumerate(plans):
            for ti, _ in plan.clients:
                owners[tasks[ti].name].add(wid)
        for wid, plan in enumerate(plans):
            self.pool.send(wid, Step(plan))
        run = _StepRun(self, no, tasks, owners, completed_by, watch)
        self._stop_requested_at = None
        # As in the workers: what exists now (modules, the track) lives through the step, so it is kept out of
        # the collector's full walks, which took 50-600 ms each of a core the workers and a local target share.
        # Frozen without a collection first: that would block this loop (and the telemetry sampling in it) for as
        # long as a full walk of a large heap takes, at every step's start; garbage frozen with it waits until the
        # step ends.
        gc.freeze()
        try:
            await self._drive(run)
        finally:
            gc.unfreeze()
        run.end()

    async def _drive(self, run: _StepRun) -> None:
        assert self._wake is not None
        last_check = 0.0
        while len(run.done) < self.n:
            now = time.monotonic()
            if now - last_check >= 1.0 or self._wake.is_set():
                # Checked on a clock, not only when idle: samples arrive all the time in a busy step.
                last_check = now
                self._wake.clear()
                if run.check(now):
                    break
            msg = await self._next_message()
            if msg is None:
                # An empty batch lets the sink write what it holds on time even when no batch comes for
                # long (large bulks), so a killed bench loses at most about a second of samples; and the live view
                # is redrawn on time.
                self.sink([])
                self.listener.samples([])
                continue
            run.handle(msg)

    _stop_requested_at: float | None = None
    _track_code: TrackCodePlan | None = None
    _corpora: Callable[[dict[str, list[DocumentsSpec]]], StepCorpora] | None = None

    _stopped_since: dict[int, float] = {}

    def _stopped_worker(self, now: float) -> int | None:
        """A local worker that has been stopped (process state T) for longer than STOPPED_GRACE, or None."""
        since = {}
        for pid in self.pool.pids():
            try:
                state = psutil.Process(pid).status()
            except psutil.Error:
                continue  # gone: exit_codes() reports it
            if state in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP):
                since[pid] = self._stopped_since.get(pid, now)
        self._stopped_since = since
        return next((pid for pid, t in since.items() if now - t > STOPPED_GRACE), None)

    def _stop_overdue(self) -> bool:
        now = time.monotonic()
        if self._stop_requested_at is None:
            self._stop_requested_at = now
        return now - self._stop_requested_at > WORKER_TIMEOUT

    async def _next_message(self) -> Message | None:
        return await self.pool.next_message(0.25)


def _origin(task: Task, step: Task | Parallel) -> str:
    """The schedule's task a driven task stands for: itself when named in the step, else the step's only task."""
    names = [t.name for t in (step.tasks if isinstance(step, Parallel) else [step])]
    return task.name if task.name in names or len(names) != 1 else names[0]
