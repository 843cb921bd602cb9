"""The load driver on a real two-node Ray cluster on 127.0.0.1 (``--ray-address``): races into the null sink
and a real Elasticsearch, corpora prepared by the second node in its own BENCH_HOME (or not obtainable there),
an unreachable cluster, a node killed mid-race, Ctrl-C (also while a node downloads)."""

from __future__ import annotations

import bz2
import contextlib
import http.server
import json
import re
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

pytest.importorskip("ray", reason="the Ray load driver needs bench[ray]")

from bench.cli import main
from bench.trials.sqlite import TrialStore
from benchmarks.nullsink import free_port, running
from tests.cli.test_cli_errors import one_line_error
from tests.driver.test_step_corpora import counting_server
from tests.faults.test_faults import RaceProcess, start_race, stored_trial
from tests.race.test_race import only_trial, write_track
from tests.race.test_race import race as race_in_process
from tests.support.http_serving import serving
from tests.support.ray_cluster import RayTestCluster

pytestmark = pytest.mark.timeout(180)

DOCS = 20000


@pytest.fixture(scope="module")
def ray_cluster(ray_nodes: Callable[..., RayTestCluster]) -> Iterator[RayTestCluster]:
    # A short folder: Ray's unix sockets live under it, and their paths may not exceed 107 bytes.
    folder = Path(tempfile.mkdtemp(prefix="bray-"))
    cluster = ray_nodes(folder, nodes=2)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def races() -> Iterator[list[RaceProcess]]:
    """bench races in subprocesses, none of which outlives the test."""
    started: list[RaceProcess] = []
    yield started
    for r in started:
        r.cleanup()


@pytest.fixture(scope="module")
def sink() -> Iterator[str]:
    with running() as hostport:
        yield hostport


def bulk_track(root: Path, *, index: str = "ray", clients: int = 4, looped: bool = False,
               time_period: float | None = None, throughput: float | None = None) -> Path:
    data = root / "docs.json"
    root.mkdir(parents=True, exist_ok=True)
    data.write_text("".join(json.dumps({"n": i, "msg": f"document {i}"}) + "\n" for i in range(DOCS)))
    task: dict = {"operation": {"name": "load", "operation-type": "bulk", "bulk-size": 500, "corpora": "c",
                                **({"looped": True} if looped else {})}, "clients": clients}
    if time_period is not None:
        task["time-period"] = time_period
    if throughput is not None:
        task["target-throughput"] = throughput
    return write_track(root / "track", [
        {"operation": {"operation-type": "delete-index"}},
        {"operation": {"operation-type": "create-index"}},
        task,
    ], indices=[{"name": index}],
       corpora=[{"name": "c", "documents": [{"source-file": str(data), "document-count": DOCS,
                                             "target-index": index}]}])


def placement_line(home: Path) -> str:
    lines = [line for line in (home / "logs" / "bench.log").read_text().splitlines() if "Ray load driver at" in line]
    assert lines, "the Ray pool logged no placement"
    return lines[-1]


