"""A BENCH_HOME that is read-only or fills up, for real: a small tmpfs mounted by the test (as root, as the
tests run here and in CI). Each ends with one clear line naming the path and what to do, a non-zero exit,
no traceback (logging included), no node folder or JVM left, and what was stored before still readable."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_cli_errors import one_line_error
from tests.faults.test_faults import LONG_TRACK, RaceProcess, jvms_of, no_jvm_left
from tests.support.checkout import ROOT
from tests.support.esnode import default_cache

pytestmark = [pytest.mark.timeout(420),
              pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")]

NODES = Path("/var/tmp/bench-nodes")


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def bench(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BENCH_HOME": str(home), "BENCH_CACHE": default_cache()}
    return subprocess.run([sys.executable, "-m", "bench", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def no_traceback(err: str) -> None:
    assert "Traceback" not in err and "Logging error" not in err, err


@pytest.mark.parametrize("populated", [False, True], ids=["empty", "with-store-and-logs"])
def test_read_only_bench_home_is_one_line(tmpfs: Path, populated: bool) -> None:
    if populated:  # a home bench used before, then made read-only (e.g. a read-only mount)
        assert bench(tmpfs, "list", "trials").returncode == 0
        assert (tmpfs / "bench.db").exists() and (tmpfs / "logs" / "bench.log").exists()
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    for args in (["list", "trials"], ["race", "--track=nginx", "--test-mode"], ["show", "abc"],
                 ["stop", "abc"]):
        proc = bench(tmpfs, *args)
        no_traceback(proc.stderr)
        assert proc.returncode != 0, args
        one_line_error(proc.stderr, str(tmpfs), "read-only", "set BENCH_HOME")
    # A home below a read-only folder cannot even be created.
    proc = bench(tmpfs / "sub", "list", "trials")
    assert proc.returncode != 0
    one_line_error(proc.stderr, str(tmpfs / "sub"), "read-only")


@pytest.mark.usefixtures("local_engines")  # the race starts its own node
def test_bench_home_filling_mid_race_stops_the_race_and_cleans_up(tmpfs: Path, tmp_path: Path) -> None:
    track = tmp_path / "loop-track"
    track.mkdir()
    (track / "track.json").write_text(LONG_TRACK)
    home = tmpfs  # RaceProcess writes its stdout/stderr files beside the home, outside the tmpfs
    r = RaceProcess(home, [f"--track-path={track}", "--car=defaults,512mheap"])
    try:
        trial_id = r.wait_trial()
        r.wait_measuring()
        r.wait_for("a few hundred samples", lambda: r.samples() >= 300, 120)
        stored_before = r.samples()
        # Another process fills the disk: bench must notice on its next write. (On a fast machine bench's own
        # writes may have filled it already: then even creating the filler fails, and the disk is full all the same.)
        try:
            with open(home / "filler", "wb") as f:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
        except OSError:
            pass
        started = time.monotonic()
        code = r.wait_exit(120)
        print(f"disk full: bench exited {time.monotonic() - started:.1f} s after the disk filled")
    finally:
        r.cleanup()
    no_traceback(r.stderr)
    assert code != 0
    one_line_error(r.stderr, "no space left on device", str(home), "free space")
    # Logs that could not be kept are named, not silently lost.
    assert "was not kept" in r.stdout or (home / "trials" / trial_id / "logs").exists()
    assert not (NODES / trial_id).exists(), list((NODES / trial_id).rglob("*"))[:5]
    no_jvm_left(trial_id)
    assert jvms_of(trial_id) == []
    with sqlite3.connect(f"file:{home / 'bench.db'}?mode=ro", uri=True) as db:
        stored = db.execute("SELECT count(*) FROM samples WHERE trial_id = ?", (trial_id,)).fetchone()[0]
    assert stored >= stored_before
    # With space again the trial and its samples are there to read.
    (home / "filler").unlink(missing_ok=True)
    listed = bench(home, "list", "trials")
    assert listed.returncode == 0 and trial_id[:12] in listed.stdout, listed.stderr
