"""Pushing trials from the local SQLite store to the metrics store.

The local store is always written first (it is the record and the spool); pushing reads what it holds after each
trial's watermark (``TrialStore.push_state``), sends it as bulk requests with deterministic document ids (a
push repeated after a failure overwrites instead of doubling) and advances the watermark only once the store
has taken the batch. A store that is slow or down therefore only delays pushing: ``Pusher`` retries in its own
thread while a race runs, and ``bench store push`` sends whatever is left later (also whole trials stored
before a metrics store was configured).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from bench.trials.metrics_store import documents
from bench.trials.metrics_store.config import StoreConfig, describe
from bench.trials.metrics_store.http import StoreHttp, StoreRefused, StoreUnavailable
from bench.trials.metrics_store.layout import to_layout
from bench.trials.metrics_store.templates import index_templates
from bench.trials.model import ALL_TRIALS
from bench.trials.sqlite import PushState, TrialStore
from bench.util.errors import StoreError

log = logging.getLogger(__name__)

BATCH = 5000  # local rows per bulk request (two documents per request sample)
# A store that cannot take a whole batch within the timeout (busy, or catching up after an outage) gets smaller
# ones, halved on each failure down to this; every batch it takes advances the watermark, so the push progresses
# instead of re-sending the same batch for ever.
MIN_BATCH = 100


class TrialPush:
    """Pushes trials of one local store to one metrics store (not thread-safe: one per thread)."""

    def __init__(self, local: TrialStore, config: StoreConfig, http: StoreHttp | None = None) -> None:
        self.local, self.config = local, config
        self.http = http or StoreHttp(config)
        self._templates = False
        self.batch = BATCH  # rows per bulk request now (see MIN_BATCH)

    def _bulk(self, actions: Iterable[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        try:
            self.http.bulk(actions)
        except StoreUnavailable:
            self.batch = max(MIN_BATCH, self.batch // 2)
            raise
        self.batch = min(BATCH, self.batch * 2)

    def ensure_templates(self) -> None:
        if self._templates:
            return
        for name, body in index_templates(self.config.prefix, self.config.layout).items():
            try:
                self.http.request("PUT", f"/_index_template/{name}", body)
            except StoreRefused as e:
                raise StoreError(f"{e} (index template {name} for {body['index_patterns'][0]}: remove the "
                                 "conflicting template, or set another index_prefix)") from None
        self._templates = True

    def push(self, trial_id: str, *, refresh: bool = False) -> bool:
        """Push what the trial has that the store lacks; True once a finished trial is there whole."""
        self.ensure_templates()
        trial = self.local.get_trial(trial_id)
        # Read before the rows: a trial is finished only after its last rows and summary are stored, so when it
        # was finished already, this push takes everything; when it finishes while rows go, the next push does.
        finished = trial.status != "running"
        state = self.local.push_state(trial_id, self.config.key) or PushState()
        env, every, lay = self.config.environment, self.config.downsample, self.config.layout
        metrics = documents.index_name(self.config.prefix, documents.METRICS, trial, lay)
        while True:
            rows = self.local.sample_rows_after(trial_id, state.samples_rowid, self.batch)
            if not rows:
                break
            actions: list[tuple[dict[str, Any], dict[str, Any]]] = []
            for i, (_, sample) in enumerate(rows):
                seq = state.samples_seen + i
                # Failed requests always go: errors by type must stay countable in the store.
                if every > 1 and seq % every and bool(sample.success):
                    continue
                for suffix, doc in documents.sample_documents(trial, sample, seq, env):
                    actions.append(({"index": {"_index": metrics, "_id": f"{trial.id}-{seq}{suffix}"}},
                                    to_layout(doc, lay)))
            self._bulk(actions)
            state = state._replace(samples_rowid=rows[-1][0], samples_seen=state.samples_seen + len(rows))
            self.local.set_push_state(trial_id, self.config.key, state)
        while True:
            trows = self.local.telemetry_rows_after(trial_id, state.telemetry_rowid, self.batch)
            if not trows:
                break
            self._bulk(({"index": {"_index": metrics, "_id": f"{trial.id}-t{state.telemetry_seen + i}"}},
                            to_layout(documents.telemetry_document(trial, row, state.telemetry_seen + i, env), lay))
                           for i, (_, row) in enumerate(trows))
            state = state._replace(telemetry_rowid=trows[-1][0], telemetry_seen=state.telemetry_seen + len(trows))
            self.local.set_push_state(trial_id, self.config.key, state)
        summary = self.local.summary(trial_id)
        trial = self.local.get_trial(trial_id)  # the status may have changed while samples went
        actions = [({"index": {"_index": documents.index_name(self.config.prefix, documents.RACES, trial, lay),
                               "_id": trial.id}}, to_layout(documents.race_document(trial, summary, env), lay))]
        if summary is not None:
            results = documents.index_name(self.config.prefix, documents.RESULTS, trial, lay)
            actions += [({"index": {"_index": results, "_id": f"{trial.id}-{key}"}}, to_layout(doc, lay))
                        for key, doc in documents.result_documents(trial, summary, env)]
        done = finished
        # The race document goes last and with a refresh at the end: once it is visible, so is the rest.
        self.http.bulk(actions, refresh=refresh or done)
        self.local.set_push_state(trial_id, self.config.key, state._replace(done=done))
        return done

    def push_all(self, trial_ids: Iterable[str]) -> list[tuple[str, str | None]]:
        """Push each trial; (trial id, None or why it could not be pushed now)."""
        out: list[tuple[str, str | None]] = []
        for tid in trial_ids:
            try:
                self.push(tid, refresh=True)
                out.append((tid, None))
            except StoreUnavailable as e:
                out.append((tid, str(e)))
                break  # the store is gone: the rest would wait for the same timeout
            except StoreError as e:
                out.append((tid, str(e)))
        return out


class Pusher:
    """The background pusher of a running bench: every ``every`` seconds it pushes the trials it was told about,
    in its own thread with its own connection to the local store, so the race's coordinator never waits for the
    metrics store. A failure is logged once per outage; pushing resumes when the store answers again."""

    def __init__(self, config: StoreConfig, local_path: Any, *, every: float = 1.0) -> None:
        self.config, self._path, self._every = config, local_path, every
        self._dirty: set[str] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._down: str | None = None
        self._thread: threading.Thread | None = None
        self.pending: set[str] = set()  # trials whose last push failed
        # Why the store refused bench (401, 403, TLS, a mapping conflict): retrying cannot cure that, the user must.
        self.refused: str | None = None

    def note(self, trial_id: str) -> None:
        with self._lock:
            self._dirty.add(trial_id)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="metrics-store-pusher", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        local = TrialStore(self._path)
        push = TrialPush(local, self.config, StoreHttp(self.config, timeout=10.0))
        try:
            while not self._stop.is_set():
                self._wake.wait(self._every)
                self._wake.clear()
                self._round(push)
            self._round(push)  # what the last second brought
        finally:
            push.http.close()
            local.close()

    def _round(self, push: TrialPush) -> None:
        with self._lock:
            todo = sorted(self._dirty)
        for tid in todo:
            try:
                if push.push(tid):
                    with self._lock:
                        self._dirty.discard(tid)
                self.pending.discard(tid)
                self.refused = None
                if self._down is not None:
                    log.warning("metrics store %s answers again: pushing resumed", push.http.name)
                    self._down = None
            except StoreError as e:
                self.pending.add(tid)
                self.refused = None if isinstance(e, StoreUnavailable) else str(e)
                if self._down != str(e):
                    log.warning("%s: the trial's rows stay in the local store and are pushed when it answers "
                                "(or by 'bench store push %s')", e, tid[:12])
                    self._down = str(e)
                return

    def close(self, timeout: float = 10.0) -> set[str]:
        """Push what is left (for at most ``timeout`` s), stop the thread; the trials that did not make it."""
        if self._thread is None:
            return set()
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)
        with self._lock:
            return set(self._dirty)



def push_command(config: StoreConfig, selectors: list[str]) -> tuple[list[str], bool]:
    """``bench store push [<trial>...]``: the lines to print and whether any trial could not be pushed."""
    lines: list[str] = []
    with TrialStore() as local:
        if selectors:
            ids = [local.get_trial(s).id for s in selectors]
        else:
            ids = [t.id for t in reversed(local.list_trials(ALL_TRIALS))
                   if not (local.push_state(t.id, config.key) or PushState()).done]
        if not ids:
            return [f"Nothing to push: every local trial is in the metrics store {describe(config)} already."], False
        push = TrialPush(local, config)
        try:
            results = push.push_all(ids)
        finally:
            push.http.close()
        failed = False
        for tid, error in results:
            if error is None:
                state = local.push_state(tid, config.key) or PushState()
                rows = f"{state.samples_seen} samples, {state.telemetry_seen} telemetry rows"
                if state.done:
                    lines.append(f"{tid[:12]}: pushed ({rows}) to {push.http.name}")
                else:  # a race is writing it now: what it stores after this is not there yet
                    lines.append(f"{tid[:12]}: still running: pushed what it has so far ({rows}) to "
                                 f"{push.http.name}; push again once it has ended")
            else:
                failed = True
                lines.append(f"{tid[:12]}: not pushed: {error}")
        for tid in ids[len(results):]:
            failed = True
            lines.append(f"{tid[:12]}: not pushed (the store stopped answering); run 'bench store push' again")
    return lines, failed