def test_two_node_race_into_the_null_sink(tmp_path: Path, bench_home: Path, ray_cluster: RayTestCluster,
                                          sink: str) -> None:
    # By default one worker per CPU of each node: one on each of the two nodes, clients dealt round-robin.
    track = bulk_track(tmp_path, looped=True, time_period=3)
    assert race_in_process(f"--track-path={track}", f"--target-hosts={sink}",
                           f"--ray-address={ray_cluster.address}") == 0
    with TrialStore() as store:
        trial = only_trial(store)
        df = store.samples(trial.id)
        tel = store.telemetry(trial.id)
    assert trial.status == "complete" and trial.options["load_driver"] == f"ray:{ray_cluster.address}"
    # Stored with the trial per node: its workers, its clock offset (one machine: a few ms at most), the
    # driver's CPU per worker.
    ld = tel[tel["device"] == "load-driver"]
    assert ld["node"].nunique() == 2
    by = {m: ld[ld["metric"] == m]["value"] for m in ("workers", "clock_offset_ms", "cpu_cores_per_worker")}
    assert list(by["workers"]) == [1.0, 1.0]
    assert len(by["clock_offset_ms"]) == 2 and (by["clock_offset_ms"].abs() < 50).all()
    assert len(by["cpu_cores_per_worker"]) == 2 and (by["cpu_cores_per_worker"] > 0).all()
    bulks = df[df["task"] == "load"]
    assert bulks["success"].all() and len(bulks) > 20
    assert set(bulks["client_id"]) == {0, 1, 2, 3}
    line = placement_line(bench_home)
    assert len(re.findall(r"Ray node \S+ \(\w+\): 1 worker\(s\)", line)) == 2, line
    assert "clock offsets" in line
    # The driver's CPU per node, read from the workers themselves (host telemetry sees only this machine's).
    cpu = [x for x in (bench_home / "logs" / "bench.log").read_text().splitlines() if "CPU per worker" in x]
    assert cpu and len(re.findall(r"Ray node \S+ \(\w+\): \d+ %", cpu[-1])) == 2, cpu
    # A node whose workers used more than 80 % of a core each is a note of the stored summary, and only then.
    with TrialStore() as store:
        summary = store.summary(trial.id)
    assert summary is not None
    notes = summary.notes
    # The nodes are a section of the stored summary, so reports list them (one set of rows per node).
    section = summary.section("load-driver")
    assert section and sorted(n["workers"] for n in section["nodes"]) == [1, 1]
    assert {n["node"] for n in section["nodes"]} == set(ld["node"])
    rows = [r for r in summary.rows() if r.metric == "Driver CPU per worker (Ray node, 100% = 1 core)"]
    assert len(rows) == 2 and all(r.value > 0 for r in rows)
    cpu_rows = ld[ld["metric"] == "cpu_cores_per_worker"]
    for node, share in zip(cpu_rows["node"], cpu_rows["value"], strict=True):
        flagged = [n for n in notes if n.startswith(f"Load driver: {node} drove with")]
        assert len(flagged) == (1 if share > 0.8 else 0), (node, share, notes)
    print(f"driver CPU per worker: {dict(zip(cpu_rows['node'], cpu_rows['value'], strict=True))}; notes: {notes}")
    # Both nodes read the corpus file at its absolute path: the second node prepared nothing of its own.
    assert (ld["metric"] == "corpus_prepare_s").sum() <= 1


