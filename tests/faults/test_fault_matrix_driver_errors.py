"""How the load driver counts and reports failures (docs/guide/failures.md#failed-requests): a bulk that got no
answer failed all its documents, every kind of item error of every bulk is named and counted, a client that
cannot reach its cluster backs off instead of failing as fast as it can, and each kind of error says when it came.

A real bench process against a null sink of the test's own that is killed mid-race, and a real Elasticsearch (the
session's) for mapping conflicts on two fields.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.cli import main
from bench.driver.client_loop import BACKOFF_CAP, next_backoff
from bench.driver.item_errors import MAX_ITEM_KINDS, item_failures, item_failures_text, parse_item_failures
from bench.results.exit_status import EXIT_OK
from bench.results.summary import Summary
from bench.trials.sqlite import TrialStore
from benchmarks.nullsink import free_port, start_in_background
from tests.race.test_race import write_track
from tests.support.checkout import ROOT

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("fault_injection")]

DOCS_PER_BULK = 100
WINDOW = 3.0  # seconds after a client's first connection error in which its errors are counted


def _paced_bulk_track(folder: Path, clients: int = 2, seconds: float = 8, bulks_per_s: float = 100) -> Path:
    data = folder / "docs.json"
    folder.mkdir(parents=True, exist_ok=True)
    data.write_text("".join(json.dumps({"n": i}) + "\n" for i in range(20 * DOCS_PER_BULK)))
    return write_track(folder / "t", [
        {"operation": {"name": "load", "operation-type": "bulk", "bulk-size": DOCS_PER_BULK, "looped": True},
         "clients": clients, "time-period": seconds, "target-throughput": bulks_per_s}],
        indices=[{"name": "i"}],
        corpora=[{"name": "c", "documents": [{"source-file": str(data), "document-count": 20 * DOCS_PER_BULK,
                                              "target-index": "i"}]}])


def _stored(home: Path, sql: str) -> list[tuple]:
    try:
        with sqlite3.connect(home / "bench.db", timeout=5) as c:
            return c.execute(sql).fetchall()
    except sqlite3.Error:
        return []


@pytest.fixture(scope="module")
def killed_target(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A paced bulk race (2 clients, 50 bulks/s each, 8 s) whose null sink is killed once 50 samples are stored;
    its stdout and home."""
    tmp_path = tmp_path_factory.mktemp("killed-target")
    port = free_port()
    sinks = start_in_background(port)
    home = tmp_path / "home"
    track = _paced_bulk_track(tmp_path / "track")
    proc = subprocess.Popen([sys.executable, "-m", "bench", "--quiet", "race", f"--track-path={track}",
                             f"--target-hosts=127.0.0.1:{port}"], cwd=ROOT,
                            env={**os.environ, "BENCH_HOME": str(home)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        started = time.monotonic()
        while proc.poll() is None and time.monotonic() - started < 60 and \
                (_stored(home, "SELECT count(*) FROM samples") or [(0,)])[0][0] < 50:
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()
        for p in sinks:
            p.kill()
        out, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"bench did not end within 90 s of the fault: {err}")
    finally:
        for p in sinks:
            p.kill()
            p.join(5)
    assert proc.returncode == EXIT_OK and "Traceback" not in err, err
    return out, home


def _connection_errors(home: Path) -> list[tuple]:
    """(client, relative time, units, unit, failed units) of the measured connection errors, in time order."""
    rows = _stored(home, "SELECT client_id, relative_time, units, unit, failed_units FROM samples "
                         "WHERE error_type = 'connection' AND warmup = 0 ORDER BY relative_time")
    assert rows
    return rows


def _summary(home: Path) -> Summary:
    [(text,)] = _stored(home, "SELECT summary FROM summaries")
    return Summary.model_validate_json(text)


def _backoff_bound(window: float) -> int:
    """The most connection errors one client can have within ``window`` s of its first: after its k-th in a row
    it waits ``next_backoff`` applied k times before the next request."""
    n, elapsed, wait = 1, 0.0, 0.0
    while True:
        wait = next_backoff(wait)
        if elapsed + wait > window:
            return n
        elapsed += wait
        n += 1


def test_a_bulk_without_answer_fails_every_document_it_carried(killed_target) -> None:
    out, home = killed_target
    rows = _connection_errors(home)
    assert {(units, unit, failed) for _, _, units, unit, failed in rows} == \
        {(DOCS_PER_BULK, "docs", DOCS_PER_BULK)}
    task = _summary(home).tasks[0]
    assert task.unit == "docs" and task.failed_requests == len(rows), task
    assert task.failed_units == task.failed_requests * DOCS_PER_BULK, task
    assert f"{task.failed_units:,} docs failed" in out, out


def test_clients_back_off_when_the_target_refuses_connections(killed_target) -> None:
    _, home = killed_target
    rows = _connection_errors(home)
    # A client's connection errors within WINDOW s of its first are bounded by the schedule of waits (without
    # backoff they were one per due request: 150 at 50 bulks/s).
    bound = _backoff_bound(WINDOW)
    assert bound < 50 * WINDOW / 4
    for client in {c for c, *_ in rows}:
        times = [t for c, t, *_ in rows if c == client]
        in_window = [t for t in times if t <= times[0] + WINDOW]
        assert 3 <= len(in_window) <= bound, (client, len(in_window), bound, times[:20])
        # ... and it keeps trying (about once per BACKOFF_CAP) until the end of the 8 s
        assert len(times) > len(in_window)


def test_an_error_kind_shows_its_first_and_last_time(killed_target) -> None:
    out, home = killed_target
    rows = _connection_errors(home)
    # refused, and reset for a request in flight at the kill: each kind with its own times
    kinds = [e for e in _summary(home).tasks[0].error_messages if e.message.startswith("connection error")]
    assert sum(e.count for e in kinds) == len(rows)
    assert min(e.first_s or 0 for e in kinds) == pytest.approx(rows[0][1])
    assert max(e.last_s or 0 for e in kinds) == pytest.approx(rows[-1][1])
    for e in kinds:
        when = (f"(at {e.first_s:,.1f} s after its step started)" if e.count == 1 else
                f"(first {e.first_s:,.1f} s, last {e.last_s:,.1f} s after its step started)")
        assert when in out, out
        assert e.documents == e.count * DOCS_PER_BULK


def test_backoff_waits_double_from_50_ms_up_to_the_cap() -> None:
    waits, w = [], 0.0
    for _ in range(8):
        w = next_backoff(w)
        waits.append(w)
    assert waits == [0.05, 0.1, 0.2, 0.4, 0.8, BACKOFF_CAP, BACKOFF_CAP, BACKOFF_CAP]
    assert _backoff_bound(3.0) == 7  # errors at 0, .05, .15, .35, .75, 1.55, 2.55 s


def test_two_mapping_conflicts_in_each_bulk_are_two_kinds_with_their_documents(tmp_path, es_target, capsys) -> None:
    """Each bulk holds documents whose date field and documents whose long field the mapping refuses (and
    documents it takes): both kinds are named, each with the documents that failed with it."""
    data = tmp_path / "docs.json"
    docs, per_bulk = 240, 60
    bad = [{"d": "2026-01-01", "n": 1}, {"d": "not-a-date", "n": 2}, {"d": "2026-01-01", "n": "not-a-number"}]
    data.write_text("".join(json.dumps(bad[i % 3]) + "\n" for i in range(docs)))
    index = f"conflicts-{tmp_path.name.lower()}"
    track = write_track(
        tmp_path / "t",
        [{"operation": {"name": "del", "operation-type": "delete-index"}},
         {"operation": {"name": "create", "operation-type": "create-index"}},
         {"operation": {"name": "load", "operation-type": "bulk", "bulk-size": per_bulk}, "clients": 1},
         {"operation": {"name": "clean", "operation-type": "delete-index"}}],
        indices=[{"name": index, "body": "index.json"}],
        corpora=[{"name": "c", "documents": [{"source-file": str(data), "document-count": docs,
                                              "target-index": index}]}])
    (track / "index.json").write_text(json.dumps({
        "settings": {"number_of_shards": 1, "number_of_replicas": 0},
        "mappings": {"properties": {"d": {"type": "date"}, "n": {"type": "long"}}}}))
    assert main(["--quiet", "race", f"--track-path={track}", f"--target-hosts={es_target}"]) == EXIT_OK
    out = capsys.readouterr().out
    with TrialStore() as store:
        summary = store.summary(store.list_trials(1)[0].id)
    assert summary is not None
    load = summary.task("load")
    assert load is not None and load.failed_units == docs * 2 // 3, load
    kinds = {("[d]" in e.message, "[n]" in e.message): e for e in load.error_messages}
    assert set(kinds) == {(True, False), (False, True)}, load.error_messages
    for e in kinds.values():
        # each of the 4 bulks had 20 of each kind
        assert (e.count, e.documents) == (docs // per_bulk, docs // 3), e
        assert e.first_s is not None and e.last_s is not None and 0 < e.first_s <= e.last_s
    assert out.count(f"({docs // 3:,} documents)") == 2, out


def test_item_errors_group_by_kind_within_a_bulk_whatever_their_ids() -> None:
    conflicts = [{"create": {"error": {"type": "version_conflict_engine_exception",
                                       "reason": f"[doc-{i}]: version conflict, document already exists"}}}
                 for i in range(300)]
    mapping = [{"index": {"error": {"type": "document_parsing_exception",
                                    "reason": f"[1:{i % 9}] failed to parse field [d] of type [date] in document "
                                              f"with id 'x{i}'. Preview of field's value: 'v{i}'"}}}
               for i in range(200)]
    ok = [{"index": {"status": 201}}] * 10
    failed, kinds = item_failures(conflicts + ok + mapping)
    assert failed == 500 and [n for n, _ in kinds] == [300, 200]
    text = item_failures_text(failed, 510, kinds)
    assert parse_item_failures(text) == kinds
    # the summary reads a bulk stored before kinds were kept as one message
    assert parse_item_failures("3 of 5 documents failed, first: mapper_parsing_exception: x") is None

    many = [{"index": {"error": {"type": f"t{i % 25}", "reason": "r"}}} for i in range(100)]
    failed, kinds = item_failures(many)
    assert failed == 100 and len(kinds) == MAX_ITEM_KINDS + 1 and sum(n for n, _ in kinds) == 100
    assert kinds[-1][1] == "5 other kinds of item error"
