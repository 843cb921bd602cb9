"""A track's ``track.py`` inside a load-driver worker: which clients use its runners, parameter sources and schedulers.

A worker is a fresh process: it imports the track's ``track.py`` itself (once per process) from the track folder
named in the step's plan, so the registrations it uses are exactly the ones the track made when bench loaded it.
"""

from __future__ import annotations

import itertools
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.driver.custom_schedule import RallySchedule
from bench.driver.custom_sources import client_source, make_source, operation_spec
from bench.driver.randomize import DEFAULT_INFO, RandomizationInfo, RandomizedSearchSource
from bench.driver.runners.core import Runner
from bench.driver.runners.custom import EsClients, adapt_runner
from bench.http.client import ClusterTarget
from bench.track.dependencies import activate as activate_dependencies
from bench.track.formats import OSB, format_at
from bench.track.model import Task, Track
from bench.track.plugins import TrackPlugins, load_plugins, plugins_of
from bench.track.rally_view import RallyTrack
from bench.util.errors import TrackError


@dataclass(frozen=True)
class TrackCodePlan:
    """What a worker needs to run a track's code: the track (pickled with the step) and the race's challenge."""

    track: Track
    challenge: str | None


def plan_for(track: Track, challenge: str | None) -> TrackCodePlan | None:
    code = Path(track.root) / format_at(Path(track.root)).code_file
    return TrackCodePlan(track, challenge) if code.is_file() else None


@dataclass
class ClientParts:
    """What a client takes from the track's code; None where bench's own applies."""

    runner: Runner | None = None
    source: Any = None
    offsets: Any = None


class TrackCode:
    """One worker step's view of the track's code."""

    def __init__(self, plan: TrackCodePlan, targets: list[ClusterTarget], default_cluster: str,
                 connections: int) -> None:
        if plan.track.dependencies:  # installed when the track loaded; a spawned worker needs them importable too
            activate_dependencies()
        plugins = plugins_of(plan.track) or load_plugins(Path(plan.track.root))
        if plugins is None:
            code = format_at(Path(plan.track.root)).code_file
            raise TrackError(f"{plan.track.root / code} is gone: the load driver cannot import it")
        self.plugins: TrackPlugins = plugins
        self.view = RallyTrack(plan.track, plan.challenge)
        self.randomization = plan.track.randomization
        self.clients = EsClients(targets, connections, opensearch=format_at(Path(plan.track.root)) is OSB)
        self.default_cluster = default_cluster
        self._sources: dict[str, Any] = {}  # task name -> the task's source (partitioned per client)
        self._standard: dict[str, dict[str, list[Any]]] = {}  # task name -> field -> its standard values

    def parts(self, task: Task, client: int) -> ClientParts:
        op = task.operation
        out = ClientParts()
        reg = self.plugins.runners.get(op.operation_type)
        if reg is not None:
            out.runner = adapt_runner(reg, self.clients, self.default_cluster)
        name = op.params.get("param-source")
        if name is not None:
            if task.name not in self._sources:
                self._sources[task.name] = make_source(self.plugins.param_sources[name], name, self.view, task)
            out.source = client_source(self._sources[task.name], name, task, client, bench_runner=reg is None)
        elif reg is not None:
            # Rally's default source for a track's runner: the operation's specification, the same every time.
            out.source = itertools.repeat(operation_spec(task))
        elif self.randomization is not None and op.operation_type == "search":
            out.source = self._randomized(task, client)
        sched = self.plugins.schedulers.get(task.schedule or "")
        if sched is not None:
            out.offsets = RallySchedule(task.schedule or "", sched, task, getattr(out.source, "source", None))
        return out

    def _randomized(self, task: Task, client: int) -> RandomizedSearchSource:
        assert self.randomization is not None
        name = task.operation.name
        registered = self.plugins.randomization_info.get(name)
        info = DEFAULT_INFO if registered is None else RandomizationInfo(
            str(registered[0]), [list(o) for o in registered[1]], list(registered[2] or []))
        sources = {f: fn for (op, f), fn in self.plugins.standard_value_sources.items() if op == name}
        return RandomizedSearchSource(task, self.randomization, info, sources,
                                      self._standard.setdefault(task.name, {}),
                                      seed=zlib.crc32(f"{task.name}:{client}".encode()))

    async def close(self) -> None:
        await self.clients.close()
