"""The fault matrix (docs/guide/failures.md#the-fault-matrix): each process bench relies on killed or stopped
while it measures, each file it reads corrupted, each resource exhausted. The assertion is the same everywhere:
one true line, the right trial status and exit code, the samples taken so far kept, nothing left running.

Everything here runs against the null sink (a real HTTP server on 127.0.0.1) or fails before a cluster is
needed, so the matrix costs about a minute and a half in the unit tier; engine nodes killed, stopped or dying
are in tests/faults/test_faults.py, a full or read-only home in tests/faults/test_storage_faults.py, a damaged bench.db and
truncated corpora without a download URL in tests/faults/test_trial_faults.py.
"""

from __future__ import annotations

import bz2
import gzip
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import psutil
import pytest
import zstandard

from bench.results.exit_status import EXIT_BAD_INPUT, EXIT_ERROR_RATE, EXIT_FAILED, EXIT_OK
from benchmarks.nullsink import free_port, start_in_background
from tests.support.checkout import ROOT
from tests.support.http_serving import serving

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("fault_injection")]


@dataclass
class Ended:
    rc: int
    out: str
    err: str
    seconds: float
    status: str
    error: str | None
    samples: int
    samples_at_fault: int


def _search_track(folder: Path, clients: int = 4, seconds: float = 6, query_bytes: int = 0) -> Path:
    """``query_bytes``: a match query of that many bytes (each request then allocates as much), else match_all."""
    folder.mkdir(parents=True, exist_ok=True)
    query = {"match": {"f": "x" * query_bytes}} if query_bytes else {"match_all": {}}
    (folder / "track.json").write_text(json.dumps({
        "version": 2, "description": "a paced search loop", "indices": [{"name": "i"}],
        "schedule": [{"operation": {"name": "search", "operation-type": "search", "index": "i",
                                    "body": {"query": query}},
                      "clients": clients, "time-period": seconds, "target-throughput": 200}]}))
    return folder


def _samples(home: Path) -> int:
    try:
        with sqlite3.connect(home / "bench.db", timeout=5) as c:
            return int(c.execute("SELECT count(*) FROM samples").fetchone()[0])
    except sqlite3.Error:
        return 0


def _trial(home: Path) -> tuple[str, str | None]:
    with sqlite3.connect(home / "bench.db", timeout=5) as c:
        [(status, error)] = c.execute("SELECT status, error FROM trials").fetchall()
    return status, error


def _workers(bench: psutil.Process) -> list[psutil.Process]:
    return [p for p in bench.children(recursive=True) if "spawn_main" in " ".join(p.cmdline())]


def _gone(procs: list[psutil.Process], timeout: float = 10) -> list[psutil.Process]:
    """The processes still running after ``timeout`` s (zombies count as gone)."""
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def race_with_fault(tmp_path: Path, target: str, fault: Callable[[psutil.Process], None] | None, *args: str,
                    preexec: Callable[[], None] | None = None, clients: int = 4, seconds: float = 6,
                    query_bytes: int = 0, env: dict[str, str] | None = None) -> Ended:
    """``bench race`` in its own process against ``target``; ``fault`` runs once 50 samples are stored (with
    the bench process); returns how it ended, after checking nothing it started is left running."""
    home = tmp_path / "home"
    track = _search_track(tmp_path / "track", clients, seconds, query_bytes=query_bytes)
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "bench", "--quiet", "race", f"--track-path={track}",
                             f"--target-hosts={target}", *args], cwd=ROOT,
                            env={**os.environ, "BENCH_HOME": str(home), **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=preexec)
    bench = psutil.Process(proc.pid)
    children: list[psutil.Process] = []
    at_fault = 0
    if fault is not None:
        while _samples(home) < 50 and proc.poll() is None and time.monotonic() - started < 60:
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()
        children = bench.children(recursive=True)
        at_fault = _samples(home)
        fault(bench)
    try:
        out, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"bench did not end within 90 s of the fault: {err}")
    seconds = time.monotonic() - started
    assert not _gone(children), "bench left processes running"
    assert "Traceback" not in err, err
    status, error = _trial(home)
    return Ended(proc.returncode, out, err, seconds, status, error, _samples(home), at_fault)