def test_ray_race_indexes_the_whole_corpus_into_elasticsearch(tmp_path: Path, ray_cluster: RayTestCluster,
                                                              es_target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Three workers round-robin over two nodes; each client sends its slice of the corpus once: the index must
    # hold every document exactly once, and the samples must count them all. The cluster is found as Ray's own
    # tools find it: "auto" reads $RAY_ADDRESS.
    import urllib.request

    monkeypatch.setenv("RAY_ADDRESS", ray_cluster.address)
    track = bulk_track(tmp_path, index="ray-es", clients=3)
    assert race_in_process(f"--track-path={track}", f"--target-hosts={es_target}", "--ray-address=auto",
                           "--worker-processes=3") == 0
    with TrialStore() as store:
        df = store.samples(only_trial(store).id)
    bulks = df[df["task"] == "load"]
    assert bulks["success"].all() and int(bulks["units"].sum()) == DOCS
    host = es_target.split(",")[0]
    urllib.request.urlopen(f"http://{host}/ray-es/_refresh", data=b"").read()
    count = json.loads(urllib.request.urlopen(f"http://{host}/ray-es/_count").read())["count"]
    assert count == DOCS


def corpus_bytes() -> bytes:
    return "".join(json.dumps({"n": i, "msg": f"document {i}"}) + "\n" for i in range(DOCS)).encode()


def corpus_track(root: Path, *, corpus: str, source_file: str, base_url: str | None, index: str = "ray",
                 clients: int = 4, bulk_only: bool = False) -> Path:
    """A bulk track whose corpus file is named relative to its sources (data cache, track folder, base-url)."""
    task = {"operation": {"name": "load", "operation-type": "bulk", "bulk-size": 500, "corpora": corpus},
            "clients": clients}
    admin = [] if bulk_only else [{"operation": {"operation-type": "delete-index"}},
                                  {"operation": {"operation-type": "create-index"}}]
    spec: dict = {"name": corpus, "documents": [{"source-file": source_file, "document-count": DOCS,
                                                 "target-index": index}]}
    if base_url:
        spec["base-url"] = base_url
    return write_track(root / "track", [*admin, task], indices=[{"name": index}], corpora=[spec])


def test_a_node_elsewhere_prepares_the_corpus_in_its_own_data_cache(tmp_path: Path, bench_home: Path,
                                                                   ray_cluster: RayTestCluster, es_target: str,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # The corpus comes from its base-url, compressed. bench prepares it in its data cache (its BENCH_HOME here);
    # the second Ray node, whose BENCH_HOME is another folder, downloads and decompresses its own copy before the
    # common start; its two workers fetch it once (the set's lock); the head's workers read bench's copy.
    import urllib.request

    monkeypatch.delenv("BENCH_CACHE")
    # Every node counts as busy here, so the note's way from the pool to the stored summary and `bench show` is
    # seen (the null-sink race checks the real threshold against the stored figures).
    monkeypatch.setattr("bench.ray.busy_nodes.BUSY_SHARE", 0.0)
    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "docs.json.bz2").write_bytes(bz2.compress(corpus_bytes()))
    head, other = ray_cluster.nodes[0], ray_cluster.nodes[1]
    with counting_server(remote) as (url, asked):
        track = corpus_track(tmp_path, corpus="served", source_file="docs.json.bz2", base_url=url, index="ray-served")
        assert race_in_process(f"--track-path={track}", f"--target-hosts={es_target}",
                               f"--ray-address={ray_cluster.address}", "--worker-processes=4") == 0
    assert asked == ["/docs.json.bz2", "/docs.json.bz2"]  # bench's download, then the second node's
    assert (bench_home / "data" / "served" / "docs.json").read_bytes() == corpus_bytes()
    assert (other.home / "data" / "served" / "docs.json").read_bytes() == corpus_bytes()
    assert not (head.home / "data" / "served").exists()
    with TrialStore() as store:
        trial = only_trial(store)
        df = store.samples(trial.id)
        tel = store.telemetry(trial.id)
    bulks = df[df["task"] == "load"]
    assert trial.status == "complete" and bulks["success"].all() and int(bulks["units"].sum()) == DOCS
    host = es_target.split(",")[0]
    urllib.request.urlopen(f"http://{host}/ray-served/_refresh", data=b"").read()
    assert json.loads(urllib.request.urlopen(f"http://{host}/ray-served/_count").read())["count"] == DOCS
    # How long the node took, stored per node (only the one that prepared) and logged per worker.
    prep = tel[(tel["device"] == "load-driver") & (tel["metric"] == "corpus_prepare_s")]
    assert len(prep) == 1 and 0 < prep["value"].iloc[0] < 60, prep
    logged = [x for x in (bench_home / "logs" / "bench.log").read_text().splitlines()
              if "prepared the corpus files of step 2" in x]
    assert len(logged) == 2 and all(prep["node"].iloc[0] in x for x in logged), logged
    cpu = tel[(tel["device"] == "load-driver") & (tel["metric"] == "cpu_cores_per_worker")]
    with TrialStore() as store:
        notes = [n for n in store.summary(trial.id).notes if n.startswith("Load driver: Ray node")]  # type: ignore[union-attr]
    assert len(notes) == len(cpu) == 2 and all(any(n.startswith(f"Load driver: {node} drove") for n in notes)
                                               for node in cpu["node"]), notes
    capsys.readouterr()
    assert main(["show", trial.id]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert all(" ".join(n.split()) in shown for n in notes), shown[-1500:]
    print(f"{prep['node'].iloc[0]} prepared its corpus in {prep['value'].iloc[0]:.2f} s")


def test_a_node_that_cannot_get_the_corpus_fails_the_race_naming_file_and_node(tmp_path: Path,
                                                                               races: list[RaceProcess],
                                                                               ray_cluster: RayTestCluster,
                                                                               sink: str) -> None:
    # bench's copy is in its own data cache only, and the corpus has no base-url: the second node looks in its
    # data cache and beside the track, finds nothing, and the race fails before the common start.
    home = tmp_path / "home"
    (home / "data" / "only-here").mkdir(parents=True)
    (home / "data" / "only-here" / "docs.json").write_bytes(corpus_bytes())
    track = corpus_track(tmp_path, corpus="only-here", source_file="docs.json", base_url=None, bulk_only=True)
    r = start_race(races, home, f"--track-path={track}", f"--target-hosts={sink}",
                   f"--ray-address={ray_cluster.address}", "--worker-processes=2", env={"BENCH_CACHE": str(home)})
    assert r.wait_exit(90) not in (0, 130), r.stderr
    other = ray_cluster.nodes[1]
    line = one_line_error(r.stderr, "corpus 'only-here' file docs.json is not available (it has no base-url)",
                          str(other.home / "data" / "only-here" / "docs.json"))
    assert re.search(r"\(on Ray node \S+ \(\w{8}\)\)$", line), line
    trial, taken = stored_trial(home, r.wait_trial())
    assert trial.status == "failed" and (trial.error or "") in line
    assert taken == 0  # nothing measured, nothing reported
    with TrialStore(home / "bench.db") as store:
        summary = store.summary(trial.id)
    assert summary is None or summary.tasks == [], summary  # no task, so no throughput, in the stored summary


class _Trickle(http.server.BaseHTTPRequestHandler):
    """Answers a corpus file with its first bytes, then nothing until released: a download that takes long."""

    release = threading.Event()
    asked: list[str] = []

    def do_GET(self) -> None:
        self.asked.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", str(10 << 20))
        self.end_headers()
        self.wfile.write(b"BZh9")
        self.wfile.flush()
        self.release.wait(60)

    def log_message(self, *a) -> None:  # type: ignore[no-untyped-def]
        pass


def test_ctrl_c_while_a_node_downloads_stops_the_race(tmp_path: Path, races: list[RaceProcess],
                                                      ray_cluster: RayTestCluster, sink: str) -> None:
    home = tmp_path / "home"
    (home / "data" / "slow").mkdir(parents=True)
    (home / "data" / "slow" / "docs.json").write_bytes(corpus_bytes())  # bench's copy: nothing to download
    _Trickle.release.clear()
    _Trickle.asked.clear()
    with contextlib.ExitStack() as stop:
        server = stop.enter_context(serving(_Trickle))
        stop.callback(_Trickle.release.set)  # first: the handler waiting on it must end for the server to stop
        track = corpus_track(tmp_path, corpus="slow", source_file="docs.json.bz2", bulk_only=True,
                             base_url=f"http://127.0.0.1:{server.server_address[1]}")
        r = start_race(races, home, f"--track-path={track}", f"--target-hosts={sink}",
                       f"--ray-address={ray_cluster.address}", "--worker-processes=2", env={"BENCH_CACHE": str(home)})
        trial_id = r.wait_trial()
        r.wait_for("the second node's download", lambda: bool(_Trickle.asked), 60)
        time.sleep(0.5)
        r.proc.send_signal(signal.SIGINT)
        interrupted = time.monotonic()
        assert r.wait_exit(30) == 130, r.stderr
        took = time.monotonic() - interrupted
    trial, taken = stored_trial(home, trial_id)
    assert trial.status == "aborted" and (trial.error or "").startswith("interrupted (Ctrl-C"), trial.error
    assert taken == 0
    other = ray_cluster.nodes[1]
    assert _Trickle.asked == ["/docs.json.bz2"]
    assert not (other.home / "data" / "slow" / "docs.json.bz2").exists()  # never a partial file under its name
    assert not (other.home / "data" / "slow" / "docs.json").exists()
    assert took < 10, took
    print(f"bench exited {took:.1f} s after Ctrl-C while a node was downloading")


def test_unreachable_ray_address_is_one_line(tmp_path: Path, races: list[RaceProcess], sink: str) -> None:
    track = bulk_track(tmp_path, time_period=1)
    address = f"127.0.0.1:{free_port()}"
    r = start_race(races, tmp_path / "home", f"--track-path={track}", f"--target-hosts={sink}",
                   f"--ray-address={address}")
    started = time.monotonic()
    assert r.wait_exit(60) not in (0, 130)
    assert time.monotonic() - started < 30
    one_line_error(r.stderr, "unreachable", address)


def test_driver_hosts_outside_the_ray_cluster_are_one_line(tmp_path: Path, races: list[RaceProcess],
                                                            ray_cluster: RayTestCluster, sink: str) -> None:
    track = bulk_track(tmp_path, time_period=1)
    r = start_race(races, tmp_path / "home", f"--track-path={track}", f"--target-hosts={sink}",
                   f"--ray-address={ray_cluster.address}", "--load-driver-hosts=10.255.255.1")
    assert r.wait_exit(60) not in (0, 130)
    one_line_error(r.stderr, "--load-driver-hosts", "no Ray node at 10.255.255.1", "its nodes are at")


def test_ctrl_c_stops_every_nodes_clients_within_two_seconds(tmp_path: Path, races: list[RaceProcess],
                                                             ray_cluster: RayTestCluster, sink: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # Started by Rally's flag alone: --load-driver-hosts names this machine (where both Ray nodes run, at the
    # address Ray gives them) and means the Ray cluster $RAY_ADDRESS names.
    import ray

    monkeypatch.setenv("RAY_ADDRESS", ray_cluster.address)
    track = bulk_track(tmp_path, looped=True, time_period=120, throughput=40)
    home = tmp_path / "home"
    r = start_race(races, home, f"--track-path={track}", f"--target-hosts={sink}",
                   f"--load-driver-hosts={ray.util.get_node_ip_address()}")
    trial_id = r.wait_trial()
    r.wait_measuring(60)
    time.sleep(1)
    interrupted_at = time.time()
    r.proc.send_signal(signal.SIGINT)
    assert r.wait_exit(30) == 130
    trial, taken = stored_trial(home, trial_id)
    assert trial.status == "aborted" and (trial.error or "").startswith("interrupted (Ctrl-C")
    assert taken > 0
    with TrialStore(home / "bench.db") as store:
        df = store.samples(trial_id)
    # No request of any node's clients was sent later than 2 s after the interruption (wall clock: one machine).
    assert df["absolute_time"].max() < interrupted_at + 2.0


def test_a_lost_node_fails_the_race_naming_it_with_the_samples_so_far(tmp_path: Path, races: list[RaceProcess],
                                                                      ray_cluster: RayTestCluster,
                                                                      sink: str) -> None:
    # A third node for this test alone, whose raylet is killed mid-race: three workers, one on each node.
    doomed = ray_cluster.add_node()
    try:
        track = bulk_track(tmp_path, looped=True, time_period=120, throughput=30, clients=3)
        home = tmp_path / "home"
        r = start_race(races, home, f"--track-path={track}", f"--target-hosts={sink}",
                       f"--ray-address={ray_cluster.address}", "--worker-processes=3")
        trial_id = r.wait_trial()
        r.wait_measuring(60)
        time.sleep(1)
        doomed.raylet().kill()
        killed_at = time.monotonic()
        rc = r.wait_exit(60)
        detected = time.monotonic() - killed_at
        assert rc not in (0, 130), r.stderr
        trial, taken = stored_trial(home, trial_id)
        assert trial.status == "failed", trial
        assert re.search(r"Ray node \S+ \(\w{8}\)", trial.error or ""), trial.error
        assert taken > 0
        print(f"race ended {detected:.1f} s after the raylet was killed: {trial.error}; stderr: {r.stderr.strip()}")
    finally:
        ray_cluster.remove_node(doomed)


def _worker_actors(cluster: RayTestCluster) -> list[int]:
    pids = []
    for node in cluster.nodes:
        for p in node.processes():
            try:
                if "RayWorker" in " ".join(p.cmdline()):
                    pids.append(p.pid)
            except psutil.NoSuchProcess:
                continue
    return pids


def test_worker_actors_die_with_a_killed_bench(tmp_path: Path, races: list[RaceProcess],
                                               ray_cluster: RayTestCluster, sink: str) -> None:
    # kill -9 leaves bench no chance to close its pool: Ray must end the actors of its dead session itself.
    track = bulk_track(tmp_path, looped=True, time_period=120, throughput=40)
    r = start_race(races, tmp_path / "home", f"--track-path={track}", f"--target-hosts={sink}",
                   f"--ray-address={ray_cluster.address}")
    r.wait_trial()
    r.wait_measuring(60)
    assert len(_worker_actors(ray_cluster)) >= 2  # one per node (an earlier race's may still be exiting)
    r.proc.kill()
    r.proc.wait(10)
    deadline = time.monotonic() + 30
    while _worker_actors(ray_cluster) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _worker_actors(ray_cluster) == []


def test_a_race_failing_before_its_schedule_leaves_the_ray_cluster(tmp_path: Path, ray_cluster: RayTestCluster) -> None:
    # The target is unreachable: the race fails before the coordinator takes the pool, which must still be closed
    # (bench's Ray session ended), or the next race of this process would find a stale connection.
    import ray

    track = bulk_track(tmp_path, time_period=1)
    assert race_in_process(f"--track-path={track}", f"--target-hosts=127.0.0.1:{free_port()}",
                           f"--ray-address={ray_cluster.address}") != 0
    assert not ray.is_initialized()


@pytest.mark.cluster
def test_loadgen_drives_from_the_ray_cluster(tmp_path: Path, ray_cluster: RayTestCluster, es_target: str) -> None:
    # bench loadgen with --ray-address: the clients are dealt to a worker actor on each node; the documents the
    # requests carry all land (warmup + the 12-request limit, 10 documents each), and both nodes are on record.
    import shutil
    import urllib.request

    from bench.cli import main

    host = es_target.split(",")[0]

    def count() -> int:  # the session's cluster is shared: other tests may have written test-* already
        urllib.request.urlopen(urllib.request.Request(f"http://{host}/test-*/_refresh", method="POST"),
                               timeout=60).read()
        return int(json.loads(urllib.request.urlopen(f"http://{host}/test-*/_count").read())["count"])

    before = count()
    config = tmp_path / "loadgen.yml"
    shutil.copy(Path(__file__).parents[1] / "data" / "loadgen" / "gateway-docs-runtime-variables.yml", config)
    assert main(["--quiet", "loadgen", "--config", str(config), "-c", "4", "-d", "20", "-l", "12",
                 f"--target-hosts={es_target}", f"--ray-address={ray_cluster.address}"]) == 0
    with TrialStore() as store:
        trial = store.list_trials(1)[0]
        df = store.samples(trial.id)
        tel = store.telemetry(trial.id)
    assert trial.status == "complete" and trial.options["load_driver"] == f"ray:{ray_cluster.address}"
    assert len(df) == 12 and set(df["status"]) == {200}
    workers = tel[(tel["device"] == "load-driver") & (tel["metric"] == "workers")]
    assert list(workers["value"]) == [1.0, 1.0] and workers["node"].nunique() == 2
    assert count() - before == 130
    # Other tests of the session count test-* documents of their own: leave none behind.
    names = urllib.request.urlopen(f"http://{host}/_cat/indices/test-*?h=index").read().decode().split()
    for name in names:
        urllib.request.urlopen(urllib.request.Request(f"http://{host}/{name}", method="DELETE"), timeout=60).read()
