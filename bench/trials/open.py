"""The one place that decides which trial store a bench command uses: the local SQLite store, or, when a metrics
store is configured (``bench.trials.metrics_store.config``), the local store mirrored to it."""

from __future__ import annotations

from bench.trials.metrics_store.config import configured_store
from bench.trials.metrics_store.mirrored import MirroredStore
from bench.trials.sqlite import TrialStore


def open_store() -> TrialStore | MirroredStore:
    """Both implement ``bench.trials.model.Trials`` (with ``close()``) and are context managers."""
    config = configured_store()
    return TrialStore() if config is None else MirroredStore(config)
