"""``--driver-cpus``: the load driver's workers on the CPUs named, bench's own process on the others (while the race
runs, and back where it was after), what the trial stores of it, and its refusals in one line.

The race is a real ``bench race`` against the null sink; where each process and thread may run is read from
``/proc/<pid>/task/<tid>/status`` (``Cpus_allowed_list``), as the kernel applies it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from bench import extensions
from bench.provision.cpus import allowed_cpus, cpu_list_text, own_process_on, usable_cpus
from bench.provision.pinning import own_cpus
from bench.race.cluster_source import resolve_clusters
from bench.race.options import RaceOptions
from bench.race.race import pin_driver
from benchmarks.nullsink import running
from tests.race.test_race import write_track


def test_bench_runs_where_no_worker_and_no_cluster_is_pinned():
    eight = frozenset(range(8))
    assert own_cpus(eight, frozenset({7}), []) == frozenset(range(7))
    assert own_cpus(eight, frozenset({6, 7}), [frozenset({0, 1, 2}), None]) == frozenset({3, 4, 5})
    assert own_cpus(eight, None, [frozenset({0})]) is None  # workers not pinned: bench stays where it was
    assert own_cpus(frozenset({0, 1}), frozenset({1}), [frozenset({0})]) is None  # nothing left: anywhere


def _thread_cpus(pid: int) -> set[str]:
    """Each thread's CPUs as the kernel applies them (a thread id reads as a pid in /proc)."""
    return {cpu_list_text(allowed_cpus(int(tid)) or set()) for tid in os.listdir(f"/proc/{pid}/task")}


def test_own_process_on_moves_every_thread_and_puts_them_back():
    usable = usable_cpus()
    if len(usable) < 2:
        pytest.skip(f"one usable CPU ({cpu_list_text(usable)}): nothing to move bench's process to")
    one = frozenset({min(usable)})
    done = threading.Event()
    t = threading.Thread(target=done.wait, daemon=True)
    t.start()  # a thread that exists before: moved too
    try:
        with own_process_on(one):
            assert _thread_cpus(os.getpid()) == {cpu_list_text(one)}
        assert _thread_cpus(os.getpid()) == {cpu_list_text(usable)}
        with own_process_on(None):
            assert _thread_cpus(os.getpid()) == {cpu_list_text(usable)}
    finally:
        done.set()
        t.join()


def _race(home: Path, sink: str, *extra: str, seconds: int = 3, target: bool = True) -> subprocess.Popen[str]:
    track = write_track(home / "track", [{"operation": {"name": "q", "operation-type": "search", "index": "logs",
                                                       "body": {"query": {"match_all": {}}}},
                                         "schedule": "constant-arrival-rate", "rate": 200,
                                         "pre-allocated-clients": 4, "time-period": seconds}],
                        indices=[{"name": "logs"}])
    return subprocess.Popen([sys.executable, "-m", "bench", "--quiet", "race", f"--track-path={track}",
                             *([f"--target-hosts={sink}"] if target else []), "--report-format=json", *extra],
                            env={**os.environ, "BENCH_HOME": str(home)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_the_workers_run_on_the_driver_cpus_and_bench_on_the_others(tmp_path):
    usable = usable_cpus()
    if len(usable) < 2:
        pytest.skip(f"one usable CPU ({cpu_list_text(usable)}): the driver cannot have one of its own")
    driver = frozenset({max(usable)})
    rest = usable - driver
    with running() as sink:
        race = _race(tmp_path, sink, f"--driver-cpus={cpu_list_text(driver)}", seconds=4)
        seen: dict[str, set[str]] = {"bench": set(), "worker": set()}
        deadline = time.monotonic() + 60
        while race.poll() is None and time.monotonic() < deadline:
            proc = psutil.Process(race.pid)
            workers = [c for c in proc.children() if "resource_tracker" not in " ".join(c.cmdline())]
            try:
                if workers and allowed_cpus(workers[0].pid) == driver:  # pinned: the step is about to run
                    time.sleep(1.5)
                    seen["bench"] |= _thread_cpus(race.pid)
                    seen["worker"] |= _thread_cpus(workers[0].pid)
                    break
            except (psutil.Error, FileNotFoundError):
                pass
            time.sleep(0.05)
        out, err = race.communicate(timeout=120)
    assert race.returncode == 0, err[-2000:]
    # Every thread of each process, the results reader and the queue feeders included.
    assert seen == {"bench": {cpu_list_text(rest)}, "worker": {cpu_list_text(driver)}}, seen
    trial = json.loads(out)
    machine = trial["trial"]["machine"] if "trial" in trial else trial["machine"]
    assert machine["cpus"] == cpu_list_text(driver) and machine["bench_cpus"] == cpu_list_text(rest)
    assert machine["pinning"] == f"CPU pinning: load driver on CPU {cpu_list_text(driver)}"
    assert machine["pinning"] in err.splitlines()  # said on the terminal too, where no cluster start says it


@pytest.mark.parametrize(("flags", "line"), [
    (["--driver-cpus=1-x"], "--driver-cpus=1-x: '1-x' is not a CPU number or range (use a list like 0-1,4)"),
    (["--driver-cpus=4096"], "--driver-cpus 4096: CPU(s) 4096 are not usable here"),
    (["--driver-cpus=0", "--load-driver=other:x"],
     "--load-driver=other:x runs the workers elsewhere, but --driver-cpus=0 pins them to CPUs of this machine: drop "
     "one of them"),
])
def test_a_driver_cpu_list_bench_cannot_use_is_one_line(tmp_path, flags, line):
    with running() as sink:
        race = _race(tmp_path, sink, *flags)
        out, err = race.communicate(timeout=120)
    assert race.returncode != 0
    assert line in err and "Traceback" not in err, err


def test_driver_cpus_beside_a_topologys_own_is_one_line_before_anything_starts(tmp_path):
    topology = tmp_path / "pinned.yml"
    topology.write_text("name: pinned\nprovider: local\ndriver_cpus: 0\nclusters:\n  - name: default\n    nodes: 1\n")
    with running() as sink:
        race = _race(tmp_path, sink, "--driver-cpus=0", f"--topology={topology}", target=False)
        out, err = race.communicate(timeout=120)
    assert race.returncode != 0
    assert ("--driver-cpus=0: the load driver is already pinned to CPU 0 (the topology's driver_cpus or --pinning): "
            "drop one of them") in err and "Traceback" not in err, err
    assert not list(tmp_path.glob("**/nodes/*")), "a node was started before the refusal"


def test_the_stored_pinning_line_keeps_a_topologys_cluster_sets_beside_the_driver_cpus(tmp_path):
    topology = tmp_path / "sets.yml"
    topology.write_text("name: sets\nprovider: local\nclusters:\n  - name: leader\n    cpus: 0\n"
                        "  - name: follower\n    cpus: 0\n")
    extensions.load()  # topologies are an extension's cluster source
    clusters = resolve_clusters(RaceOptions(track="nginx", topology=topology))
    assert clusters.cluster_cpus == {"leader": {0}, "follower": {0}}
    pin_driver(clusters, RaceOptions(track="nginx", topology=topology, driver_cpus="0"))
    assert clusters.driver_cpus == {0}
    assert clusters.pinning_note == "CPU pinning: leader on CPU 0, follower on CPU 0, load driver on CPU 0"

