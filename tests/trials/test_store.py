"""The SQLite trial store: round trips, prefixes, redaction, batch speed, crash safety, migrations."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest

from bench.driver.samples import RequestSample
from bench.results.stats import samples_frame
from bench.results.summary import summarize
from bench.trials.sqlite import SCHEMA_VERSION, TelemetryRow, TrialInfo, TrialStore, machine_info, new_trial_id
from bench.util.errors import StoreError
from bench.util.redact import register_secret

T0 = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_HOME", str(tmp_path / "home"))
    s = TrialStore()
    yield s
    s.close()


def info(trial_id: str | None = None, **kw) -> TrialInfo:
    base = dict(id=trial_id or new_trial_id(), track="nginx", challenge="append-no-conflicts", car=["defaults"],
                start_time=T0, bench_version="0.1.0", machine=machine_info())
    return TrialInfo(**{**base, **kw})


def samples(n: int, task: str = "bulk", t0: float = 1000.0) -> list[RequestSample]:
    return [RequestSample(task, task, "bulk", i % 8, t0 + i * 0.001, i * 0.001, 0.02, 0.015, 500, "docs", 4096,
                          i % 100 != 0, None if i % 100 else "http 429", i < n // 10, i % 7 == 0 and 1 or 0)
            for i in range(n)]


def test_default_path_is_db_path_with_wal_and_schema_version(store, tmp_path):
    assert store.path == tmp_path / "home" / "bench.db"
    mode = store.conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    assert store.conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert store.conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"trials", "samples", "summaries", "telemetry", "schema_version"} <= tables


def test_trial_round_trip_update_and_finish(store):
    i = info(track_params={"bulk_size": 500, "nested": {"a": [1, 2]}}, user_tags={"team": "search"},
             options={"pipeline": "from-distribution", "clients": 8}, test_mode=True)
    store.create_trial(i)
    got = store.get_trial(i.id)
    assert got == i
    assert got.status == "running" and got.end_time is None
    clusters = [{"name": "default", "engine": "elasticsearch", "version": "8.19.21", "nodes": 1,
                 "hosts": ["http://127.0.0.1:9200"]}]
    store.update_trial(i.id, clusters=clusters)
    assert store.get_trial(i.id).clusters == clusters
    with pytest.raises(TypeError):
        store.update_trial(i.id, nonsense=1)
    store.finish_trial(i.id, "failed", error="node default-0 died")
    done = store.get_trial(i.id)
    assert done.status == "failed" and done.error == "node default-0 died"
    assert done.end_time is not None and done.end_time >= done.start_time
    with pytest.raises(ValueError):
        store.finish_trial(i.id, "weird")


def test_get_trial_by_prefix_unknown_and_ambiguous(store):
    store.create_trial(info("abc111" + "0" * 26))
    store.create_trial(info("abc222" + "0" * 26))
    assert store.get_trial("abc1").id.startswith("abc111")
    assert store.get_trial("ABC2").id.startswith("abc222")
    for bad, pattern in [("abc", "ambiguous"), ("fff", "no trial"), ("not-hex", "not a trial id"), ("", "not a")]:
        with pytest.raises(StoreError, match=pattern) as e:
            store.get_trial(bad)
        assert "\n" not in str(e.value)
    with pytest.raises(StoreError, match="already exists"):
        store.create_trial(info("abc111" + "0" * 26))


def test_list_trials_newest_first_with_limit(store):
    ids = []
    for k in range(5):
        i = info(start_time=T0 + timedelta(minutes=k))
        store.create_trial(i)
        ids.append(i.id)
    assert [t.id for t in store.list_trials()] == ids[::-1]
    assert [t.id for t in store.list_trials(limit=2)] == ids[:2:-1][:2]


def test_samples_round_trip_exactly(store):
    i = info()
    store.create_trial(i)
    data = samples(2000) + samples(300, task="query", t0=2000.0)
    store.add_samples(i.id, data[:1000])
    store.add_samples(i.id, data[1000:])
    store.add_samples(i.id, [])
    got = store.samples(i.id)
    pd.testing.assert_frame_equal(got, samples_frame(data))
    assert store.samples("nope").empty


def test_100k_samples_in_one_batch(store):
    # How fast this is lives in benchmarks/bench_store.py, not in a timed test.
    i = info()
    store.create_trial(i)
    store.add_samples(i.id, samples(100_000))
    assert store.conn.execute("SELECT COUNT(*) FROM samples WHERE trial_id = ?", (i.id,)).fetchone()[0] == 100_000


def test_concurrent_writers_from_threads(store):
    i = info()
    store.create_trial(i)

    def writer(k):
        for _ in range(20):
            store.add_samples(i.id, samples(100, task=f"t{k}"))

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.samples(i.id)) == 4 * 20 * 100


def test_summary_and_telemetry_round_trip(store):
    i = info()
    store.create_trial(i)
    assert store.summary(i.id) is None
    summary = summarize(samples_frame(samples(3000)))
    store.set_summary(i.id, summary)
    assert store.summary(i.id) == summary
    store.set_summary(i.id, summary.model_copy(update={"notes": ["again"]}))
    assert store.summary(i.id).notes == ["again"]
    with pytest.raises(StoreError, match="no trial"):
        store.set_summary("0" * 32, summary)

    rows = [TelemetryRow(1.5, "default", "default-0", "node-stats", "jvm_heap_used_bytes", 1e8, {"x": 1}),
            TelemetryRow(2.5, "default", "default-0", "node-stats", "jvm_heap_used_bytes", 2e8)]
    store.add_telemetry(i.id, rows)
    t = store.telemetry(i.id)
    assert list(t.columns) == ["timestamp", "cluster", "node", "device", "metric", "value", "raw"]
    assert t["value"].tolist() == [1e8, 2e8]
    assert t["raw"].tolist() == [{"x": 1}, None]


def test_secrets_never_reach_the_database_file(tmp_path):
    secret = "s3cr3t-Pa55w0rd-xyz"
    register_secret(secret)
    db = tmp_path / "bench.db"
    store = TrialStore(db)
    i = info(options={"client_options": {"basic_auth_password": secret, "hosts": [f"https://u:{secret}@h:9200"]},
                      "note": f"pw is {secret}"},
             track_params={"password": "plain-param-pw"},
             clusters=[{"name": "default", "hosts": [f"http://bench:{secret}@127.0.0.1:9200"]}],
             user_tags={"why": f"tag {secret}"})
    store.create_trial(i)
    store.update_trial(i.id, clusters=[{"name": "default", "api_key": "k-very-secret-api-key"}])
    store.add_samples(i.id, [samples(1)[0]._replace(error_type=f"401 for {secret}", success=False)])
    store.add_telemetry(i.id, [TelemetryRow(1.0, "default", "n", "d", "m", 1.0, {"auth": secret})])
    summary = summarize(samples_frame(samples(10))).model_copy(update={"notes": [f"oops {secret}"]})
    store.set_summary(i.id, summary)
    store.finish_trial(i.id, "failed", error=f"connect to https://bench:{secret}@127.0.0.1:9200 failed")
    stored = store.get_trial(i.id)
    store.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("bench.db"))
    assert secret.encode() not in raw
    assert b"plain-param-pw" not in raw
    assert b"k-very-secret-api-key" not in raw
    assert b"pw is *****" in raw
    assert stored.error == "connect to https://bench:*****@127.0.0.1:9200 failed"


def test_killed_writer_keeps_committed_batches(tmp_path):
    """A bench process killed mid-race loses at most the batch it was writing."""
    db = tmp_path / "bench.db"
    script = textwrap.dedent(f"""
        import os, signal, sys
        from datetime import datetime, timezone
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_store import info, samples
        from bench.trials.sqlite import TrialStore
        s = TrialStore({str(db)!r})
        s.create_trial(info("dead" + "0" * 28, start_time=datetime.now(timezone.utc)))
        for _ in range(3):
            s.add_samples("dead" + "0" * 28, samples(1000))
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], timeout=60)
    assert proc.returncode == -9
    with TrialStore(db) as s:  # opening the store finds the trial's process gone
        trial = s.get_trial("dead")
        assert trial.status == "interrupted" and "ended without storing the trial" in (trial.error or "")
        assert len(s.samples("dead" + "0" * 28)) == 3000
        assert trial.end_time is not None and s.summary(trial.id) is not None


