"""The one place that decides which trial store a bench command uses: the local SQLite store, or, when a metrics
store is configured (``bench.trials.metrics_store.config``), the local store mirrored to it."""

from __future__ import annotations

from bench.trials.metrics_store.config import configured_store
from bench.trials.metrics_store.http import check_access
from bench.trials.metrics_store.mirrored import MirroredStore
from bench.trials.sqlite import TrialStore


def open_store() -> TrialStore | MirroredStore:
    """Both implement ``bench.trials.model.Trials`` (with ``close()``) and are context managers."""
    config = configured_store()
    return TrialStore() if config is None else MirroredStore(config)


def check_store() -> None:
    """A configured metrics store that refuses bench (credentials, TLS) says so in one line before a race starts
    anything, as a cluster's wrong credentials do, instead of once the race has run."""
    config = configured_store()
    if config is not None:
        check_access(config)
