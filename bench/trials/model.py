"""What the rest of bench needs from a trial store, apart from how it stores things.

The row types (``TrialInfo``, ``TelemetryRow``; request samples are ``bench.driver.samples.RequestSample``) and two
protocols: ``TrialReader`` (what compare, report and the summary enrichers read) and ``Trials`` (what a race,
Loadgen run or experiment also writes). ``bench.trials.sqlite.TrialStore`` is the SQLite implementation; code that
only moves rows imports them from here, not from the SQLite module.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

import pandas as pd
import psutil
from pydantic import BaseModel, Field

import bench
from bench.driver.samples import RequestSample, TelemetryRow
from bench.results.summary import Summary

# A ``list_trials`` limit that means every stored trial.
ALL_TRIALS = 1_000_000

# interrupted: bench died without storing how the trial ended (e.g. kill -9); set by the next bench that
# opens the store and finds the trial's process gone.
# aborted-by-threshold: a threshold with abort-on-fail failed and ended the race early; what it measured is kept.
TrialStatus = Literal["running", "complete", "failed", "aborted", "interrupted", "aborted-by-threshold"]
STATUSES: tuple[str, ...] = ("running", "complete", "failed", "aborted", "interrupted", "aborted-by-threshold")


def _own_start_time() -> float:
    return psutil.Process().create_time()


class TrialInfo(BaseModel):
    id: str
    track: str
    challenge: str
    car: list[str] = []
    track_params: dict[str, Any] = {}
    # Per cluster: name, engine, version, nodes, hosts -- never credentials.
    clusters: list[dict[str, Any]] = []
    user_tags: dict[str, str] = {}
    options: dict[str, Any] = {}  # the (redacted) CLI options
    pipeline: str = "from-distribution"  # or "benchmark-only"
    test_mode: bool = False
    status: TrialStatus = "running"
    error: str | None = None
    start_time: datetime
    end_time: datetime | None = None
    bench_version: str = Field(default=bench.__version__)
    machine: dict[str, Any] = {}
    # What each document set indexed was: a file, bench's generator, or synthetic (--generate-corpora), with seeds.
    corpora: list[dict[str, Any]] = []
    # The process running the trial, with its start time so a reused pid is not taken for it.
    pid: int | None = Field(default_factory=os.getpid)
    pid_started: float | None = Field(default_factory=_own_start_time)
    # Where the track came from (bench.track.source.TrackSource): kind built-in/repository/path, repository
    # name, URL, branch and commit, or the folder; empty for trials stored before bench recorded it.
    track_source: dict[str, Any] = {}


class DamagedTrial(BaseModel):
    """A stored trial whose row cannot be read whole: ``list_trials`` leaves it out and keeps it here, so one
    damaged row does not hide every other trial, and what is wrong with it is still said."""

    id: str
    problem: str  # e.g. "field clusters is not JSON (Expecting value: line 1 column 1 (char 0))"
    # What of the row could be read: which experiment and night it belongs to (empty when those are the damage).
    user_tags: dict[str, str] = {}
    start_time: datetime | None = None


@runtime_checkable
class TrialReader(Protocol):
    """Reading stored trials: what ``bench compare``, ``bench report`` and summary enrichers use.

    ``damaged``: the trials the last ``list_trials`` left out because their row cannot be read."""

    @property
    def damaged(self) -> list[DamagedTrial]: ...

    def get_trial(self, id_or_prefix: str) -> TrialInfo: ...

    def list_trials(self, limit: int = 50) -> list[TrialInfo]: ...

    def samples(self, trial_id: str) -> pd.DataFrame: ...

    def telemetry(self, trial_id: str) -> pd.DataFrame: ...

    def summary(self, trial_id: str) -> Summary | None: ...


@runtime_checkable
class Trials(TrialReader, Protocol):
    """Reading and writing trials: what a race, a Loadgen run and an experiment use."""

    def create_trial(self, info: TrialInfo) -> None: ...

    def update_trial(self, trial_id: str, **fields: Any) -> None: ...

    def finish_trial(self, trial_id: str, status: str, error: str | None = None) -> None: ...

    def add_samples(self, trial_id: str, samples: Sequence[RequestSample]) -> None: ...

    def add_telemetry(self, trial_id: str, rows: Sequence[TelemetryRow]) -> None: ...

    def set_summary(self, trial_id: str, summary: Summary) -> None: ...

    def close(self) -> None: ...