def _one_line(err: str, *needles: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


@pytest.fixture
def sink() -> Iterator[tuple[str, list[psutil.Process]]]:
    """A null sink of this test's own (tests kill and stop it)."""
    port = free_port()
    procs = start_in_background(port)
    yield f"127.0.0.1:{port}", [psutil.Process(p.pid) for p in procs]
    for p in procs:
        try:
            os.kill(p.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        p.kill()
        p.join(5)


# -- processes, while measuring -----------------------------------------------------------------------------------

def test_target_killed_while_measuring_is_complete_with_errors_and_fails_a_threshold(tmp_path, sink) -> None:
    target, procs = sink
    ended = race_with_fault(tmp_path, target, lambda _: [p.kill() for p in procs], "--max-error-rate=5%")
    # With --target-hosts bench cannot tell a dead cluster from refused requests: the requests fail, counted as
    # such; the threshold turns that into an exit code a scheduler sees.
    assert ended.status == "complete" and ended.rc == EXIT_ERROR_RATE
    _one_line(ended.err, "task 'search' error rate", "is over --max-error-rate 5 %")
    assert "connection error" in ended.out and ended.samples > ended.samples_at_fault


def test_target_stopped_while_measuring_times_out_on_time(tmp_path, sink) -> None:
    target, procs = sink
    # 10 s at 200 searches/s: the 4 timeouts a second after the stop are over 1 % while it comes in the first
    # 6.6 s, however late a busy machine sees the samples that start it.
    ended = race_with_fault(tmp_path, target, lambda _: [os.kill(p.pid, signal.SIGSTOP) for p in procs],
                            "--client-options=timeout:1", "--max-error-rate=1%", seconds=10)
    assert ended.status == "complete" and ended.rc == EXIT_ERROR_RATE
    assert "request timed out" in ended.out
    # Each client waits one timeout at most past the schedule's end: no hang on a frozen cluster.
    assert ended.seconds < 30, ended.seconds
    assert ended.samples >= ended.samples_at_fault


def test_worker_killed_while_measuring_fails_the_race_with_its_samples(tmp_path, sink) -> None:
    target, _ = sink
    ended = race_with_fault(tmp_path, target, lambda bench: _workers(bench)[0].kill())
    assert ended.rc == EXIT_FAILED and ended.status == "failed"
    _one_line(ended.err, "load driver worker bench-worker-0 died (exit code -9)")
    assert ended.samples >= ended.samples_at_fault > 0


def test_worker_stopped_while_measuring_fails_the_race_instead_of_hanging(tmp_path, sink) -> None:
    target, _ = sink
    ended = race_with_fault(tmp_path, target, lambda bench: os.kill(_workers(bench)[0].pid, signal.SIGSTOP))
    assert ended.rc == EXIT_FAILED and ended.status == "failed"
    _one_line(ended.err, "load driver worker (pid", "was stopped (SIGSTOP?) for more than 5 s")
    assert ended.samples >= ended.samples_at_fault > 0 and ended.seconds < 45


# -- resources ----------------------------------------------------------------------------------------------------

def test_too_few_file_descriptors_for_the_clients_is_one_line_before_any_request(tmp_path, sink) -> None:
    target, _ = sink
    ended = race_with_fault(tmp_path, target, None, clients=100,
                            preexec=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (60, 60)))
    assert ended.rc == EXIT_FAILED and ended.status == "failed" and ended.samples == 0
    _one_line(ended.err, "bench-worker-0 runs 100 client(s)", "may open 60 (ulimit -n)")


def test_a_file_size_limit_reached_while_storing_samples_is_one_line(tmp_path, sink) -> None:
    target, _ = sink
    limit = 300_000
    # A long schedule: the race ends at the limit, however slowly a loaded machine fills the store.
    ended = race_with_fault(tmp_path, target, None, seconds=120,
                            preexec=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
    assert ended.rc == EXIT_FAILED
    _one_line(ended.err, "bench.db", f"at most {limit:,} bytes (ulimit -f)")
    assert ended.samples > 0  # what was stored before the limit stays readable
    if ended.status == "running":
        # The limit can leave no room to store the final status; the next bench that opens the store finds the
        # trial's process gone and marks it interrupted, ending at its last sample.
        listed = subprocess.run([sys.executable, "-m", "bench", "list", "trials"], cwd=ROOT, capture_output=True,
                                text=True, timeout=120, env={**os.environ, "BENCH_HOME": str(tmp_path / "home")})
        assert listed.returncode == 0 and "interrupted" in listed.stdout, listed.stdout + listed.stderr
    else:
        assert ended.status == "failed"


def test_a_worker_out_of_memory_fails_the_race_in_one_line_naming_memory(tmp_path, sink) -> None:
    target, _ = sink

    def limit_worker_memory(bench: psutil.Process) -> None:
        # Below what the worker has mapped already: its next allocation of fresh memory fails (2 MB queries
        # need some). Only the worker is limited, as a container or ulimit -v on a driver host would.
        worker = _workers(bench)[0]
        limit = worker.memory_info().vms - 150 * 2**20
        worker.rlimit(psutil.RLIMIT_AS, (limit, limit))

    # A fixed mmap threshold (glibc's is raised after each free otherwise, and freed heap reused): every 2 MB
    # query is a fresh mapping, so the limit is met by the next request, not by chance.
    ended = race_with_fault(tmp_path, target, limit_worker_memory, query_bytes=2_000_000,
                            env={"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=131072"})
    # Out of memory is the load driver's failure, never the cluster's: no failed requests, a failed race.
    assert ended.rc == EXIT_FAILED and ended.status == "failed"
    _one_line(ended.err, "load driver worker bench-worker-0 ran out of memory (MemoryError)", "(ulimit -v)")
    assert ended.samples >= ended.samples_at_fault > 0
    with sqlite3.connect(tmp_path / "home" / "bench.db") as c:
        assert c.execute("SELECT count(*) FROM samples WHERE error_type LIKE '%MemoryError%'").fetchone()[0] == 0


def test_bench_itself_out_of_memory_is_one_line(tmp_path) -> None:
    limit = 250 * 2**20  # enough to start Python, not to import the race's modules
    track = _search_track(tmp_path / "track")
    # Whether the limit is met compiling bench's modules (CPython's parser then says SyntaxError) or running them
    # (MemoryError) depends on what is compiled already: the line is the same.
    proc = subprocess.run([sys.executable, "-m", "bench", "--quiet", "race", f"--track-path={track}",
                           "--target-hosts=127.0.0.1:1"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "BENCH_HOME": str(tmp_path / "home")},
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
    assert proc.returncode == EXIT_FAILED, proc.stderr
    _one_line(proc.stderr, "bench ran out of memory (MemoryError)", "limited to 250 MB (ulimit -v)")


def test_bench_unable_to_start_a_thread_is_one_line(tmp_path, sink) -> None:
    # Enough to import everything and run, not to give the race's threads their stacks: about 5 MB above what
    # bench's imports take (VmPeak ~260 MB on 2026-11-28, bench race against a refused port); with more the limit is
    # met later, in a queue's feeder thread (see docs/guide/failures.md).
    target, _ = sink
    limit = 265 * 2**20
    ended = race_with_fault(tmp_path, target, None,
                            preexec=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
    assert ended.rc == EXIT_FAILED
    # Where the limit is met (a thread's stack, or reading a worker's message) depends on what the interpreter
    # mapped first: either way one line naming bench's own limit, never a traceback or a wait without end.
    assert "could not start a thread" in ended.err or "bench ran out of memory (MemoryError)" in ended.err, ended.err
    _one_line(ended.err, "limited to 265 MB (ulimit -v)")


class _WebPage(BaseHTTPRequestHandler):
    """A web server that is not an engine: every request answered 200 with an HTML page."""

    def _page(self) -> None:
        body = b"<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body>It works.</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _page

    def log_message(self, *args: object) -> None:
        pass


def test_target_hosts_on_a_web_server_that_is_not_an_engine_is_one_line(tmp_path) -> None:
    with serving(_WebPage) as web:
        port = web.server_address[1]
        proc = _bench(tmp_path, "race", f"--track-path={_search_track(tmp_path / 'track')}",
                      f"--target-hosts=127.0.0.1:{port}")
    assert proc.returncode == EXIT_FAILED, proc.stderr
    _one_line(proc.stderr, f"http://127.0.0.1:{port} does not look like Elasticsearch/OpenSearch",
              "answered HTTP 200 with an HTML page titled 'Welcome to nginx!'", "--target-hosts")
    assert _trial(tmp_path / "home")[0] == "failed" and _samples(tmp_path / "home") == 0


# -- files bench reads --------------------------------------------------------------------------------------------

def _bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", "--quiet", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "BENCH_HOME": str(tmp_path / "home"), "BENCH_CACHE": str(tmp_path / "cache")})


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _flipped(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes(b ^ 0xFF for b in data[middle:middle + 64]) + data[middle + 64:]


COMPRESS = {".bz2": bz2.compress, ".gz": gzip.compress, ".zst": lambda b: zstandard.ZstdCompressor().compress(b)}


@pytest.mark.parametrize("damage", [_truncated, _flipped], ids=["truncated", "bytes-flipped"])
@pytest.mark.parametrize("suffix", list(COMPRESS))
def test_a_damaged_corpus_of_each_compression_is_one_line_naming_it(suffix, damage, tmp_path) -> None:
    docs = b"".join(json.dumps({"n": i, "pad": f"{i:064x}"}).encode() + b"\n" for i in range(20_000))
    folder = tmp_path / "track"
    folder.mkdir()
    name = f"documents.json{suffix}"
    (folder / name).write_bytes(damage(COMPRESS[suffix](docs)))
    (folder / "track.json").write_text(json.dumps({
        "indices": [{"name": "docs"}],
        "corpora": [{"name": "docs", "documents": [{"source-file": name, "document-count": 20_000}]}],
        "schedule": [{"operation": {"operation-type": "bulk", "bulk-size": 100}}]}))
    proc = _bench(tmp_path, "race", f"--track-path={folder}", "--target-hosts=127.0.0.1:1")
    assert proc.returncode != EXIT_OK and "Traceback" not in proc.stderr
    _one_line(proc.stderr, str(folder / name), "damaged")


BROKEN_YAML = "name: [unclosed\n  - x: {\n"


@pytest.mark.parametrize("what", ["track.json", "track-params", "client-options", "telemetry-profile", "experiment",
                                  "bench.ini"])
def test_a_corrupt_config_file_is_one_line_naming_it(what: str, tmp_path) -> None:
    track = _search_track(tmp_path / "track")
    bad = tmp_path / "bad.json"
    bad.write_text('{"truncated": ')
    base = ["race", f"--track-path={track}", "--target-hosts=127.0.0.1:1"]
    if what == "track.json":
        (track / "track.json").write_text('{"version": 2, "schedule": [')
        args, named = base, str(track / "track.json")
    elif what == "track-params":
        args, named = [*base, f"--track-params={bad}"], str(bad)
    elif what == "client-options":
        args, named = [*base, f"--client-options={bad}"], str(bad)
    elif what == "telemetry-profile":
        profile = tmp_path / "profile.yml"
        profile.write_text(BROKEN_YAML)
        args, named = [*base, f"--telemetry-profile={profile}"], str(profile)
    elif what == "experiment":
        exp = tmp_path / "nightly.yml"
        exp.write_text(BROKEN_YAML)
        args, named = ["experiment", str(exp)], str(exp)
    else:
        ini = tmp_path / "home" / "bench.ini"
        ini.parent.mkdir(parents=True)
        ini.write_text("[reporting\ndatastore.type = elasticsearch\n")
        args, named = ["race", "--track=geopoint", "--test-mode", "--target-hosts=127.0.0.1:1"], str(ini)
    proc = _bench(tmp_path, *args)
    assert proc.returncode == EXIT_BAD_INPUT, proc.stderr
    _one_line(proc.stderr, named)


def test_a_store_that_is_not_a_database_is_one_line(tmp_path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "bench.db").write_bytes(os.urandom(8192))
    for args in (["list", "trials"], ["race", "--track=geopoint", "--test-mode", "--target-hosts=127.0.0.1:1"]):
        proc = _bench(tmp_path, *args)
        assert proc.returncode == EXIT_FAILED, proc.stderr
        _one_line(proc.stderr, str(home / "bench.db"), "not a database", "move the file away")
