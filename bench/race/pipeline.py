"""What flows through a race's phases, and the steps an extension adds to them (race hooks).

A race (``bench.race.race``) is a straight line::

    load track -> resolve clusters -> before provisioning -> trial -> prepare corpora -> start clusters
      -> prepare -> [around the schedule: drive (each step: drive_step)] -> collect totals -> summarise -> finish
      -> stop -> report

An extension adds steps by registering a ``RaceHook`` subclass with ``register_race_hook`` from its ``setup()``.
Each race makes one fresh instance of every registered hook (so a hook keeps per-race state on ``self``).
Hooks run in registration order (extensions load sorted by name); the ``around_schedule`` contexts are entered
in that order and left in reverse, like nested ``async with`` blocks. A hook that raises fails the race in that
spot: before provisioning nothing is stored and nothing started; later the trial is stored failed (with the
samples taken so far) and every cluster bench started is stopped.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from bench.driver.coordinator import RunStep
    from bench.http.client import ClusterTarget
    from bench.provision.car import CarConfig
    from bench.race.options import RaceOptions
    from bench.results.summary import Summary
    from bench.track.model import Challenge, Parallel, Task, Track
    from bench.trials.model import Trials

# (cluster, node) -> the node's processes (psutil), for nodes bench started
NodeProcesses = Callable[[], dict[tuple[str, str], list[Any]]]
# None while every node runs, else one line naming the dead node and its logs
HealthCheck = Callable[[], "str | None"]
# Kills every node of the named cluster on purpose (the health check then leaves them out); returns their names
KillCluster = Callable[[str], list[str]]


@dataclass
class RaceResult:
    trial_id: str
    status: str
    summary: Summary | None
    report: str = ""
    clusters: list[dict[str, Any]] = field(default_factory=list)
    # The metrics store refused the trial (its line was printed): the race exits non-zero, the trial is kept.
    store_refused: str | None = None


@dataclass(frozen=True)
class PlannedCluster:
    """A cluster a source will start, as known before it starts."""

    name: str
    car: CarConfig
    engine: str
    version: str | None  # None: known only once it runs (a --distribution-path build)
    # Its nodes run on other machines (a cloud topology's): the race reaches them only over the network, and
    # their JVM options still go into their boot.
    remote: bool = False


@dataclass(frozen=True)
class RacePlan:
    """Before provisioning: what the race will run, and on which clusters bench will start."""

    opts: RaceOptions
    track: Track
    challenge: Challenge
    clusters: list[PlannedCluster]


@dataclass(frozen=True)
class RaceTargets:
    """Once the clusters run, before the schedule."""

    opts: RaceOptions
    track: Track
    challenge: Challenge
    targets: list[ClusterTarget]
    cars: dict[str, CarConfig]  # cluster -> car, for the clusters bench started (none for existing hosts)
    console: Console


@dataclass(frozen=True)
class RaceSchedule:
    """Around the schedule: the load driver is up, the schedule is about to run."""

    opts: RaceOptions
    trial_id: str
    store: Trials  # where the trial goes: the SQLite store, or it mirrored into a metrics store
    targets: list[ClusterTarget]
    clusters: list[dict[str, Any]]  # check_cluster() facts of every target
    node_processes: NodeProcesses | None
    worker_pids: Callable[[], list[int]]
    # Kills a cluster bench started, on purpose (a failover drill); None when the race started none here.
    kill_cluster: KillCluster | None = None


class RaceHook:
    """An extension's steps in one race. Override the ones you need; each default does nothing."""

    def before_provisioning(self, race: RacePlan) -> None:
        """Refuse a race before any cluster starts and before its trial is stored (raise a BenchError)."""

    def jvm_options(self, race: RacePlan, cluster: PlannedCluster) -> list[str]:
        """JVM options for every node of a cluster bench starts, after the car's (``bench.provision.model.NODE_LOGS``
        stands for each node's log folder, kept with the trial). Asked after ``before_provisioning``."""
        return []

    def prepare(self, race: RaceTargets) -> RaceOptions:
        """Wire the running clusters for the schedule; returns the race's options (rewritten or as given)."""
        return race.opts

    @contextlib.asynccontextmanager
    async def around_schedule(self, race: RaceSchedule) -> AsyncIterator[None]:
        """Entered right before the schedule starts, left once it ended however it ended."""
        yield

    async def drive_step(self, race: RaceSchedule, step: Task | Parallel, run: RunStep) -> bool:
        """Run a step of the schedule this hook's own way -- through ``run`` (the coordinator, samples stored as
        usual), as many times and with whatever tasks it likes -- and return True; False leaves the step to the
        next hook and finally to the coordinator. The first hook that returns True has run it."""
        return False

    def finish(self, race: RaceTargets, summary: Summary | None) -> Summary | None:
        """After the schedule, while the clusters still run; returns the summary (amended or as given)."""
        return summary


_lock = threading.Lock()
_HOOKS: list[Callable[[], RaceHook]] = []


def register_race_hook(hook: Callable[[], RaceHook]) -> None:
    """Add a hook (a RaceHook subclass, or any factory of one) to every race; idempotent."""
    with _lock:
        if hook not in _HOOKS:
            _HOOKS.append(hook)


def unregister_race_hook(hook: Callable[[], RaceHook]) -> None:
    with _lock:
        if hook in _HOOKS:
            _HOOKS.remove(hook)


def race_hooks() -> list[RaceHook]:
    """Fresh instances of the registered hooks, in registration order."""
    with _lock:
        return [make() for make in _HOOKS]
