"""The trial store when a metrics store is configured: the local SQLite store is written as always (the record,
and the spool while the metrics store is slow or down) and mirrored to the metrics store by a background
``Pusher``. Reads take a trial from the local store when it is there (complete, never downsampled) and from
the metrics store otherwise, so trials run on other machines (nightly runs) can be listed, shown and compared.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Any

import pandas as pd

from bench.driver.samples import RequestSample, TelemetryRow
from bench.results.summary import Summary
from bench.trials.metrics_store.config import ENV_PASSWORD, StoreConfig
from bench.trials.metrics_store.http import StoreUnavailable
from bench.trials.metrics_store.pusher import Pusher
from bench.trials.metrics_store.reader import StoreReader
from bench.trials.model import DamagedTrial, TrialInfo
from bench.trials.sqlite import PushState, TrialStore
from bench.util.errors import StoreError
from bench.util.redact import redact_text

log = logging.getLogger(__name__)


class MirroredStore:
    """``Trials`` over the local store plus a metrics store."""

    def __init__(self, config: StoreConfig, local: TrialStore | None = None) -> None:
        self.config = config
        self.local = local or TrialStore()
        self.remote = StoreReader(config)
        self.pusher = Pusher(config, self.local.path)
        self.unreachable: str | None = None  # why the last read from the metrics store failed
        self._recorded: set[str] = set()  # trials whose push record exists (no query per sample batch)
        # Set by close() when the store refused bench (credentials, privileges, TLS, mappings): the race then
        # exits non-zero although its trial is complete in the local store.
        self.push_refused: str | None = None
        self._closed = False

    @property
    def path(self) -> Any:
        return self.local.path

    @property
    def damaged(self) -> list[DamagedTrial]:
        local = {d.id for d in self.local.damaged}
        return [*self.local.damaged, *(d for d in self.remote.damaged if d.id not in local)]

    # -- writes: local first, then mirrored ---------------------------------------------------------------
    def _mirror(self, trial_id: str) -> None:
        if trial_id not in self._recorded:
            # Recorded before the first push, so a trial the pusher never reached is still found unpushed.
            if self.local.push_state(trial_id, self.config.key) is None:
                self.local.set_push_state(trial_id, self.config.key, PushState())
            self._recorded.add(trial_id)
        self.pusher.note(trial_id)

    def create_trial(self, info: TrialInfo) -> None:
        self.local.create_trial(info)
        self._mirror(info.id)
        # What earlier runs left unpushed (the store was down, bench was killed) goes along with this one.
        for trial_id in self.local.pending_pushes(self.config.key):
            self.pusher.note(trial_id)

    def update_trial(self, trial_id: str, **fields: Any) -> None:
        self.local.update_trial(trial_id, **fields)
        self._mirror(trial_id)

    def finish_trial(self, trial_id: str, status: str, error: str | None = None) -> None:
        self.local.finish_trial(trial_id, status, error)
        self._mirror(trial_id)

    def add_samples(self, trial_id: str, samples: Sequence[RequestSample]) -> None:
        self.local.add_samples(trial_id, samples)
        self._mirror(trial_id)

    def add_telemetry(self, trial_id: str, rows: Sequence[TelemetryRow]) -> None:
        self.local.add_telemetry(trial_id, rows)
        self._mirror(trial_id)

    def set_summary(self, trial_id: str, summary: Summary) -> None:
        self.local.set_summary(trial_id, summary)
        self._mirror(trial_id)

    # -- reads --------------------------------------------------------------------------------------------
    def _is_local(self, trial_id: str) -> bool:
        try:
            return self.local.get_trial(trial_id).id == trial_id
        except StoreError:
            return False

    def get_trial(self, id_or_prefix: str) -> TrialInfo:
        try:
            return self.local.get_trial(id_or_prefix)
        except StoreError as local_error:
            if "no trial with id" not in str(local_error):
                raise
            try:
                return self.remote.get_trial(id_or_prefix)
            except StoreUnavailable as e:
                raise StoreError(f"{local_error}; {e}") from None

    def list_trials(self, limit: int = 50) -> list[TrialInfo]:
        """Newest first: the local trials and the metrics store's, each once."""
        found = {t.id: t for t in self.local.list_trials(limit)}
        try:
            for t in self.remote.list_trials(limit):
                found.setdefault(t.id, t)
            self.unreachable = None
        except StoreError as e:
            self.unreachable = str(e)
            log.warning("%s: listing local trials only", e)
        return sorted(found.values(), key=lambda t: t.start_time, reverse=True)[:limit]

    def delete_trial(self, trial_id: str) -> str:
        """Delete the trial here and from the metrics store (Rally's ``delete race``); where it was deleted."""
        where = []
        if self._is_local(trial_id):
            self.local.delete_trial(trial_id)
            where.append("the local store")
        deleted = self.remote.delete_race(trial_id)
        if deleted:
            where.append(f"the metrics store {self.config.key} ({deleted} documents)")
        return " and ".join(where) or "nowhere"

    def samples(self, trial_id: str) -> pd.DataFrame:
        return self.local.samples(trial_id) if self._is_local(trial_id) else self.remote.samples(trial_id)

    def telemetry(self, trial_id: str) -> pd.DataFrame:
        return self.local.telemetry(trial_id) if self._is_local(trial_id) else self.remote.telemetry(trial_id)

    def summary(self, trial_id: str) -> Summary | None:
        return self.local.summary(trial_id) if self._is_local(trial_id) else self.remote.summary(trial_id)

    def locations(self, trial_ids: list[str]) -> dict[str, str]:
        """Where each trial is: ``local``, ``store``, ``local+store``, or ``local, N rows not pushed``."""
        try:
            remote = self.remote.ids(trial_ids)
        except StoreError:
            remote = set()
        out: dict[str, str] = {}
        for tid in trial_ids:
            if not self._is_local(tid):
                out[tid] = "store"
                continue
            state = self.local.push_state(tid, self.config.key)
            left = self.local.unpushed_rows(tid, state)
            if tid in remote and state is not None and state.done and not left:
                out[tid] = "local+store"
            elif tid in remote or state is not None:
                out[tid] = f"local, {left} rows not pushed" if left else "local, not all pushed"
            else:
                out[tid] = "local"
        return out

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        left = self.pusher.close()
        ids = ", ".join(sorted(t[:12] for t in left))
        if left and self.pusher.refused:
            # Retrying cannot cure this: one line naming what the store said and where the fix goes.
            self.push_refused = redact_text(
                f"{self.pusher.refused}; fix it (--metrics-store, --metrics-store-options, {ENV_PASSWORD} or "
                f"bench.ini) and run 'bench store push': {len(left)} trial(s) not pushed ({ids}), kept complete in "
                f"{self.local.path}")
            log.error("%s", self.push_refused)
            print(f"error: {self.push_refused}", file=sys.stderr)
        elif left:
            line = (f"metrics store {self.remote.http.name}: {len(left)} trial(s) not pushed yet "
                    f"({ids}): they stay in {self.local.path}; push them with 'bench store push'")
            log.warning("%s", line)
            print(f"note: {redact_text(line)}", file=sys.stderr)
        self.remote.close()
        self.local.close()

    def __enter__(self) -> MirroredStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
