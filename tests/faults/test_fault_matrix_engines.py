"""The fault matrix's cells that need a real engine (docs/guide/failures.md#the-fault-matrix): nodes stopped
(SIGSTOP) rather than killed, on a cluster bench started and via --target-hosts; the port range bench picks
node ports from all taken. The assertion is tests/faults/test_fault_matrix.py's: one true line, the right trial status
and exit code, the samples taken so far kept, nothing left running (no child of bench, no node it started).

The --target-hosts cell reuses the session cluster (stopped for a few seconds, then continued); the local one
starts a node of its own, as only a node bench started can be judged by bench.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from bench.provision.distribution import distribution_url, download_archive
from bench.provision.model import ClusterInfo
from bench.results.exit_status import EXIT_ERROR_RATE, EXIT_FAILED, EXIT_UNMEASURED
from tests.cli.test_cli_errors import one_line_error
from tests.faults.test_fault_matrix import _search_track, sink  # noqa: F401 - sink is a fixture
from tests.faults.test_faults import LONG_TRACK, RaceProcess, jvms_of, no_jvm_left, start_race, stored_trial
from tests.support.ccr_pair import CcrPairInfo, connect, os_ccr_pair, plugin_path, write_ccr_track  # noqa: F401
from tests.support.ccr_pair import http as ccr_http
from tests.support.checkout import ROOT
from tests.support.esnode import default_cache
from tests.support.http_serving import files_handler, serving

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("fault_injection")]


@pytest.fixture
def race(tmp_path: Path, es_cluster: ClusterInfo) -> Iterator[list[RaceProcess]]:
    """bench races in subprocesses (which may start nodes; the session cluster also puts the distribution in the
    download cache), none outliving the test."""
    started: list[RaceProcess] = []
    yield started
    for r in started:
        r.cleanup()


def _track(folder: Path, text: str = LONG_TRACK) -> Path:
    folder.mkdir(parents=True)
    (folder / "track.json").write_text(text)
    return folder


def _children(r: RaceProcess) -> list[psutil.Process]:
    return psutil.Process(r.proc.pid).children(recursive=True)


def _none_left(procs: list[psutil.Process], timeout: float = 15) -> None:
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, [p.cmdline() for p in alive]


# -- an engine node stopped (SIGSTOP) while measuring --------------------------------------------------------------

def test_a_node_bench_started_stopped_while_measuring_fails_the_race(tmp_path: Path, race) -> None:
    # Two faults, one race (a node start is the expensive part): the distribution archive in the download cache
    # is damaged, and the node started from the good copy bench fetches again is stopped while measuring.
    cache = tmp_path / "cache"
    real = _real_zip()
    files = {ZIP_PATH: real.read_bytes(), f"{ZIP_PATH}.sha1": hashlib.sha1(real.read_bytes()).hexdigest().encode()}
    with serving(files_handler(files)) as mirror:
        template = f"http://127.0.0.1:{mirror.server_address[1]}/es/{{version}}/elasticsearch-{{version}}.zip"
        archive = _damaged_cache(cache, template)
        home = tmp_path / "home"
        r = start_race(race, home, f"--track-path={_track(tmp_path / 'track')}", "--car=defaults,512mheap",
                       f"--distribution-version={VERSION}", f"--distribution-repository={template}",
                       env={"BENCH_CACHE": str(cache)})
        trial_id = r.wait_trial()
        r.wait_for("search samples", lambda: r.samples() > 20, 180)
    assert archive.read_bytes() == files[ZIP_PATH]  # fetched again and verified before it was unpacked
    [server] = [p for p in jvms_of(trial_id) if "org.elasticsearch.bootstrap.Elasticsearch" in " ".join(p.cmdline())]
    children = _children(r)
    at_fault = r.samples()
    server.suspend()
    stopped_at = time.monotonic()

    rc = r.wait_exit(90)
    # 5 s of grace, then the requests in flight are cancelled and the node is stopped as any other (it gets
    # SIGCONT with its SIGTERM): no request timeout, no 30 s stop grace.
    took = time.monotonic() - stopped_at
    print(f"a stopped node: bench exited {took:.1f} s after the SIGSTOP")
    assert took < 25
    assert rc == EXIT_FAILED
    note, error = [line for line in r.stderr.splitlines() if line.strip()]
    assert note == (f"Note: the cached distribution {archive} does not match its sha1 checksum (it is damaged); it "
                    "was downloaded again and verified")
    one_line_error(error, "node default-0 was stopped (SIGSTOP?) for more than 5 s", "logs: ")
    trial, taken = stored_trial(home, trial_id)
    assert trial.status == "failed" and "was stopped (SIGSTOP?)" in (trial.error or "")
    assert taken >= at_fault > 0
    _none_left(children)
    no_jvm_left(trial_id)


def test_a_target_node_stopped_while_measuring_times_out_and_fails_a_threshold(tmp_path: Path, race,
                                                                                es_cluster: ClusterInfo) -> None:
    # bench cannot know a --target-hosts node is stopped: its requests time out (1 s here) and are failed
    # requests, the schedule ends on time, and --max-error-rate turns that into an exit code. The searches are
    # paced (at most 300 in the race) so that the 2 timeouts a second after the stop are over 1 % whenever the
    # samples that start it are seen: unpaced, a busy machine saw them late, after thousands of searches.
    [node] = es_cluster.nodes
    assert node.pid is not None
    server = psutil.Process(node.pid)
    # The index exists before the race: a create-index could take longer than the 1 s timeout on a busy machine.
    index = f"fault-stopped-{tmp_path.name.lower()[-8:]}"
    assert ccr_http("PUT", f"{es_cluster.hosts[0]}/{index}")[0] == 200
    track = _track(tmp_path / "track", SEARCH_ONLY.replace("{index}", index))
    home = tmp_path / "home"
    target = es_cluster.hosts[0].removeprefix("http://")
    r = start_race(race, home, f"--track-path={track}", f"--target-hosts={target}",
                   "--client-options=timeout:1", "--max-error-rate=1%")
    trial_id = r.wait_trial()
    r.wait_for("search samples", lambda: r.samples() > 20, 120)
    children = _children(r)
    at_fault = r.samples()
    with _stopped(server):
        rc = r.wait_exit(60)
    ccr_http("DELETE", f"{es_cluster.hosts[0]}/{index}")
    assert rc == EXIT_ERROR_RATE, r.stderr
    one_line_error(r.stderr, "task 'search-loop' error rate", "is over --max-error-rate 1 %")
    assert "request timed out" in r.stdout
    trial, taken = stored_trial(home, trial_id)
    assert trial.status == "complete" and taken >= at_fault > 0
    _none_left(children)


SEARCH_ONLY = """{
  "version": 2, "description": "a search loop on an index that exists", "indices": [{"name": "{index}"}],
  "schedule": [{"operation": {"name": "search-loop", "operation-type": "search", "index": "{index}",
                              "body": {"query": {"match_all": {}}}}, "clients": 2, "time-period": 15,
                "target-throughput": 20}]
}"""


@contextlib.contextmanager
def _stopped(p: psutil.Process) -> Iterator[None]:
    p.suspend()
    try:
        yield
    finally:
        p.resume()


# -- the CCR follower's node killed during a CCR race ----------------------------------------------------------------

@pytest.fixture
def lone_follower(tmp_path: Path, os_ccr_pair: CcrPairInfo, local_engines) -> Iterator[str]:  # noqa: F811
    """A follower cluster of this test's own (its node is killed), following the session pair's leader, which
    stays up for the other CCR tests."""
    plugin = plugin_path()
    assert plugin is not None  # os_ccr_pair skipped otherwise
    prov, info = local_engines.start_cluster(tmp_path / "follower", car=["defaults", "512mheap"],
                                             name="follower", engine="opensearch", version="2.19.1",
                                             plugins=[plugin], timeout=300)
    try:
        _, nodes = ccr_http("GET", f"{os_ccr_pair.leader_url}/_nodes/transport")
        connect(info.hosts[0], [n["transport"]["publish_address"] for n in nodes["nodes"].values()])
        yield info.hosts[0]
    finally:
        prov.stop_all()


def test_the_followers_node_killed_during_a_ccr_race_fails_the_sync_and_exits_4(
        tmp_path: Path, os_ccr_pair: CcrPairInfo, lone_follower: str) -> None:  # noqa: F811
    index = "fault-follower-killed"
    os_ccr_pair.fresh(index)
    track = write_ccr_track(tmp_path / "track", docs=20_000)
    pair = CcrPairInfo(os_ccr_pair.leader_url, lone_follower)
    home = tmp_path / "home"
    r = RaceProcess(home, [f"--track-path={track}", f"--target-hosts={pair.target_hosts}",
                           f"--track-params=index:{index},sync_timeout:10"])
    try:
        trial_id = r.wait_trial()
        r.wait_for("bulk samples", lambda: r.samples() > 10, 120)  # following, while the leader is indexed
        children = _children(r)
        at_fault = r.samples()
        _, nodes = ccr_http("GET", f"{lone_follower}/_nodes/process")
        [pid] = [n["process"]["id"] for n in nodes["nodes"].values()]
        psutil.Process(pid).kill()
        rc = r.wait_exit(120)
    finally:
        r.cleanup()
        os_ccr_pair.stop_replication(index)
    # The follower is no target bench started: its loss shows in the sync, which cannot succeed, and a run
    # whose sync failed measured no replication.
    assert rc == EXIT_UNMEASURED, r.stderr
    one_line_error(r.stderr, "not measured", "sync")
    trial, taken = stored_trial(home, trial_id)
    assert trial.status == "complete" and taken >= at_fault > 0
    _none_left(children)


# -- the metrics store killed while measuring ----------------------------------------------------------------------

@pytest.fixture
def store_node(tmp_path: Path, es_cluster: ClusterInfo, local_engines) -> Iterator[ClusterInfo]:
    """A metrics store of this test's own (it is killed); the session cluster stands in for the store that is
    up again later."""
    prov, info = local_engines.start_cluster(tmp_path / "store", car=["defaults", "512mheap"])
    try:
        yield info
    finally:
        prov.stop_all()


def test_the_metrics_store_killed_while_measuring_keeps_the_trial_to_push_later(
        tmp_path: Path, sink, store_node: ClusterInfo, es_cluster: ClusterInfo) -> None:  # noqa: F811
    target, _ = sink
    home = tmp_path / "home"
    store = f"--metrics-store={store_node.hosts[0]}"
    r = RaceProcess(home, [f"--track-path={_search_track(tmp_path / 'track', seconds=8)}", f"--target-hosts={target}",
                           store, "--metrics-store-options=index_prefix:killed"])
    try:
        trial_id = r.wait_trial()
        r.wait_for("samples", lambda: r.samples() > 50, 60)
        children = _children(r)
        [node] = store_node.nodes
        assert node.pid is not None
        psutil.Process(node.pid).kill()
        rc = r.wait_exit(90)
    finally:
        r.cleanup()
    # A store that is down only delays pushing: the measurement is whole in SQLite and the race says so.
    assert rc == 0, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith("note: metrics store") and "1 trial(s) not pushed yet" in lines[0]
    assert trial_id[:12] in lines[0] and "bench store push" in lines[0]
    trial, taken = stored_trial(home, trial_id)
    assert trial.status == "complete" and taken > 0
    _none_left(children)
    # Later, with a store up: every sample is pushed.
    pushed = subprocess.run([sys.executable, "-m", "bench", "store", "push", trial_id,
                             f"--metrics-store={es_cluster.hosts[0]}", "--metrics-store-options=index_prefix:killed"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "BENCH_HOME": str(home)})
    assert pushed.returncode == 0, pushed.stderr
    assert f"{trial_id[:12]}: pushed ({taken} samples" in pushed.stdout, pushed.stdout


# -- a damaged archive in the download cache ------------------------------------------------------------------------

VERSION = "8.19.21"
ZIP_PATH = f"/es/{VERSION}/elasticsearch-{VERSION}.zip"


def _real_zip() -> Path:
    """The real Maven zip in the session's download cache (there already: the session cluster runs it)."""
    saved = os.environ.get("BENCH_CACHE")
    os.environ["BENCH_CACHE"] = default_cache()
    try:
        return download_archive(distribution_url("elasticsearch", VERSION))
    finally:
        os.environ["BENCH_CACHE"] = saved if saved is not None else default_cache()


