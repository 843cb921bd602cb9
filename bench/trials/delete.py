"""``bench delete race --id ID[,ID...]`` (Rally's): remove stored trials, from the local store, a metrics store
when one is configured, and their folder of kept files (node logs) in the bench home.

A trial whose bench is still running it is refused (its race would write into a deleted trial).
"""

from __future__ import annotations

import shutil

from bench.trials.open import open_store
from bench.util.errors import ConfigError, StoreError
from bench.util.home import trials_dir


def delete_races(ids: str, *, dry_run: bool = False) -> list[str]:
    """One line per trial deleted (or that would be, with ``dry_run``)."""
    wanted = [i.strip() for i in ids.split(",") if i.strip()]
    if not wanted:
        raise ConfigError("--id: give trial (race) ids, comma-separated ('bench list races' shows them)")
    lines = []
    with open_store() as store:
        trials = [store.get_trial(i) for i in wanted]  # every id resolves before anything is deleted
        for t in trials:
            if t.status == "running":
                raise StoreError(f"trial {t.id} is still running: stop its race first (Ctrl-C), then delete it")
        for t in trials:
            what = f"{t.id} ({t.track}/{t.challenge}, {t.start_time:%Y-%m-%d %H:%M} UTC)"
            if dry_run:
                lines.append(f"would delete trial {what}")
                continue
            where = store.delete_trial(t.id)
            shutil.rmtree(trials_dir() / t.id, ignore_errors=True)
            lines.append(f"deleted trial {what} from {where}")
    return lines
