"""The one place that decides which trial store a bench command uses: the local SQLite store, or, when a metrics
store is configured (``bench.metrics_store.config``), the local store mirrored to it."""

from __future__ import annotations

from typing import Any

from bench.metrics_store.config import configured_store
from bench.store import TrialStore


def open_store() -> Any:
    """A ``bench.trials.Trials`` (with ``close()`` and use as a context manager)."""
    config = configured_store()
    if config is None:
        return TrialStore()
    from bench.metrics_store.mirrored import MirroredStore

    return MirroredStore(config)
