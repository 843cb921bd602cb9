"""The fault matrix's concurrency rows (docs/guide/failures.md#the-fault-matrix): every command that writes the
store, run twice at once into one BENCH_HOME. Either both finish honestly (the right statuses, nothing lost, no
"database is locked") or the second is refused in one line; never a duplicated measurement.

Races run against the null sink (a real HTTP server on 127.0.0.1), a bulk track throttled so each race lasts about
two seconds; the metrics store of ``bench store push`` is the session's Elasticsearch node.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bench.results.exit_status import EXIT_FAILED, EXIT_OK
from benchmarks.nullsink import running
from tests.support.checkout import ROOT

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("fault_injection")]

DOCS = 2000


@pytest.fixture(scope="module")
def sink() -> Iterator[str]:
    with running() as hostport:
        yield hostport


def _write_track(folder: Path, bulk_size: int = 100, rate: float = 10) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "docs.json").write_text("".join(json.dumps({"n": i}) + "\n" for i in range(DOCS)))
    (folder / "track.json").write_text(json.dumps({
        "version": 2, "indices": [{"name": "i"}],
        "corpora": [{"name": "c", "documents": [{"source-file": "docs.json", "document-count": DOCS,
                                                 "target-index": "i"}]}],
        "schedule": [{"name": "index", "clients": 1, "target-throughput": rate,
                      "operation": {"name": "load", "operation-type": "bulk", "bulk-size": bulk_size}}]}))
    return folder


@pytest.fixture(scope="module")
def track(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 bulks of 100 documents at 10 bulks/s: about two seconds of indexing per race."""
    return _write_track(tmp_path_factory.mktemp("track"))


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "BENCH_HOME": str(home)}


def _start(home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "bench", "--quiet", *args], cwd=ROOT, env=_env(home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)


def _ended(proc: subprocess.Popen[str], timeout: float = 180) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"bench did not end within {timeout} s: {err[-2000:]}")
    assert "Traceback" not in err and "database is locked" not in err + out, err
    return proc.returncode, out, err


def _trials(home: Path) -> list[dict[str, object]]:
    try:
        with sqlite3.connect(home / "bench.db", timeout=10) as c:
            c.row_factory = sqlite3.Row
            return [{**dict(r), "user_tags": json.loads(r["user_tags"])}
                    for r in c.execute("SELECT id, status, error, user_tags FROM trials ORDER BY start_time")]
    except sqlite3.OperationalError:  # no store yet
        return []


def _samples(home: Path, trial_id: str) -> int:
    with sqlite3.connect(home / "bench.db", timeout=10) as c:
        return int(c.execute("SELECT count(*) FROM samples WHERE trial_id = ? AND warmup = 0",
                             (trial_id,)).fetchone()[0])


