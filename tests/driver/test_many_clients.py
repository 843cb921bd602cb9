"""Many clients on one machine: a file-descriptor limit too low for them is one line naming it (the worker's check
before the step, or failing that the connections it opens before the common start), never failed requests."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks.nullsink import free_port, start_in_background
from tests.race.test_race import write_track


@pytest.fixture
def sink():
    port = free_port()
    procs = start_in_background(port)
    yield f"127.0.0.1:{port}"
    for p in procs:
        p.terminate()
        p.join(10)


def _search_track(tmp_path, clients: int):
    return write_track(tmp_path / "t", [
        {"operation": {"name": "q", "operation-type": "search", "index": "logs", "body": {"query": {"match_all": {}}}},
         "clients": clients, "time-period": 1, "warmup-time-period": 0}], indices=[{"name": "logs"}])


def test_too_few_file_descriptors_for_the_clients_is_one_line_naming_the_limit(tmp_path, sink):
    track = _search_track(tmp_path, 600)
    # soft and hard limit 256 for bench and its worker: 600 connections cannot be opened
    done = subprocess.run(["bash", "-c", f'ulimit -n 256 && ulimit -Hn 256 && exec "$0" -m bench --quiet race '
                                         f'--track-path={track} --target-hosts={sink} --worker-processes=1',
                           sys.executable], capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "BENCH_HOME": str(tmp_path / "home")})
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if "ulimit -n" in line]
    assert len(lines) == 1 and "600" in lines[0] and "256" in lines[0], done.stderr
