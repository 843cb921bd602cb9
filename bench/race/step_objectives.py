"""Objectives a paced step of the schedule can be judged by besides its own requests (e.g. how far behind a
replica falls while the step runs), registered by extensions and named by a key of a step search's spec
(``KEY:VALUE`` in ``--redline``).

An objective watches the clusters while a step runs (``start``), is given the step's cool-down after the load
ends (``finish``) and says whether the step met it. A step whose figure is unknown (a failed or missing
reading) never meets it: ``met`` is False and ``why`` names what was unknown.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel

if TYPE_CHECKING:
    from bench.http.client import ClusterTarget
    from bench.track.model import Task, Track


class CurvePoint(BaseModel):
    t: float  # seconds since the step's first request was due
    value: float | None  # None: unknown at that instant (the reading failed or said nothing)
    phase: str  # "warmup", "measured" or "cooldown"


class ObjectiveResult(BaseModel):
    """One objective's verdict on one step, as stored with the step."""

    key: str  # the spec key, e.g. "ccr-lag"
    objective: str  # e.g. "follower time lag p99 ≤ 5 s, caught up within 5 s"
    met: bool
    why: str  # "met", or the reason it was not (an unknown figure is a reason)
    miss: str = ""  # that reason in a word ("" when met)
    figures: dict[str, float | None] = {}  # label -> value, shown beside the step (None: unknown)
    curve_label: str = ""  # what the curve's values are, with their unit
    curve: list[CurvePoint] = []


@dataclass(frozen=True)
class StepWindow:
    """When a step's load ran, as its requests say (epoch seconds): the first request due, the first measured one
    due, the last answer."""

    started: float
    measured_from: float
    ended: float


@dataclass(frozen=True)
class StepContext:
    """What an objective may use: the race's clusters, its track and the task the steps are made of."""

    targets: list[ClusterTarget]
    track: Track
    task: Task


class StepObjective(ABC):
    """One objective in one search: created from its spec value, prepared once, then started and finished around
    every step."""

    key: str = ""

    @property
    @abstractmethod
    def objective(self) -> str:
        """The objective in words."""

    @property
    @abstractmethod
    def cooldown_s(self) -> float:
        """How long after a step's load it needs at most (the step's cool-down, unless the spec sets one)."""

    async def prepare(self, ctx: StepContext) -> None:
        """Before the first step: connect, find what to watch; raise a BenchError (one line) when it cannot."""

    async def settle(self, timeout_s: float) -> str | None:
        """Before a step after the first: wait for what the previous step left behind to clear; None when it did,
        else one line saying what did not."""
        return None

    @abstractmethod
    async def start(self, step: int) -> None:
        """The step's load is about to start."""

    @abstractmethod
    async def finish(self, cooldown_s: float, window: StepWindow | None) -> ObjectiveResult:
        """The step's load has ended (``window``: when it ran; None when it sent no request): take at most
        ``cooldown_s`` more and return the verdict."""

    async def close(self) -> None:
        """After the last step, however the search ended."""


@dataclass(frozen=True)
class StepObjectiveType:
    key: str
    parse: Callable[[str], StepObjective]  # the spec's value (after "KEY:") -> an objective; ConfigError if bad
    example: str  # e.g. "ccr-lag:p99:5s", for messages


_lock = threading.Lock()
_TYPES: dict[str, StepObjectiveType] = {}


def register_step_objective(key: str, parse: Callable[[str], StepObjective], example: str) -> None:
    """Make ``KEY:VALUE`` a step objective of step searches (``--redline``); the last registration of a key wins."""
    with _lock:
        _TYPES[key.lower()] = StepObjectiveType(key.lower(), parse, example)


def step_objective_type(key: str) -> StepObjectiveType | None:
    with _lock:
        return _TYPES.get(key.lower())


def step_objective_types() -> list[StepObjectiveType]:
    with _lock:
        return sorted(_TYPES.values(), key=lambda t: t.key)
