"""The fault matrix (docs/guide/failures.md#the-fault-matrix), files and stored trials: a damaged trial under the
history site, an unreadable corpus file, a trial compared while its race still runs, a truncated bench.db, and the
numbers of progress lines. Real bench processes against the null sink (benchmarks/nullsink.py); the store is
damaged the way a user's disk or hand could (a field garbled, a summary cut, samples gone, the file cut short)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from benchmarks.nullsink import running
from tests.support.checkout import ROOT

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("fault_injection")]


def _bench(home: Path, *args: str, cwd: Path = ROOT, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BENCH_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "bench", "--quiet", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env, **kwargs)  # type: ignore[call-overload]


def _no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def sink() -> Iterator[str]:
    with running() as hostport:
        yield hostport


def _search_track(folder: Path, seconds: float = 2, rate: float = 20) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "track.json").write_text(json.dumps({
        "version": 2, "description": "a paced search loop", "indices": [{"name": "i"}],
        "schedule": [{"operation": {"name": "search", "operation-type": "search", "index": "i",
                                    "body": {"query": {"match_all": {}}}},
                      "clients": 1, "time-period": seconds, "target-throughput": rate}]}))
    return folder


# -- the history site around a damaged trial ---------------------------------------------------------------------

EXP = """
name: nightly
repetitions: 1
race:
  track-path: {track}
  target-hosts: "{target}"
variants:
  paced: {{}}
study:
  indexing-task: {{paced: search}}
