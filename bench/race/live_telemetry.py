"""The trial store as the race's hooks see it while the schedule runs: telemetry rows are stored as before and
also offered to the live view's registered sources (``bench.driver.live_rows``), whose rows the view shows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from bench.driver.live_rows import LiveRow, live_rows
from bench.driver.samples import RequestSample, TelemetryRow
from bench.results.summary import Summary
from bench.trials.model import DamagedTrial, TrialInfo, Trials


class LiveTelemetry:
    """A ``Trials`` that hands the telemetry rows it stores to ``show`` (after storing them) as live rows."""

    def __init__(self, store: Trials, show: Callable[[list[LiveRow]], None]) -> None:
        self._store = store
        self._show = show

    def add_telemetry(self, trial_id: str, rows: Sequence[TelemetryRow]) -> None:
        self._store.add_telemetry(trial_id, rows)
        shown = live_rows(rows)
        if shown:
            self._show(shown)

    # -- everything else as the store does it -------------------------------------------------------------
    @property
    def damaged(self) -> list[DamagedTrial]:
        return self._store.damaged

    def get_trial(self, id_or_prefix: str) -> TrialInfo:
        return self._store.get_trial(id_or_prefix)

    def list_trials(self, limit: int = 50) -> list[TrialInfo]:
        return self._store.list_trials(limit)

    def samples(self, trial_id: str) -> pd.DataFrame:
        return self._store.samples(trial_id)

    def telemetry(self, trial_id: str) -> pd.DataFrame:
        return self._store.telemetry(trial_id)

    def summary(self, trial_id: str) -> Summary | None:
        return self._store.summary(trial_id)

    def create_trial(self, info: TrialInfo) -> None:
        self._store.create_trial(info)

    def update_trial(self, trial_id: str, **fields: Any) -> None:
        self._store.update_trial(trial_id, **fields)

    def finish_trial(self, trial_id: str, status: str, error: str | None = None) -> None:
        self._store.finish_trial(trial_id, status, error)

    def add_samples(self, trial_id: str, samples: Sequence[RequestSample]) -> None:
        self._store.add_samples(trial_id, samples)

    def set_summary(self, trial_id: str, summary: Summary) -> None:
        self._store.set_summary(trial_id, summary)

    def close(self) -> None:
        self._store.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)  # a metrics store's extras (locations, push state, ...)
