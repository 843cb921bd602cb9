"""The trial store: one SQLite database (``db_path()``) holding trials, request samples, summaries and
telemetry. ``TrialStore`` implements the protocols of ``bench.trials.model``, where the row types live.

Everything written passes through ``bench.util.redact`` first, so secrets never reach the file. Samples are
appended in batches while the race runs (one executemany + commit each), so a killed bench process loses
at most the last batch. One connection, shared across threads behind a lock.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import socket
import sqlite3
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from functools import wraps
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence, TypeVar

import pandas as pd
import psutil
from pydantic import ValidationError

from bench.driver.samples import RequestSample, TelemetryRow
from bench.provision.host import machine_id
from bench.results.stats import SAMPLE_COLUMNS, normalize_frame
from bench.results.summary import Summary
from bench.trials.annotations import Annotation

# The row types live with the store protocol (bench.trials.model); re-exported for code written against this module.
from bench.trials.model import STATUSES, DamagedTrial, TrialInfo, TrialStatus
from bench.trials.summary import summarize_stored
from bench.util.errors import StoreError
from bench.util.home import db_path
from bench.util.redact import redact, redact_text

__all__ = ["STATUSES", "PushState", "TelemetryRow", "TrialInfo", "TrialStatus", "TrialStore", "machine_info",
           "new_trial_id", "utcnow"]

# Each entry migrates the schema from version i to i+1. Never edit a shipped entry; append.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE trials (
        id TEXT PRIMARY KEY,
        track TEXT NOT NULL,
        challenge TEXT NOT NULL,
        car TEXT NOT NULL,
        track_params TEXT NOT NULL,
        clusters TEXT NOT NULL,
        user_tags TEXT NOT NULL,
        options TEXT NOT NULL,
        pipeline TEXT NOT NULL,
        test_mode INTEGER NOT NULL,
        status TEXT NOT NULL,
        error TEXT,
        start_time TEXT NOT NULL,
        end_time TEXT,
        bench_version TEXT NOT NULL,
        machine TEXT NOT NULL
    );
    CREATE INDEX trials_start ON trials(start_time);
    CREATE TABLE samples (
        trial_id TEXT NOT NULL,
        task TEXT NOT NULL,
        operation TEXT NOT NULL,
        operation_type TEXT NOT NULL,
        client_id INTEGER NOT NULL,
        absolute_time REAL NOT NULL,
        relative_time REAL NOT NULL,
        latency REAL NOT NULL,
        service_time REAL NOT NULL,
        units INTEGER NOT NULL,
        unit TEXT NOT NULL,
        bytes_sent INTEGER NOT NULL,
        success INTEGER NOT NULL,
        error_type TEXT,
        warmup INTEGER NOT NULL,
        failed_units INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX samples_trial_task ON samples(trial_id, task);
    CREATE TABLE summaries (
        trial_id TEXT PRIMARY KEY,
        summary TEXT NOT NULL
    );
    CREATE TABLE telemetry (
        trial_id TEXT NOT NULL,
        timestamp REAL NOT NULL,
        cluster TEXT NOT NULL,
        node TEXT NOT NULL,
        device TEXT NOT NULL,
        metric TEXT NOT NULL,
        value REAL NOT NULL,
        raw TEXT
    );
    CREATE INDEX telemetry_trial ON telemetry(trial_id, metric);
    """,
    # 2: response size and HTTP status per sample (k6's data received, Loadgen's per-status counts).
    """
    ALTER TABLE samples ADD COLUMN bytes_received INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE samples ADD COLUMN status INTEGER NOT NULL DEFAULT 0;
    """,
    # 3: why each failed request failed, so a trial shows its distinct error messages with counts.
    """
    ALTER TABLE samples ADD COLUMN error TEXT;
    """,
    # 4: the process running a trial, so a trial whose bench was killed is found and marked interrupted.
    """
    ALTER TABLE trials ADD COLUMN pid INTEGER;
    ALTER TABLE trials ADD COLUMN pid_started REAL;
    """,
    # 5: what a track's own runner returned besides weight/unit/success (Rally's request meta data), as JSON.
    """
    ALTER TABLE samples ADD COLUMN meta TEXT;
    """,
    # 6: what of each trial has reached a shared metrics store (named by its URL without credentials), so a
    # store that is down only delays pushing: the rows after these row ids are pushed when it is back.
    """
    CREATE TABLE pushes (
        trial_id TEXT NOT NULL,
        store TEXT NOT NULL,
        samples_rowid INTEGER NOT NULL DEFAULT 0,
        samples_seen INTEGER NOT NULL DEFAULT 0,
        telemetry_rowid INTEGER NOT NULL DEFAULT 0,
        telemetry_seen INTEGER NOT NULL DEFAULT 0,
        done INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (trial_id, store)
    );
    """,
    # 7: where each trial's track came from (a track repository and its commit, a folder, or built-in).
    """
    ALTER TABLE trials ADD COLUMN track_source TEXT NOT NULL DEFAULT '{}';
    """,
    # 8: annotations (bench add annotation), Rally's fields; also mirrored to a metrics store when one is used.
    """
    CREATE TABLE annotations (
        id TEXT PRIMARY KEY,
        environment TEXT NOT NULL,
        race_timestamp TEXT NOT NULL,
        track TEXT,
        chart TEXT,
        chart_name TEXT,
        message TEXT NOT NULL
    );
    """,
    # 9: what each document set of a trial was (a file, a generator, synthetic from the track's mappings).
    """
    ALTER TABLE trials ADD COLUMN corpora TEXT NOT NULL DEFAULT '[]';
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)

log = logging.getLogger(__name__)

_JSON_FIELDS = ("car", "track_params", "clusters", "user_tags", "options", "machine", "track_source", "corpora")
_TRIAL_COLUMNS = list(TrialInfo.model_fields)
_TELEMETRY_COLUMNS = ["timestamp", "cluster", "node", "device", "metric", "value", "raw"]


class PushState(NamedTuple):
    """How far a trial's rows have reached one metrics store: the last pushed row ids and how many rows were
    read up to them (the sequence numbers of the next ones); ``done`` once a finished trial is there whole."""

    samples_rowid: int = 0
    samples_seen: int = 0
    telemetry_rowid: int = 0
    telemetry_seen: int = 0
    done: bool = False


def new_trial_id() -> str:
    return uuid.uuid4().hex


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def machine_info() -> dict[str, Any]:
    """Facts about the load-generator machine, stored with each trial."""
    vm = psutil.virtual_memory()
    return {
        "hostname": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "cpu_physical": psutil.cpu_count(logical=False),
        "cpu_model": _cpu_model(),
        "memory_bytes": vm.total,
        "os": platform.platform(),
        "python": sys.version.split()[0],
        **({"machine_id": mid} if (mid := machine_id()) else {}),
    }


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _dumps(obj: Any) -> str:
    return json.dumps(redact(obj), sort_keys=True, default=str)


def _ts(dt: datetime | None) -> str | None:
    if dt is None:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).isoformat()


def _encode(field: str, value: Any) -> Any:
    """Python value of a TrialInfo field -> SQLite column value (redacted)."""
    if field in _JSON_FIELDS:
        return _dumps(value)
    if field in ("start_time", "end_time"):
        return _ts(value)
    if field == "test_mode":
        return int(bool(value))
    if field == "error":
        return redact_text(value) if value is not None else None
    if field == "status" and value not in STATUSES:
        raise ValueError(f"trial status {value!r} is not one of {STATUSES}")
    return value


def _journal_to_wal(conn: sqlite3.Connection, timeout: float = 30.0) -> None:
    """WAL, so readers never wait for a race's writes. A new database's first switch needs it alone, and sqlite
    answers "database is locked" at once instead of waiting when another bench creates it at the same moment: try
    again, within the connection's own timeout."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if getattr(e, "sqlite_errorcode", None) != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _statements(script: str) -> list[str]:
    """The SQL statements of a migration script, one by one (``executescript`` would commit the transaction)."""
    out, pending = [], ""
    for part in script.split(";"):
        pending += part + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                out.append(pending.strip())
            pending = ""
    return out