def _damaged_cache(cache: Path, template: str) -> Path:
    """``cache`` holding the real zip for ``template``'s URL, with its recorded sha1 beside it, then damaged as a
    disk error or a copy cut short would: 64 bytes in the middle flipped."""
    real = _real_zip()
    url = template.replace("{version}", VERSION)
    folder = cache / "distributions" / f"{Path(url).name}-{hashlib.sha1(url.encode()).hexdigest()[:10]}"
    folder.mkdir(parents=True)
    data = bytearray(real.read_bytes())
    (folder / f"{real.name}.sha1").write_text(hashlib.sha1(data).hexdigest() + "\n")
    middle = len(data) // 2
    data[middle:middle + 64] = bytes(b ^ 0xFF for b in data[middle:middle + 64])
    (folder / real.name).write_bytes(data)
    return folder / real.name


def test_a_damaged_cached_archive_whose_mirror_is_gone_is_refused_in_one_line(tmp_path: Path, race) -> None:
    template = "http://127.0.0.1:1/es/{version}/elasticsearch-{version}.zip"  # nothing listens on port 1
    cache = tmp_path / "cache"
    archive = _damaged_cache(cache, template)
    home = tmp_path / "home"
    r = start_race(race, home, f"--track-path={_track(tmp_path / 'track')}", f"--distribution-version={VERSION}",
                   f"--distribution-repository={template}", env={"BENCH_CACHE": str(cache)})
    assert r.wait_exit(120) == EXIT_FAILED
    one_line_error(r.stderr, f"the cached distribution {archive} does not match its sha1 checksum (it is damaged)",
                   "downloading it again failed: cannot download")
    # Never unpacked, not even in part; the damaged copy is gone, so the next run downloads a good one.
    unpacked = cache / "distributions" / "unpacked"
    assert not unpacked.exists() or not any(unpacked.iterdir())
    assert not archive.exists()
    trial, taken = stored_trial(home, r.wait_trial())
    assert trial.status == "failed" and taken == 0
    assert not jvms_of(trial.id)