def test_running_trial_of_a_live_process_stays_running_and_a_reused_pid_is_not_life(tmp_path):
    import psutil

    db = tmp_path / "bench.db"
    me = psutil.Process()
    with TrialStore(db) as s:
        s.create_trial(info("a" * 32))  # this process: alive
        # Same pid, other start time: the pid was reused by another process, the trial's bench is gone.
        s.create_trial(info("b" * 32).model_copy(update={"pid": me.pid, "pid_started": me.create_time() - 3600}))
    with TrialStore(db) as s:
        assert s.get_trial("a" * 32).status == "running"
        assert s.get_trial("b" * 32).status == "interrupted"


def test_reopen_keeps_data_and_newer_schema_is_refused(tmp_path):
    db = tmp_path / "bench.db"
    with TrialStore(db) as s:
        s.create_trial(info("cafe" + "0" * 28))
    with TrialStore(db) as s:
        assert s.get_trial("cafe").track == "nginx"
    conn = sqlite3.connect(db)
    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer than this bench") as e:
        TrialStore(db)
    assert "\n" not in str(e.value)


def test_garbage_file_is_a_clear_error(tmp_path):
    db = tmp_path / "bench.db"
    db.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="cannot be opened") as e:
        TrialStore(db)
    assert str(db) in str(e.value) and "\n" not in str(e.value)


def test_machine_info_fields():
    m = machine_info()
    assert {"hostname", "cpu_count", "memory_bytes", "os", "python"} <= set(m)
    assert m["cpu_count"] >= 1 and m["memory_bytes"] > 0


def test_error_messages_are_stored_masked_with_counts(store):
    secret = "err-S3cret-in-message"
    register_secret(secret)
    i = info()
    store.create_trial(i)
    failed = samples(1)[0]._replace(success=False, error_type="http-401", status=401)
    auth = "HTTP 401: security_exception: missing authentication credentials for REST request"
    rows = [failed._replace(error=auth)] * 3 + [failed._replace(error=f"connection error: https://u:{secret}@h")]
    store.add_samples(i.id, rows)
    df = store.samples(i.id)
    assert list(df["error"]) == [auth] * 3 + ["connection error: https://u:*****@h"]
    store.set_summary(i.id, summarize(df))
    # A message that says "credentials" keeps its count through the store's redaction of secret-looking keys.
    [task] = store.summary(i.id).tasks
    assert [(e.message, e.count) for e in task.error_messages] == [
        (auth, 3), ("connection error: https://u:*****@h", 1)]