def _process_alive(pid: int, started: float | None) -> bool:
    try:
        p = psutil.Process(pid)
        return p.status() != psutil.STATUS_ZOMBIE and (started is None or abs(p.create_time() - started) < 1.0)
    except psutil.Error:
        return False


def _write_error(path: Path, what: str, e: sqlite3.Error) -> StoreError:
    """A full disk names itself and its remedy; other failures keep sqlite's words."""
    if getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
        return StoreError(f"no space left on device writing {path} ({what} failed): free space or set BENCH_HOME "
                          "to a folder with free space")
    limit = _file_size_limit()
    if limit is not None and (getattr(e, "sqlite_errorcode", None) or 0) & 0xFF == sqlite3.SQLITE_IOERR:
        # RLIMIT_FSIZE makes writes past it fail with EFBIG, which sqlite reports only as "disk I/O error".
        return StoreError(f"trial store {path}: {what} failed: {e}; this process may write files of at most "
                          f"{limit:,} bytes (ulimit -f): raise the limit")
    return StoreError(f"trial store {path}: {what} failed: {e}")


def _file_size_limit() -> int | None:
    """The process's file-size limit in bytes (RLIMIT_FSIZE), None when unlimited."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if soft == resource.RLIM_INFINITY else soft


_DAMAGED = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
_R = TypeVar("_R")


def read_error(path: Path, what: str, e: BaseException) -> StoreError:
    """A failed read as one line: a damaged file names sqlite's words and how to recover; nothing read from it is
    shown as if it were whole. ``e``: sqlite3's error, or pandas' DatabaseError wrapping it."""
    cause = e if isinstance(e, sqlite3.Error) else e.__cause__ or e.__context__
    cause = cause if isinstance(cause, sqlite3.Error) else e
    message = f"{type(cause).__module__}.{type(cause).__name__}: {cause}"
    code = getattr(cause, "sqlite_errorcode", None)
    if code in _DAMAGED or "malformed" in str(cause) or "not a database" in str(cause):
        return StoreError(f"trial store {path} is damaged ({what} failed: {message}): recover it with `sqlite3 "
                          f"{path} .recover | sqlite3 recovered.db` and put recovered.db in its place, or move it "
                          "away (bench starts a new one) or restore it from a backup")
    return StoreError(f"trial store {path}: {what} failed: {message}")


def _reading(what: str) -> Callable[[Callable[..., _R]], Callable[..., _R]]:
    """The one boundary of every read: sqlite's (and pandas') errors become a StoreError naming the file."""
    def decorate(method: Callable[..., _R]) -> Callable[..., _R]:
        @wraps(method)
        def read(self: TrialStore, *args: Any, **kwargs: Any) -> _R:
            try:
                return method(self, *args, **kwargs)
            except (sqlite3.DatabaseError, pd.errors.DatabaseError) as e:
                raise read_error(self.path, what, e) from e
        return read
    return decorate


class DamagedTrialError(StoreError):
    """A trial's row that cannot be read (a field that is not JSON, a status or time that is not one)."""

    def __init__(self, path: Path, damaged: DamagedTrial) -> None:
        super().__init__(f"trial {damaged.id} in {path} is damaged: {damaged.problem}: restore {path} from a backup "
                         f"or delete the trial (sqlite3 {path} \"DELETE FROM trials WHERE id = '{damaged.id}'\")")
        self.damaged = damaged