def _wait_for(what: str, check: object, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if proc.poll() is not None:
            pytest.fail(f"bench ended before {what}: {proc.communicate()}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {timeout} s")
        time.sleep(0.1)


def _running(home: Path) -> int:
    return sum(1 for t in _trials(home) if t["status"] == "running")


def _one_line(err: str, *needles: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def _experiment(tmp_path: Path, sink: str, track: Path) -> Path:
    f = tmp_path / "nightly.yml"
    f.write_text(f"""
name: nightly
baseline: small
repetitions: 2
order: interleaved
race:
  track-path: {track}
  target-hosts: "{sink}"
variants:
  small: {{}}
  big: {{}}
study:
  indexing-task: {{small: index, big: index}}
""")
    return f


def _keys(home: Path) -> list[tuple[str, str]]:
    return sorted((str(t["user_tags"]["variant"]), str(t["user_tags"]["repetition"]))  # type: ignore[index]
                  for t in _trials(home) if "experiment" in t["user_tags"])  # type: ignore[operator]


# -- two resumes of one experiment run ------------------------------------------------------------------------------

def test_two_resumes_of_one_run_at_once_one_runs_the_other_names_it_and_fails(tmp_path, sink, track) -> None:
    home = tmp_path / "home"
    exp = _experiment(tmp_path, sink, track)
    rc, out, err = _ended(_start(home, "experiment", str(exp), "--repetitions=1"))
    assert rc == EXIT_OK, err
    assert _keys(home) == [("big", "1"), ("small", "1")]

    # Repetition 2 of both variants is missing: the first resume runs it; the second comes while it does.
    report = tmp_path / "report.md"
    first = _start(home, "experiment", str(exp), "--resume", f"--report-file={report}")
    _wait_for("race of the first resume", lambda: _running(home) > 0, first)
    second = _start(home, "experiment", str(exp), "--resume", f"--report-file={tmp_path / 'second.md'}")
    rc2, out2, err2 = _ended(second)
    rc1, out1, err1 = _ended(first)

    assert rc1 == EXIT_OK, err1
    assert "4 races planned, 2 run now, 2 done before, 0 failed" in out1
    assert rc2 == EXIT_FAILED, (out2, err2)
    _one_line(err2, "experiment nightly run ", f"is being run by pid {first.pid} on ",
              f"(bench --quiet experiment {exp} --resume --report-file={report})", "wait for it to end")
    assert "races planned" not in out2 and not (tmp_path / "second.md").exists()
    # Each planned race once: the study is judged on the repetitions that ran.
    assert _keys(home) == [("big", "1"), ("big", "2"), ("small", "1"), ("small", "2")]
    assert all(t["status"] == "complete" for t in _trials(home))
    text = report.read_text()
    assert "n = 2 per variant" in text and "Stored more than once" not in text

    # The lock died with its holder: the run can be resumed again (nothing is left to run).
    rc, out, err = _ended(_start(home, "experiment", str(exp), "--resume"))
    assert rc == EXIT_OK, err
    assert "4 races planned, 0 run now, 4 done before, 0 failed" in out


def test_the_run_lock_dies_with_its_holder(tmp_path, sink, track) -> None:
    home = tmp_path / "home"
    exp = _experiment(tmp_path, sink, track)
    first = _start(home, "experiment", str(exp), "--repetitions=1")
    _wait_for("the first race", lambda: _running(home) > 0, first)
    first.kill()  # kill -9: no handler runs, only the kernel frees the lock
    first.communicate(timeout=30)
    rc, out, err = _ended(_start(home, "experiment", str(exp), "--resume", "--repetitions=1"))
    assert rc == EXIT_OK, err
    assert "2 races planned, 2 run now, 0 done before, 0 failed" in out
    statuses = sorted(str(t["status"]) for t in _trials(home))
    assert statuses == ["complete", "complete", "interrupted"], statuses


def test_a_new_run_while_another_holds_this_seconds_run_id_takes_the_next(tmp_path, sink, track) -> None:
    # Two new runs started within one second (two timers) had one run id, so both ran every race of it. Here the
    # test holds the locks of the run ids of the coming seconds, as another `bench experiment` would.
    import fcntl

    from bench.race.experiment import new_run_id

    home = tmp_path / "home"
    exp = _experiment(tmp_path, sink, track)
    first = datetime.strptime(new_run_id(), "%Y%m%dT%H%M%S")
    held = []
    for s in range(60):
        lock = home / "locks" / f"experiment-nightly-{(first + timedelta(seconds=s)).strftime('%Y%m%dT%H%M%S')}.lock"
        lock.parent.mkdir(parents=True, exist_ok=True)
        f = open(lock, "a+")
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.append(f)
    try:
        rc, out, err = _ended(_start(home, "experiment", str(exp), "--repetitions=1"))
    finally:
        for f in held:
            f.close()
    assert rc == EXIT_OK, err
    runs = {str(t["user_tags"]["experiment-run"]) for t in _trials(home)}  # type: ignore[index]
    assert len(runs) == 1 and next(iter(runs)).endswith("b"), runs


def test_a_repetition_stored_twice_counts_once_and_is_named(tmp_path, sink, track) -> None:
    """A store written before the lock (or copied together from two machines) may hold a planned race twice: the
    study, the comparison and the history site take one, the latest to complete, and say so."""
    home = tmp_path / "home"
    exp = _experiment(tmp_path, sink, track)
    rc, _out, err = _ended(_start(home, "experiment", str(exp)))
    assert rc == EXIT_OK, err
    big1 = next(t for t in _trials(home) if t["user_tags"] == {**t["user_tags"], "variant": "big",  # type: ignore[dict-item]
                                                                  "repetition": "1"})
    copy = "f" * 32
    with sqlite3.connect(home / "bench.db") as c:  # the duplicate an old bench left: another trial, same tags
        cols = [r[1] for r in c.execute("PRAGMA table_info(trials)")]
        [end] = c.execute("SELECT end_time FROM trials WHERE id = ?", (big1["id"],)).fetchone()
        later = (datetime.fromisoformat(end) + timedelta(minutes=1)).isoformat()
        picked = ", ".join("? AS id" if col == "id" else "? AS end_time" if col == "end_time" else col for col in cols)
        c.execute(f"INSERT INTO trials ({', '.join(cols)}) SELECT {picked} FROM trials WHERE id = ?",
                  (copy, later, big1["id"]))
        c.execute("INSERT INTO summaries SELECT ?, summary FROM summaries WHERE trial_id = ?", (copy, big1["id"]))
    report = tmp_path / "report.md"
    rc, out, err = _ended(_start(home, "experiment", str(exp), "--resume", f"--report-file={report}"))
    assert rc == EXIT_OK, err
    text = report.read_text()
    assert "n = 2 per variant" in text, text
    assert "Stored more than once: variant big repetition 1 of run " in text
    assert f"trial {copy[:8]}, counts; left out: {str(big1['id'])[:8]}" in text

    site = tmp_path / "site"
    rc, out, err = _ended(_start(home, "history", "site", str(exp), f"--output={site}"))
    assert rc == EXIT_OK, err
    pages = " ".join(p.read_text() for p in site.rglob("*.html"))
    assert "Stored more than once: variant big repetition 1" in pages


# -- every command that writes the store, twice at once ----------------------------------------------------------

def _race_args(track: Path, sink: str, tag: str) -> list[str]:
    return ["race", f"--track-path={track}", f"--target-hosts={sink}", f"--user-tag=who:{tag}"]


def _complete_with_every_bulk(home: Path, trial: dict[str, object]) -> None:
    assert trial["status"] == "complete", trial
    assert _samples(home, str(trial["id"])) == DOCS // 100  # 20 bulks of 100: nothing lost, nothing doubled


def _open_stores(paths: list[str], barrier: Any, results: Any) -> None:
    from bench.trials.sqlite import TrialStore

    for path in paths:
        barrier.wait(60)
        try:
            TrialStore(Path(path)).close()
            results.put("ok")
        except Exception as e:  # noqa: BLE001 - the test reports what failed
            results.put(f"{type(e).__name__}: {e}")


def test_benches_creating_one_new_store_at_once_all_open_it(tmp_path) -> None:
    # What two races into a new home do first, in the milliseconds that matter: three processes meet at a barrier,
    # then each opens (creates, migrates) the same new bench.db; twenty times.
    ctx = mp.get_context("spawn")
    paths = [str(tmp_path / f"home{i}" / "bench.db") for i in range(20)]
    barrier, results = ctx.Barrier(3), ctx.Queue()
    procs = [ctx.Process(target=_open_stores, args=(paths, barrier, results)) for _ in range(3)]
    for p in procs:
        p.start()
    got = [results.get(timeout=120) for _ in range(3 * len(paths))]
    for p in procs:
        p.join(30)
    assert [r for r in got if r != "ok"] == []


def test_two_races_at_once_into_a_new_home_both_complete(tmp_path, sink, track) -> None:
    # A new home: both create bench.db and its schema at once.
    home = tmp_path / "home"
    procs = [_start(home, *_race_args(track, sink, who)) for who in ("a", "b")]
    for p in procs:
        rc, _out, err = _ended(p)
        assert rc == EXIT_OK, err
    trials = _trials(home)
    assert sorted(t["user_tags"]["who"] for t in trials) == ["a", "b"]  # type: ignore[index]
    for t in trials:
        _complete_with_every_bulk(home, t)


def test_a_race_while_an_experiment_runs_both_complete(tmp_path, sink, track) -> None:
    home = tmp_path / "home"
    exp = _experiment(tmp_path, sink, track)
    experiment = _start(home, "experiment", str(exp), "--repetitions=1")
    _wait_for("experiment race", lambda: _running(home) > 0, experiment)
    rc, _out, err = _ended(_start(home, *_race_args(track, sink, "alone")))
    assert rc == EXIT_OK, err
    rc, out, err = _ended(experiment)
    assert rc == EXIT_OK, err
    assert "2 races planned, 2 run now, 0 done before, 0 failed" in out
    trials = _trials(home)
    assert len(trials) == 3 and _keys(home) == [("big", "1"), ("small", "1")]
    for t in trials:
        _complete_with_every_bulk(home, t)


def test_a_history_site_built_while_an_experiment_runs_shows_the_night_in_progress(tmp_path, sink, track) -> None:
    home = tmp_path / "home"
    exp = _experiment(tmp_path, sink, track)
    assert _ended(_start(home, "experiment", str(exp), "--repetitions=1"))[0] == EXIT_OK  # last night
    experiment = _start(home, "experiment", str(exp), "--repetitions=1")
    _wait_for("tonight's race", lambda: _running(home) > 0, experiment)
    site = tmp_path / "site"
    rc, out, err = _ended(_start(home, "history", "site", str(exp), f"--output={site}"))
    assert rc == EXIT_OK, err
    assert "2 night(s)" in out and (site / "index.html").exists()
    rc, _out, err = _ended(experiment)
    assert rc == EXIT_OK, err
    # Built again once tonight is done: the site now has tonight's values (the running trial was not cached).
    rc, out, err = _ended(_start(home, "history", "site", str(exp), f"--output={site}"))
    assert rc == EXIT_OK, err
    assert "2 night(s)" in out and "0 file(s) written" not in out
    assert all(t["status"] == "complete" for t in _trials(home)) and len(_trials(home)) == 4


# -- bench store push while a race writes -------------------------------------------------------------------------

def _store_docs(url: str, index: str, query: dict[str, Any]) -> list[dict[str, Any]]:
    from bench.trials.metrics_store import config as store_config
    from bench.trials.metrics_store.http import StoreHttp

    http = StoreHttp(store_config.from_url(url, {}))
    try:
        http.request("POST", f"/{index}/_refresh?ignore_unavailable=true&allow_no_indices=true")
        _, res = http.request("POST", f"/{index}/_search?ignore_unavailable=true&allow_no_indices=true",
                              {"query": query, "size": 10_000})
    finally:
        http.close()
    return [h["_source"] for h in res["hits"]["hits"]]


@pytest.mark.parametrize("race_pushes", [True, False], ids=["race-pushes-too", "race-local-only"])
def test_store_push_while_a_race_writes_pushes_every_sample_once(tmp_path, sink, es_cluster, race_pushes) -> None:
    # 40 bulks of 50 at 5/s: eight seconds, in which `bench store push` runs over and over.
    home, url = tmp_path / "home", es_cluster.hosts[0]
    prefix = f"conc{int(race_pushes)}{os.getpid()}"
    store = [f"--metrics-store={url}", f"--metrics-store-options=index_prefix:{prefix}"]
    long_track = _write_track(tmp_path / "long", bulk_size=50, rate=5)
    race = _start(home, "race", f"--track-path={long_track}", f"--target-hosts={sink}",
                  *(store if race_pushes else []))
    _wait_for("the race's trial", lambda: _running(home) > 0, race)
    pushes = []
    deadline = time.monotonic() + 60
    while race.poll() is None and time.monotonic() < deadline:
        rc, out, err = _ended(_start(home, "store", "push", *store))
        assert rc == EXIT_OK, (out, err)
        pushes.append(out)
    rc, _out, err = _ended(race)
    assert rc == EXIT_OK, err
    [trial] = _trials(home)
    assert trial["status"] == "complete"
    assert any("still running" in out for out in pushes), pushes  # a push of a running trial says it is partial

    rc, out, err = _ended(_start(home, "store", "push", *store))  # what the race added after the last push
    assert rc == EXIT_OK, (out, err)
    tid = str(trial["id"])
    with sqlite3.connect(home / "bench.db") as c:
        local = int(c.execute("SELECT count(*) FROM samples WHERE trial_id = ?", (tid,)).fetchone()[0])
    latencies = _store_docs(url, f"{prefix}-metrics-*", {"bool": {"filter": [{"term": {"race-id": tid}},
                                                                             {"term": {"name": "latency"}}]}})
    assert local == DOCS // 50 and len(latencies) == local  # every sample once: nothing lost, nothing doubled
    [doc] = _store_docs(url, f"{prefix}-races-*", {"term": {"race-id": tid}})
    assert doc["status"] == "complete"
    rc, out, err = _ended(_start(home, "list", "trials", *store))
    assert rc == EXIT_OK, err
    assert "[local+store]" in next(line for line in out.splitlines() if line.startswith(tid[:12])), out


def test_a_push_that_read_an_older_state_and_writes_last_never_moves_the_watermark_back(tmp_path) -> None:
    # The race's pusher and `bench store push` each write how far they sent a trial; the one that read an older
    # state can write last. Moving back would send rows again (harmless: same ids) but also mark a trial that is
    # whole in the store as "rows not pushed" once its race is gone.
    from bench.trials.sqlite import PushState, TrialInfo, TrialStore, utcnow

    with TrialStore(tmp_path / "bench.db") as store:
        store.create_trial(TrialInfo(id="t" * 32, track="x", challenge="", car=[], start_time=utcnow()))
        store.set_push_state("t" * 32, "s", PushState(120, 100, 30, 30, done=True))  # the race's pusher, done
        store.set_push_state("t" * 32, "s", PushState(90, 70, 30, 30, done=False))  # bench store push, late
        assert store.push_state("t" * 32, "s") == PushState(120, 100, 30, 30, done=True)
        store.set_push_state("t" * 32, "s", PushState(150, 130, 10, 10, done=True))
        assert store.push_state("t" * 32, "s") == PushState(150, 130, 30, 30, done=True)