"""


@pytest.fixture(scope="module")
def two_nights(tmp_path_factory: pytest.TempPathFactory, sink: str) -> tuple[Path, Path, str]:
    """Two runs (nights) of a one-race experiment, real races against the null sink: (home, experiment file,
    the first night's trial id)."""
    base = tmp_path_factory.mktemp("two-nights")
    exp = base / "exp.yml"
    exp.write_text(EXP.format(track=_search_track(base / "track"), target=sink))
    for _ in range(2):
        proc = _bench(base / "home", "experiment", str(exp))
        assert proc.returncode == 0, proc.stderr + proc.stdout
    with closing(sqlite3.connect(base / "home" / "bench.db")) as c:  # closed: no -wal file left beside it
        [(first,)] = c.execute("SELECT id FROM trials ORDER BY start_time LIMIT 1").fetchall()
    return base / "home", exp, first


DAMAGE = {
    "summary not JSON": ("UPDATE summaries SET summary = '{not json' WHERE trial_id = :id", "its stored summary"),
    "summary of another shape": ("UPDATE summaries SET summary = '{\"tasks\": 5}' WHERE trial_id = :id",
                                 "its stored summary"),
    "clusters garbled": ("UPDATE trials SET clusters = 'not json' WHERE id = :id", "field clusters is not JSON"),
    "start time garbled": ("UPDATE trials SET start_time = 'yesterday' WHERE id = :id", "field start_time"),
    "status unknown": ("UPDATE trials SET status = 'weird' WHERE id = :id", "field status"),
    "samples garbled": ("UPDATE samples SET latency = 'abc' WHERE trial_id = :id; "
                        "DELETE FROM summaries WHERE trial_id = :id", "its samples"),
    "samples and summary gone": ("DELETE FROM samples WHERE trial_id = :id; DELETE FROM summaries WHERE trial_id = :id",
                                 "neither a summary nor samples are stored"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_trial_marks_its_night_and_the_site_is_built(two_nights: tuple[Path, Path, str], tmp_path: Path,
                                                               damage: str) -> None:
    home, exp, first = two_nights
    mine = tmp_path / "home"
    shutil.copytree(home, mine)
    sql, said = DAMAGE[damage]
    with closing(sqlite3.connect(mine / "bench.db")) as c, c:
        for statement in sql.split(";"):
            c.execute(statement, {"id": first})
    site = tmp_path / "site"
    proc = _bench(mine, "history", "site", str(exp), f"--output={site}")
    _no_traceback(proc)
    # Built, exit 0: a nightly job publishes the site; the damage is on its page and in one line per trial.
    assert proc.returncode == 0, proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if x.strip()]
    assert line.startswith(f"warning: damaged trial {first}") and said in line and "night " in line, line
    nights = sorted((site / "nights" / "nightly").glob("*.html"))
    assert len(nights) == 2 and (site / "index.html").is_file() and (site / "nightly.html").is_file()
    first_page = nights[0].read_text()
    assert "Damaged: trials that cannot be read" in first_page and first in first_page
    assert "Damaged" not in nights[1].read_text()
    assert "1 night(s) with damaged trials" in (site / "index.html").read_text()
    assert "damaged: 1 trial(s) cannot be read" in (site / "nightly.html").read_text()
    assert "damaged" in (mine / "logs" / "bench.log").read_text()


def test_a_damaged_trial_whose_night_cannot_be_read_is_named_on_the_index(two_nights: tuple[Path, Path, str],
                                                                         tmp_path: Path) -> None:
    home, exp, first = two_nights
    mine = tmp_path / "home"
    shutil.copytree(home, mine)
    with closing(sqlite3.connect(mine / "bench.db")) as c, c:
        c.execute("UPDATE trials SET user_tags = '{garbled' WHERE id = ?", (first,))
    site = tmp_path / "site"
    proc = _bench(mine, "history", "site", str(exp), f"--output={site}")
    _no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if x.strip()]
    assert f"trial {first}: field user_tags is not JSON" in line and "on no night" in line, line
    index = (site / "index.html").read_text()
    assert "Damaged trials on no night" in index and first in index
    assert len(list((site / "nights" / "nightly").glob("*.html"))) == 1
    # The other commands that list trials: the rest is listed, the damaged one named in one line each.
    listed = _bench(mine, "list", "trials")
    _no_traceback(listed)
    assert listed.returncode == 0 and first[:12] not in listed.stdout, listed.stdout
    assert f"warning: trial {first} cannot be read: field user_tags is not JSON" in listed.stderr, listed.stderr
    shown = _bench(mine, "show", first)
    _no_traceback(shown)
    assert shown.returncode == 1 and f"trial {first} in {mine / 'bench.db'} is damaged: field user_tags" in shown.stderr


# -- a corpus file this user may not read ------------------------------------------------------------------------

def _without_dac_override() -> None:
    """Tests run as root, who reads mode-000 files: drop the two capabilities that let it (from the bounding set,
    so the bench process exec'd next has them neither), and the read fails as it does for any other user."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.mark.parametrize("name, test_mode", [("documents.json", False), ("documents.json", True),
                                             ("documents.json.bz2", False)])
def test_an_unreadable_corpus_file_is_one_line_naming_it_and_logged(tmp_path: Path, name: str,
                                                                    test_mode: bool) -> None:
    import bz2

    folder = tmp_path / "track"
    folder.mkdir()
    docs = b"".join(json.dumps({"n": i}).encode() + b"\n" for i in range(1000))
    corpus = folder / name
    corpus.write_bytes(bz2.compress(docs) if name.endswith(".bz2") else docs)
    (folder / "track.json").write_text(json.dumps({
        "indices": [{"name": "docs"}],
        "corpora": [{"name": "docs", "documents": [{"source-file": name, "document-count": 1000}]}],
        "schedule": [{"operation": {"operation-type": "bulk", "bulk-size": 100}}]}))
    corpus.chmod(0)
    home = tmp_path / "home"
    proc = _bench(home, "race", f"--track-path={folder}", "--target-hosts=127.0.0.1:1",
                  *(["--test-mode"] if test_mode else []), preexec_fn=_without_dac_override)
    _no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if x.strip()]
    assert f"corpus file {corpus} is not readable (permission denied)" in line, line
    assert f"chmod a+r {corpus}" in line and "--corpus-dir" in line and "BENCH_HOME" not in line, line
    assert f"corpus file {corpus} is not readable" in (home / "logs" / "bench.log").read_text()


# -- comparing a trial whose race still runs ---------------------------------------------------------------------

def _trials(home: Path) -> list[tuple[str, str]]:
    try:
        with closing(sqlite3.connect(home / "bench.db", timeout=5)) as c:
            return c.execute("SELECT id, status FROM trials ORDER BY start_time").fetchall()
    except sqlite3.Error:
        return []


def test_comparing_a_trial_still_running_is_refused_with_one_line(tmp_path: Path, sink: str) -> None:
    import time

    home = tmp_path / "home"
    track = _search_track(tmp_path / "track", seconds=2)
    done = _bench(home, "race", f"--track-path={track}", f"--target-hosts={sink}", "--user-tag=group:g")
    assert done.returncode == 0, done.stderr
    [(finished, _)] = _trials(home)
    long_track = _search_track(tmp_path / "long", seconds=60)
    env = {**os.environ, "BENCH_HOME": str(home)}
    racing = subprocess.Popen([sys.executable, "-m", "bench", "--quiet", "race", f"--track-path={long_track}",
                               f"--target-hosts={sink}", "--user-tag=group:g"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not any(s == "running" for _, s in _trials(home)) and time.monotonic() < deadline:
            time.sleep(0.2)
        [running] = [i for i, s in _trials(home) if s == "running"]
        proc = _bench(home, "compare", finished, running)
        _no_traceback(proc)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        [line] = [x for x in proc.stderr.splitlines() if x.strip()]
        assert f"trial {running} is still running by bench pid {racing.pid}" in line and "wait" in line, line
        assert "did not complete" not in line
        # A group: the running trial is left out and said to be running, not "did not complete".
        proc = _bench(home, "compare", "tag:group=g", finished)
        _no_traceback(proc)
        assert "1 matching trial(s) still running" in proc.stdout and "did not complete" not in proc.stdout, \
            proc.stdout
        assert racing.poll() is None  # the race was measured on, untouched
    finally:
        racing.terminate()
        racing.wait(30)


# -- a bench.db cut short ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("cut", ["mid-page", "header only"])
def test_a_truncated_store_is_offered_recovery_as_a_damaged_page_is(two_nights: tuple[Path, Path, str],
                                                                     tmp_path: Path, cut: str) -> None:
    home, _exp, first = two_nights
    mine = tmp_path / "home"
    shutil.copytree(home, mine)
    db = mine / "bench.db"
    assert not (mine / "bench.db-wal").exists()  # every row is in the file itself
    size = db.stat().st_size
    with open(db, "r+b") as f:
        f.truncate(size // 2 + 17 if cut == "mid-page" else 100)  # 100: the file header and nothing else
    for args in (["list", "trials"], ["show", first], ["compare", first, first]):
        proc = _bench(mine, *args)
        _no_traceback(proc)
        assert proc.returncode == 1, (args, proc.stderr)
        [line] = [x for x in proc.stderr.splitlines() if x.strip()]
        assert f"trial store {db} is damaged" in line and "database disk image is malformed" in line, line
        assert f"sqlite3 {db} .recover | sqlite3 recovered.db" in line and "restore it from a backup" in line, line


# -- numbers in progress lines -----------------------------------------------------------------------------------

def test_progress_lines_print_counts_as_summaries_do(tmp_path: Path, sink: str) -> None:
    """Every request fails (the sink's health has no status), paced at 200/s for 11 s: the progress line at 10 s, the
    task's done line, the summary's note and the exit line all print the thousands as 2,200, never 2200."""
    import re

    folder = tmp_path / "track"
    folder.mkdir()
    (folder / "track.json").write_text(json.dumps({
        "version": 2, "description": "failing health checks", "indices": [{"name": "i"}],
        "schedule": [{"operation": {"name": "health", "operation-type": "cluster-health",
                                    "request-params": {"wait_for_status": "green"}},
                      "clients": 1, "time-period": 11, "target-throughput": 200}]}))
    env = {**os.environ, "BENCH_HOME": str(tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-m", "bench", "race", f"--track-path={folder}", f"--target-hosts={sink}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    _no_traceback(proc)
    out = proc.stdout + proc.stderr
    progress = [line for line in out.splitlines() if re.match(r"\s*health: \d+ s, ", line)]
    done = [line for line in out.splitlines() if line.startswith("done health: ")]
    assert progress and done, out
    for line in [*progress, *done]:
        assert re.search(r"\d,\d{3} errors", line), line
    assert re.search(r"\d,\d{3} of \d,\d{3} requests failed", out), out
    unformatted = re.findall(r"\b\d{4,} (?:errors|requests|ops|docs|of \d)|\(\d{4,} of|\b\d{4,}×", out)
    assert not unformatted, unformatted