def _is_time(value: object) -> bool:
    try:
        datetime.fromisoformat(str(value))
    except ValueError:
        return False
    return True


class TrialStore:
    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else db_path()
        self.damaged: list[DamagedTrial] = []  # what the last list_trials left out
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
            self._conn = conn
            _journal_to_wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
            self._mark_interrupted()
        except sqlite3.DatabaseError as e:
            self.close()
            # Only a damaged file is cured by moving it away; a full or read-only disk is not.
            code = getattr(e, "sqlite_errorcode", None)
            if code == sqlite3.SQLITE_FULL:
                raise StoreError(f"no space left on device writing {self.path}: free space or set BENCH_HOME to "
                                 "a folder with free space") from e
            if code in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN) or (code or 0) & 0xFF == sqlite3.SQLITE_READONLY:
                raise StoreError(f"trial store {self.path} cannot be written ({e}): make its folder writable or "
                                 "set BENCH_HOME to a writable folder") from e
            if code == sqlite3.SQLITE_CORRUPT or "malformed" in str(e):
                # e.g. the file cut short (a disk that filled, a copy interrupted): what is left may be recovered.
                raise read_error(self.path, "opening it", e) from e
            raise StoreError(f"trial store {self.path} cannot be opened: {e}: "
                             "move the file away (bench creates a new one) or set BENCH_HOME") from e
        except OSError as e:
            self.close()
            raise StoreError(f"trial store {self.path} cannot be created: {e}: set BENCH_HOME to a writable "
                             "folder") from e

    # -- plumbing -------------------------------------------------------------------------------------
    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"trial store {self.path} is closed")
        return self._conn

    def _schema_version(self) -> int:
        row = self.conn.execute("SELECT version FROM schema_version").fetchone()
        current = int(row[0]) if row else 0
        if current > SCHEMA_VERSION:
            raise StoreError(f"trial store {self.path} has schema version {current}, newer than "
                             f"this bench understands ({SCHEMA_VERSION}): upgrade bench or set BENCH_HOME "
                             "elsewhere")
        return current

    def _migrate(self) -> None:
        with self._lock:
            c = self.conn
            c.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            if self._schema_version() == SCHEMA_VERSION:
                return
            # Benches opening a new store at once (two races, a race and an experiment) must not both migrate it
            # ("table trials already exists"): the write lock first, then the version again, all in one transaction.
            c.execute("BEGIN IMMEDIATE")
            try:
                for version in range(self._schema_version(), SCHEMA_VERSION):
                    for statement in _statements(MIGRATIONS[version]):
                        c.execute(statement)
                    c.execute("DELETE FROM schema_version")
                    c.execute("INSERT INTO schema_version VALUES (?)", (version + 1,))
                c.commit()
            except BaseException:
                c.rollback()
                raise

    def _mark_interrupted(self) -> None:
        """Trials still ``running`` whose process is gone become ``interrupted``, ending at their last sample,
        with a summary of the samples they kept (as an aborted run gets)."""
        with self._lock:
            rows = self.conn.execute("SELECT id, pid, pid_started FROM trials WHERE status = 'running' "
                                     "AND pid IS NOT NULL").fetchall()
        for trial_id, pid, started in rows:
            if _process_alive(pid, started):
                continue
            with self._lock:
                last = self.conn.execute("SELECT max(absolute_time + latency) FROM samples WHERE trial_id = ?",
                                         (trial_id,)).fetchone()[0]
            end = datetime.fromtimestamp(last, timezone.utc) if last is not None else utcnow()
            try:
                self._write("UPDATE trials SET status = 'interrupted', error = ?, end_time = ? "
                            "WHERE id = ? AND status = 'running'",
                            (f"interrupted: bench (pid {pid}) ended without storing the trial, e.g. killed; "
                             "samples kept until its end", _ts(end), trial_id))
                if self.summary(trial_id) is None:
                    summary = summarize_stored(self, trial_id)
                    if summary is not None:
                        self.set_summary(trial_id, summary)
            except StoreError as e:  # e.g. a read-only store: reading it must still work
                log.warning("could not mark trial %s interrupted: %s", trial_id, e)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> TrialStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, sql: str, params: Sequence[Any] = ()) -> int:
        with self._lock:
            try:
                cur = self.conn.execute(sql, params)
                self.conn.commit()
            except sqlite3.Error as e:
                self.conn.rollback()
                raise _write_error(self.path, "write", e) from e
            return cur.rowcount

    @_reading("reading the trials")
    def _require(self, trial_id: str) -> None:
        with self._lock:
            if self.conn.execute("SELECT 1 FROM trials WHERE id = ?", (trial_id,)).fetchone() is None:
                raise StoreError(f"no trial with id {trial_id!r} in {self.path}: run 'bench list trials'")

    # -- trials ---------------------------------------------------------------------------------------
    def create_trial(self, info: TrialInfo) -> None:
        values = [_encode(f, getattr(info, f)) for f in _TRIAL_COLUMNS]
        placeholders = ", ".join("?" for _ in _TRIAL_COLUMNS)
        try:
            self._write(f"INSERT INTO trials ({', '.join(_TRIAL_COLUMNS)}) VALUES ({placeholders})", values)
        except StoreError as e:
            if "UNIQUE" in str(e):
                raise StoreError(f"trial {info.id} already exists in {self.path}: use a new trial id") from e
            raise

    def update_trial(self, trial_id: str, **fields: Any) -> None:
        """Change some fields of a trial, e.g. ``clusters`` once provisioned."""
        unknown = sorted(set(fields) - set(_TRIAL_COLUMNS) | ({"id"} & set(fields)))
        if unknown:
            settable = [c for c in _TRIAL_COLUMNS if c != "id"]
            raise TypeError(f"update_trial: cannot set {unknown}; settable: {settable}")
        if not fields:
            return
        # Validate through the model so a bad value fails here, not when reading back.
        current = self.get_trial(trial_id)
        merged = TrialInfo.model_validate({**current.model_dump(), **fields})
        cols = list(fields)
        sets = ", ".join(f"{c} = ?" for c in cols)
        self._write(f"UPDATE trials SET {sets} WHERE id = ?",
                    [_encode(c, getattr(merged, c)) for c in cols] + [current.id])

    def finish_trial(self, trial_id: str, status: str, error: str | None = None) -> None:
        if status not in STATUSES or status == "running":
            raise ValueError(f"finish_trial: status must be complete, failed or aborted, not {status!r}")
        self._require(trial_id)
        self._write("UPDATE trials SET status = ?, error = ?, end_time = ? WHERE id = ?",
                    (status, _encode("error", error), _ts(utcnow()), trial_id))

    def _row_to_info(self, row: sqlite3.Row | tuple[Any, ...]) -> TrialInfo:
        """The row as a TrialInfo; a row that cannot be read raises DamagedTrialError naming the field."""
        d = dict(zip(_TRIAL_COLUMNS, row))
        problems = []
        for f in _JSON_FIELDS:
            try:
                d[f] = json.loads(d[f])
            except (TypeError, ValueError) as e:
                problems.append(f"field {f} is not JSON ({e})")
                d.pop(f)
        d["test_mode"] = bool(d["test_mode"])
        try:
            info = TrialInfo.model_validate(d)
        except ValidationError as e:
            problems += [f"field {'.'.join(map(str, err['loc']))}: {err['msg']} ({str(err.get('input'))[:60]!r})"
                         for err in e.errors()]
            info = None
        if info is None or problems:
            tags = d.get("user_tags")
            start = d.get("start_time")
            damaged = DamagedTrial(id=str(d.get("id")), problem="; ".join(problems),
                                   user_tags={str(k): str(v) for k, v in tags.items()} if isinstance(tags, dict)
                                   else {}, start_time=start if info is not None or _is_time(start) else None)
            raise DamagedTrialError(self.path, damaged)
        return info

    @_reading("reading the trial")
    def get_trial(self, id_or_prefix: str) -> TrialInfo:
        """The trial with this id or unique id prefix."""
        key = (id_or_prefix or "").strip().lower().replace("-", "")  # Rally's race ids are UUIDs with dashes
        if not key or any(ch not in "0123456789abcdef" for ch in key):
            raise StoreError(f"{id_or_prefix!r} is not a trial id (hex digits): run 'bench list trials'")
        cols = ", ".join(_TRIAL_COLUMNS)
        with self._lock:
            rows = self.conn.execute(f"SELECT {cols} FROM trials WHERE id = ? OR id LIKE ? LIMIT 3",
                                     (key, key + "%")).fetchall()
        exact = [r for r in rows if r[0] == key]
        if exact:
            return self._readable(self._row_to_info(exact[0]))
        if not rows:
            raise StoreError(f"no trial with id {id_or_prefix!r} in {self.path}: run 'bench list trials'")
        if len(rows) > 1:
            ids = ", ".join(r[0][:12] for r in rows[:2])
            raise StoreError(f"trial id prefix {id_or_prefix!r} is ambiguous (matches {ids}, ...): "
                             "give more characters")
        return self._readable(self._row_to_info(rows[0]))

    @_reading("PRAGMA quick_check")
    def check_intact(self) -> None:
        """Before a race writes into it: a damaged file fails here in one line, not later, or never said."""
        with self._lock:
            rows = [r[0] for r in self.conn.execute("PRAGMA quick_check(3)").fetchall()]
        if rows != ["ok"]:
            raise read_error(self.path, "PRAGMA quick_check", sqlite3.DatabaseError(
                f"database disk image is malformed ({'; '.join(rows)[:200]})"))

    def _readable(self, info: TrialInfo) -> TrialInfo:
        """Every row of the trial read once (not through the index alone), so that show, compare and reports
        never print a trial whose samples or telemetry sit on a damaged page."""
        with self._lock:
            for table, column in (("samples", "error"), ("telemetry", "raw")):
                self.conn.execute(f"SELECT count(*), sum(length({column})) FROM {table} WHERE trial_id = ?",
                                  (info.id,)).fetchone()
            self.conn.execute("SELECT length(summary) FROM summaries WHERE trial_id = ?", (info.id,)).fetchone()
        return info

    @_reading("listing the trials")
    def list_trials(self, limit: int = 50) -> list[TrialInfo]:
        """Newest first."""
        cols = ", ".join(_TRIAL_COLUMNS)
        with self._lock:
            rows = self.conn.execute(
                f"SELECT {cols} FROM trials ORDER BY start_time DESC, rowid DESC LIMIT ?",
                (int(limit),)).fetchall()
        trials, self.damaged = [], []
        for r in rows:
            try:
                trials.append(self._row_to_info(r))
            except DamagedTrialError as e:
                log.warning("%s", e)
                self.damaged.append(e.damaged)
        return trials

    def delete_trial(self, trial_id: str) -> str:
        """Remove the trial and every row of it (samples, telemetry, summary, push records), in one transaction;
        returns where it was deleted."""
        self._require(trial_id)
        with self._lock:
            try:
                with self.conn:
                    for table, column in (("samples", "trial_id"), ("telemetry", "trial_id"),
                                          ("summaries", "trial_id"), ("pushes", "trial_id"), ("trials", "id")):
                        self.conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (trial_id,))
            except sqlite3.Error as e:
                raise _write_error(self.path, "deleting the trial", e) from None
        return "the local store"

    # -- samples --------------------------------------------------------------------------------------
    def add_samples(self, trial_id: str, samples: Sequence[RequestSample]) -> None:
        """Append one batch of samples (one transaction)."""
        if not samples:
            return

        def rows() -> Any:
            for s in samples:
                if s.error_type is not None:
                    s = s._replace(error_type=redact_text(s.error_type))
                if s.error is not None:
                    s = s._replace(error=redact_text(s.error))
                if s.meta is not None:
                    s = s._replace(meta=redact_text(s.meta))
                yield (trial_id, *s)

        placeholders = ", ".join("?" for _ in range(len(SAMPLE_COLUMNS) + 1))
        with self._lock:
            try:
                self.conn.executemany(
                    f"INSERT INTO samples (trial_id, {', '.join(SAMPLE_COLUMNS)}) VALUES ({placeholders})",
                    rows())
                self.conn.commit()
            except sqlite3.Error as e:
                self.conn.rollback()
                raise _write_error(self.path, f"writing {len(samples)} samples", e) from e

    @_reading("reading samples")
    def samples(self, trial_id: str) -> pd.DataFrame:
        """All samples of a trial in insertion order; columns are the RequestSample fields."""
        with self._lock:
            df = pd.read_sql_query(
                f"SELECT {', '.join(SAMPLE_COLUMNS)} FROM samples WHERE trial_id = ? ORDER BY rowid",
                self.conn, params=(trial_id,))
        try:
            return normalize_frame(df)
        except (TypeError, ValueError) as e:  # a column holding what is not its type (e.g. text for a latency)
            raise StoreError(f"trial {trial_id}: its samples in {self.path} are damaged ({e}): restore {self.path} "
                             "from a backup or delete the trial") from None

    # -- telemetry ------------------------------------------------------------------------------------
    def add_telemetry(self, trial_id: str, rows: Sequence[TelemetryRow]) -> None:
        if not rows:
            return
        data = [(trial_id, float(r.timestamp), r.cluster, r.node, r.device, r.metric, float(r.value),
                 _dumps(r.raw) if r.raw is not None else None) for r in rows]
        with self._lock:
            try:
                self.conn.executemany(
                    "INSERT INTO telemetry (trial_id, timestamp, cluster, node, device, metric, value, raw) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", data)
                self.conn.commit()
            except sqlite3.Error as e:
                self.conn.rollback()
                raise _write_error(self.path, "writing telemetry", e) from e

    @_reading("reading telemetry")
    def telemetry(self, trial_id: str) -> pd.DataFrame:
        """Columns: timestamp, cluster, node, device, metric, value, raw (parsed JSON or None)."""
        with self._lock:
            df = pd.read_sql_query(
                f"SELECT {', '.join(_TELEMETRY_COLUMNS)} FROM telemetry WHERE trial_id = ? ORDER BY rowid",
                self.conn, params=(trial_id,))
        df["raw"] = [json.loads(r) if isinstance(r, str) else None for r in df["raw"]]
        return df

    # -- summaries ------------------------------------------------------------------------------------
    def set_summary(self, trial_id: str, summary: Summary) -> None:
        self._require(trial_id)
        text = json.dumps(redact(summary.model_dump(mode="json")))
        self._write("INSERT INTO summaries (trial_id, summary) VALUES (?, ?) "
                    "ON CONFLICT(trial_id) DO UPDATE SET summary = excluded.summary", (trial_id, text))

    @_reading("reading a summary")
    def summary(self, trial_id: str) -> Summary | None:
        with self._lock:
            row = self.conn.execute("SELECT summary FROM summaries WHERE trial_id = ?",
                                    (trial_id,)).fetchone()
        try:
            return Summary.model_validate_json(row[0]) if row else None
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(map(str, err["loc"]))
            raise StoreError(f"trial {trial_id}: its stored summary in {self.path} is damaged ({where + ': ' if where else ''}"
                             f"{err['msg']}): delete it (sqlite3 {self.path} \"DELETE FROM summaries WHERE trial_id = "
                             f"'{trial_id}'\") and bench summarises the trial's samples afresh") from None

    # -- annotations ----------------------------------------------------------------------------------
    def add_annotation(self, a: Annotation) -> None:
        self._write("INSERT OR REPLACE INTO annotations (id, environment, race_timestamp, track, chart, chart_name, "
                    "message) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (a.id, a.environment, a.race_timestamp, a.track, a.chart, a.chart_name, redact_text(a.message)))

    @_reading("reading annotations")
    def annotations(self) -> list[Annotation]:
        with self._lock:
            rows = self.conn.execute("SELECT id, environment, race_timestamp, track, chart, chart_name, message "
                                     "FROM annotations").fetchall()
        return [Annotation(id=r[0], environment=r[1], race_timestamp=r[2], track=r[3], chart=r[4], chart_name=r[5],
                           message=r[6]) for r in rows]

    def delete_annotation(self, annotation_id: str) -> bool:
        """False when there was none with this id."""
        return self._write("DELETE FROM annotations WHERE id = ?", (annotation_id,)) > 0

    # -- pushing to a metrics store ------------------------------------------------------------------
    @_reading("reading samples")
    def sample_rows_after(self, trial_id: str, rowid: int, limit: int) -> list[tuple[int, RequestSample]]:
        """Up to ``limit`` samples of a trial stored after row ``rowid``, with their row ids, in order."""
        with self._lock:
            rows = self.conn.execute(
                f"SELECT rowid, {', '.join(SAMPLE_COLUMNS)} FROM samples WHERE trial_id = ? AND rowid > ? "
                "ORDER BY rowid LIMIT ?", (trial_id, int(rowid), int(limit))).fetchall()
        return [(r[0], RequestSample(*r[1:])) for r in rows]

    @_reading("reading telemetry")
    def telemetry_rows_after(self, trial_id: str, rowid: int, limit: int) -> list[tuple[int, TelemetryRow]]:
        with self._lock:
            rows = self.conn.execute(
                f"SELECT rowid, {', '.join(_TELEMETRY_COLUMNS)} FROM telemetry WHERE trial_id = ? AND rowid > ? "
                "ORDER BY rowid LIMIT ?", (trial_id, int(rowid), int(limit))).fetchall()
        return [(rowid, TelemetryRow(ts, cluster, node, device, metric, value,
                                     json.loads(raw) if isinstance(raw, str) else None))
                for rowid, ts, cluster, node, device, metric, value, raw in rows]

    @_reading("reading push state")
    def push_state(self, trial_id: str, store: str) -> PushState | None:
        """How far the trial has reached ``store``; None if it was never pushed there."""
        with self._lock:
            row = self.conn.execute("SELECT samples_rowid, samples_seen, telemetry_rowid, telemetry_seen, done "
                                    "FROM pushes WHERE trial_id = ? AND store = ?", (trial_id, store)).fetchone()
        if not row:
            return None
        samples_rowid, samples_seen, telemetry_rowid, telemetry_seen, done = row
        return PushState(samples_rowid, samples_seen, telemetry_rowid, telemetry_seen, bool(done))

    def set_push_state(self, trial_id: str, store: str, state: PushState) -> None:
        """Advance the watermark, never back: two pushers of one trial (a race's and ``bench store push``) each
        write what they sent, and the one that read an older state may write last. Each row id stays paired with
        its count (the sequence numbers, hence the document ids, follow from it); ``done`` stays once set."""
        self._write("INSERT INTO pushes (trial_id, store, samples_rowid, samples_seen, telemetry_rowid, telemetry_seen, "
                    "done) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(trial_id, store) DO UPDATE SET "
                    "samples_rowid = max(samples_rowid, excluded.samples_rowid), "
                    "samples_seen = CASE WHEN excluded.samples_rowid >= samples_rowid THEN excluded.samples_seen "
                    "ELSE samples_seen END, "
                    "telemetry_rowid = max(telemetry_rowid, excluded.telemetry_rowid), "
                    "telemetry_seen = CASE WHEN excluded.telemetry_rowid >= telemetry_rowid THEN excluded.telemetry_seen "
                    "ELSE telemetry_seen END, "
                    "done = max(done, excluded.done)", (trial_id, store, *state[:4], int(state.done)))

    @_reading("reading push state")
    def pending_pushes(self, store: str) -> list[str]:
        """Trials meant for ``store`` that have not fully reached it."""
        with self._lock:
            rows = self.conn.execute("SELECT trial_id FROM pushes WHERE store = ? AND done = 0", (store,)).fetchall()
        return [r[0] for r in rows]

    @_reading("counting unpushed rows")
    def unpushed_rows(self, trial_id: str, state: PushState | None) -> int:
        """Samples and telemetry rows of the trial not yet pushed (all of them without a state)."""
        s = state or PushState()
        with self._lock:
            a = self.conn.execute("SELECT count(*) FROM samples WHERE trial_id = ? AND rowid > ?",
                                  (trial_id, s.samples_rowid)).fetchone()[0]
            b = self.conn.execute("SELECT count(*) FROM telemetry WHERE trial_id = ? AND rowid > ?",
                                  (trial_id, s.telemetry_rowid)).fetchone()[0]
        return int(a) + int(b)