# -- ports ---------------------------------------------------------------------------------------------------------

def _can_unshare() -> str | None:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return "needs root and unshare (a network namespace of the test's own)"
    return None


PORTS_TAKEN = """
ip link set lo up
sysctl -q -w net.ipv4.ip_local_port_range="61000 61001"
exec "$@"
"""

HOLD_PORTS = """
import socket, subprocess, sys
held = []
for port in (61000, 61001):
    s = socket.socket()
    s.bind(("127.0.0.1", port))
    s.listen()
    held.append(s)
sys.exit(subprocess.run(sys.argv[1:]).returncode)
"""


@pytest.mark.skipif(_can_unshare() is not None, reason=str(_can_unshare()))
def test_every_port_bench_picks_node_ports_from_taken_is_one_line(tmp_path: Path, race) -> None:
    # A network namespace of its own, where the range the kernel hands out ports from is two ports, both held:
    # nothing else on this machine notices.
    home = tmp_path / "home"
    track = _track(tmp_path / "track")
    proc = subprocess.run(["unshare", "-n", "sh", "-c", PORTS_TAKEN, "sh", sys.executable, "-c", HOLD_PORTS,
                           sys.executable, "-m", "bench", "--quiet", "race", f"--track-path={track}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "BENCH_HOME": str(home), "BENCH_CACHE": default_cache()})
    assert proc.returncode == EXIT_FAILED, proc.stderr
    one_line_error(proc.stderr, "no free port on 127.0.0.1 for the nodes' HTTP and transport ports",
                   "(net.ipv4.ip_local_port_range 61000-61001)", "--http-port")
    with sqlite3.connect(home / "bench.db") as db:
        assert db.execute("SELECT status FROM trials").fetchall() == [("failed",)]
    assert not any(str(home) in " ".join(p.cmdline()) for p in psutil.process_iter() if p.pid != os.getpid())

