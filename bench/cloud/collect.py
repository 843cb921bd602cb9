"""Bring a trial that ran on a load-driver host into the local store: its trial row, samples, summary
and telemetry are copied from a snapshot of the driver's store (same schema: same bench version), so
``bench show``/``compare``/reports work as for local trials."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from bench.trials.sqlite import TrialStore
from bench.util.errors import StoreError

_TABLES = ("samples", "summaries", "telemetry")


def import_trial(store: TrialStore, snapshot: Path, trial_id: str, as_id: str | None = None,
                 updates: dict[str, Any] | None = None) -> None:
    """Copy trial_id's rows from snapshot (a driver's bench.db) into store; updates overrides trial fields
    (e.g. the provisioned clusters). as_id stores it under another id (the orchestrator's, which the
    cloud resources are tagged with)."""
    src = sqlite3.connect(f"file:{snapshot}?mode=ro", uri=True)
    try:
        src.row_factory = sqlite3.Row
        row = src.execute("SELECT * FROM trials WHERE id = ?", (trial_id,)).fetchone()
        if row is None:
            raise StoreError(f"trial {trial_id} is not in the driver's store {snapshot}")
        new_id = as_id or trial_id
        trial = dict(row, id=new_id)
        conn = store.conn
        with conn:
            conn.execute("DELETE FROM trials WHERE id = ?", (new_id,))
            cols = list(trial)
            conn.execute(f"INSERT INTO trials ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                         [trial[c] for c in cols])
            for table in _TABLES:
                rows = src.execute(f"SELECT * FROM {table} WHERE trial_id = ?", (trial_id,)).fetchall()
                if not rows:
                    continue
                cols = list(rows[0].keys())
                conn.execute(f"DELETE FROM {table} WHERE trial_id = ?", (new_id,))
                conn.executemany(f"INSERT INTO {table} ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                                 [tuple(new_id if c == "trial_id" else r[c] for c in cols) for r in rows])
    except sqlite3.DatabaseError as e:
        raise StoreError(f"cannot import trial {trial_id} from {snapshot}: {e}") from None
    finally:
        src.close()
    if updates:
        store.update_trial(as_id or trial_id, **updates)  # validated like any other trial update
