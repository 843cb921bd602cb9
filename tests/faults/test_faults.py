"""Faults during real races, through the real CLI in a subprocess: wrong credentials (and that no password
leaks anywhere), a node dying mid-race, Ctrl-C and SIGTERM. Each must end with one clear line on stderr,
the right exit code, the trial stored with the right status and the samples taken so far, and no JVM left."""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from bench.trials.sqlite import TrialInfo, TrialStore
from tests.cli.test_cli_errors import one_line_error
from tests.support.checkout import ROOT
from tests.support.esnode import LocalEngines, default_cache

pytestmark = pytest.mark.timeout(420)

# A search loop long enough to be interrupted: it only ends by a fault.
LONG_TRACK = """{
  "version": 2,
  "description": "a search loop that runs for two minutes",
  "indices": [{"name": "loop"}],
  "operations": [
    {"name": "search-loop", "operation-type": "search", "index": "loop", "body": {"query": {"match_all": {}}}}
  ],
  "schedule": [
    {"operation": {"operation-type": "create-index"}},
    {"operation": "search-loop", "clients": 2, "time-period": 120}
  ]
}
"""


class RaceProcess:
    """``python -m bench race ...`` in its own process, stdout/stderr to files (no pipe can fill up)."""

    _count = 0

    def __init__(self, home: Path, args: list[str], command: str = "race", env: dict[str, str] | None = None) -> None:
        self.home = home
        RaceProcess._count += 1
        stem = home.parent / f"race-{RaceProcess._count}"
        self.out_file, self.err_file = stem.with_suffix(".out"), stem.with_suffix(".err")
        env = {**os.environ, "BENCH_HOME": str(home), "BENCH_CACHE": default_cache(), **(env or {})}
        with open(self.out_file, "wb") as out, open(self.err_file, "wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "bench", command, "--quiet", *args], env=env,
                                         cwd=ROOT, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        self.trial_id: str | None = None

    @property
    def stdout(self) -> str:
        return self.out_file.read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return self.err_file.read_text(errors="replace")

    def wait_for(self, what: str, check, timeout: float) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while not check():
            if self.proc.poll() is not None:
                pytest.fail(f"bench ended (exit {self.proc.returncode}) before {what}: {self.stderr[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"no {what} within {timeout:.0f} s; stdout: {self.stdout[-2000:]}")
            time.sleep(0.3)

    def wait_trial(self, timeout: float = 60) -> str:
        def found() -> bool:
            m = re.search(r"Trial ([0-9a-f]{32})", self.stdout)
            self.trial_id = m.group(1) if m else None
            return self.trial_id is not None

        self.wait_for("trial id", found, timeout)
        assert self.trial_id
        return self.trial_id

    def samples(self) -> int:
        try:
            with sqlite3.connect(f"file:{self.home / 'bench.db'}?mode=ro", uri=True, timeout=5) as db:
                return int(db.execute("SELECT count(*) FROM samples WHERE trial_id = ?",
                                      (self.trial_id,)).fetchone()[0])
        except sqlite3.Error:
            return 0

    def wait_measuring(self, timeout: float = 180) -> None:
        self.wait_for("samples in the store", lambda: self.samples() > 0, timeout)

    def wait_exit(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"bench did not exit within {timeout:.0f} s; stderr: {self.stderr[-2000:]}")

    def cleanup(self) -> None:
        """Whatever the test did: no bench and no JVM of this trial outlive it."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.trial_id:
            for p in jvms_of(self.trial_id):
                p.kill()


def jvms_of(trial_id: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
        except psutil.Error:
            continue
        if "java" in cmd and trial_id in cmd:
            out.append(p)
    return out


def no_jvm_left(trial_id: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while jvms_of(trial_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert jvms_of(trial_id) == [], f"JVMs of trial {trial_id} are still running"


def stored_trial(home: Path, trial_id: str) -> tuple[TrialInfo, int]:
    with TrialStore(home / "bench.db") as store:
        return store.get_trial(trial_id), len(store.samples(trial_id))


@pytest.fixture
def long_track(tmp_path: Path) -> Path:
    folder = tmp_path / "long-track"
    folder.mkdir()
    (folder / "track.json").write_text(LONG_TRACK)
    return folder


@pytest.fixture
def race(tmp_path: Path, local_engines: LocalEngines) -> Iterator[list[RaceProcess]]:
    """bench races in subprocesses, which may start their own nodes (so: local_engines), none outliving the test."""
    started: list[RaceProcess] = []
    yield started
    for r in started:
        r.cleanup()


def start_race(race: list[RaceProcess], home: Path, *args: str, env: dict[str, str] | None = None) -> RaceProcess:
    """``env``: variables set for this race besides its BENCH_HOME (e.g. its own BENCH_CACHE)."""
    r = RaceProcess(home, list(args), env=env)
    race.append(r)
    return r


# -- credentials --------------------------------------------------------------------------------------------


def test_wrong_credentials_then_right_ones_and_no_password_leaks(tmp_path: Path, race: list[RaceProcess],
                                                                 local_engines: LocalEngines) -> None:
    with local_engines.running_cluster(tmp_path / "secure", car=["defaults", "512mheap", "security"]) as info:
        assert info.username and info.password is not None
        right = info.password.get_secret_value()
        wrong = "Wr0ng-" + secrets.token_urlsafe(12)
        target = f"--target-hosts={info.hosts[0]}"  # https: the security car turns TLS on
        home = tmp_path / "bench-home-auth"
        report = tmp_path / "report.md"

        bad = start_race(race, home, "--track=nginx", "--test-mode", target,
                         f"--client-options=basic_auth_user:{info.username},basic_auth_password:{wrong},"
                         f"ca_certs:{info.tls_ca}")
        assert bad.wait_exit(120) != 0
        one_line_error(bad.stderr, "authentication failed", info.hosts[0], "basic_auth_password")
        trial, _ = stored_trial(home, bad.wait_trial())
        assert trial.status == "failed" and "authentication failed" in (trial.error or "")
        outputs = bad.stdout + bad.stderr

        good = start_race(race, home, "--track=nginx", "--test-mode", target, f"--report-file={report}",
                          "--report-format=markdown",
                          f"--client-options=basic_auth_user:{info.username},basic_auth_password:{right},"
                          f"ca_certs:{info.tls_ca}")
        assert good.wait_exit(240) == 0, good.stderr
        trial, taken = stored_trial(home, good.wait_trial())
        assert trial.status == "complete" and taken > 0
        assert trial.options["client_options"]["basic_auth_user"] == info.username
        outputs += good.stdout + good.stderr

    files = [p for p in home.rglob("*") if p.is_file()] + [report]
    assert home / "bench.db" in files and home / "logs" / "bench.log" in files and report.stat().st_size > 0
    for pw in (right, wrong):
        forms = [pw, base64.b64encode(f"{info.username}:{pw}".encode()).decode()]  # also as a Basic header
        for form in forms:
            assert form not in outputs
            for f in files:
                assert form.encode() not in f.read_bytes(), f"a password leaked into {f}"


def test_local_race_with_security_car_uses_generated_credentials(tmp_path: Path, race: list[RaceProcess]) -> None:
    home = tmp_path / "bench-home-sec"
    r = start_race(race, home, "--track=nginx", "--test-mode", "--car=defaults,512mheap,security")
    assert r.wait_exit(300) == 0, r.stderr
    trial, taken = stored_trial(home, r.wait_trial())
    assert trial.status == "complete" and taken > 0
    assert "Traceback" not in r.stderr
    no_jvm_left(trial.id)


# -- faults while measuring ---------------------------------------------------------------------------------


def test_node_dying_during_the_race_fails_it(tmp_path: Path, long_track: Path, race: list[RaceProcess]) -> None:
    home = tmp_path / "bench-home-death"
    r = start_race(race, home, f"--track-path={long_track}", "--car=defaults,512mheap")
    trial_id = r.wait_trial()
    r.wait_measuring()
    servers = [p for p in jvms_of(trial_id) if "org.elasticsearch.bootstrap.Elasticsearch" in " ".join(p.cmdline())]
    assert len(servers) == 1, servers
    servers[0].kill()
    killed_at = time.monotonic()

    rc = r.wait_exit(60)
    assert time.monotonic() - killed_at < 30
    assert rc not in (0, 130)
    line = one_line_error(r.stderr, "node default-0", "died")
    trial, taken = stored_trial(home, trial_id)
    assert trial.status == "failed" and "default-0" in (trial.error or "")
    assert taken > 0
    # The node's logs are pointed at where they are kept after the race (the node folder is deleted).
    log_dir = Path(line.split("logs: ", 1)[1].rstrip(")"))
    assert (log_dir / "console.log").is_file(), line
    no_jvm_left(trial_id)


@pytest.mark.parametrize("sig, reason", [(signal.SIGINT, "Ctrl-C"), (signal.SIGTERM, "SIGTERM")],
                         ids=["SIGINT", "SIGTERM"])
def test_signal_while_measuring_aborts_with_samples(sig: signal.Signals, reason: str, tmp_path: Path,
                                                    long_track: Path, race: list[RaceProcess]) -> None:
    home = tmp_path / "bench-home-signal"
    r = start_race(race, home, f"--track-path={long_track}", "--car=defaults,512mheap")
    trial_id = r.wait_trial()
    r.wait_measuring()
    r.proc.send_signal(sig)

    assert r.wait_exit(90) == 130
    one_line_error(r.stderr, "interrupted", trial_id, "aborted")
    trial, taken = stored_trial(home, trial_id)
    # The searches in flight were cancelled (and counted), not waited for.
    assert trial.status == "aborted" and (trial.error or "").startswith(f"interrupted ({reason}")
    assert taken > 0
    no_jvm_left(trial_id)


def test_sigterm_during_a_loadgen_run_aborts_with_samples(tmp_path: Path, es_target: str,
                                                           race: list[RaceProcess]) -> None:
    config = tmp_path / "loop.yml"
    config.write_text(f"requests:\n  - request:\n      method: GET\n      url: http://{es_target}/_cluster/health\n")
    home = tmp_path / "bench-home-loadgen"
    r = RaceProcess(home, [f"--config={config}", "-d", "120", "-c", "2"], command="loadgen")
    race.append(r)
    trial_id = r.wait_trial()
    r.wait_measuring()
    r.proc.send_signal(signal.SIGTERM)

    assert r.wait_exit(60) == 130
    one_line_error(r.stderr, "interrupted", trial_id, "aborted")
    trial, taken = stored_trial(home, trial_id)
    assert trial.status == "aborted" and (trial.error or "").startswith("interrupted (SIGTERM")
    assert taken > 0


def test_ctrl_c_while_the_node_starts(tmp_path: Path, long_track: Path, race: list[RaceProcess]) -> None:
    home = tmp_path / "bench-home-early"
    r = start_race(race, home, f"--track-path={long_track}", "--car=defaults,512mheap")
    trial_id = r.wait_trial()
    r.wait_for("a starting JVM", lambda: bool(jvms_of(trial_id)), 120)
    r.proc.send_signal(signal.SIGINT)

    assert r.wait_exit(90) == 130
    one_line_error(r.stderr, "interrupted", trial_id)
    trial, taken = stored_trial(home, trial_id)
    assert trial.status == "aborted" and trial.error == "interrupted (Ctrl-C)"
    assert taken == 0
    no_jvm_left(trial_id)


# -- kill -9 and Ctrl-C: nothing outlives bench, nothing measured is lost, nothing waits for in-flight work ----

SLEEP_SECONDS = 4.0


def sleep_track(folder: Path, duration: float, clients: int) -> Path:
    """Requests that each take ``duration``: completions come in bursts with long silences in between."""
    folder.mkdir()
    (folder / "track.json").write_text(f"""{{
  "version": 2, "description": "slow requests", "indices": [{{"name": "slow"}}],
  "operations": [{{"name": "slow", "operation-type": "sleep", "duration": {duration}}}],
  "schedule": [{{"operation": {{"operation-type": "create-index"}}}},
               {{"operation": "slow", "clients": {clients}, "time-period": 300}}]
}}
""")
    return folder


def wait_gone(procs: list[psutil.Process], timeout: float,
              since: float | None = None) -> tuple[float, list[psutil.Process]]:
    """Seconds from ``since`` (default: now) until every process is gone (zombies count as gone), and those
    still alive at the timeout."""
    start = time.monotonic() if since is None else since
    while True:
        alive = []
        for p in procs:
            try:
                if p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.NoSuchProcess:
                pass
        if not alive or time.monotonic() - start > timeout:
            return time.monotonic() - start, alive
        time.sleep(0.05)


def completions(home: Path, trial_id: str) -> dict[int, list[float]]:
    """Per client, the wall-clock completion times of the stored samples."""
    with sqlite3.connect(f"file:{home / 'bench.db'}?mode=ro", uri=True, timeout=5) as db:
        rows = db.execute("SELECT client_id, absolute_time + latency FROM samples WHERE trial_id = ? AND task = 'slow'",
                          (trial_id,)).fetchall()
    out: dict[int, list[float]] = {}
    for client, done in rows:
        out.setdefault(client, []).append(done)
    return out


def test_kill_9_kills_workers_and_nodes_and_loses_no_sample(tmp_path: Path, race: list[RaceProcess]) -> None:
    # Two workers, one client each: their samples reach bench as two batches close together, then nothing
    # for SLEEP_SECONDS. A sink that wrote only when a batch arrived held the second batch until then.
    home = tmp_path / "bench-home-kill9"
    track = sleep_track(tmp_path / "slow-track", SLEEP_SECONDS, clients=2)
    r = start_race(race, home, f"--track-path={track}", "--car=defaults,512mheap", "--worker-processes=2")
    trial_id = r.wait_trial()
    r.wait_for("two rounds of samples", lambda: r.samples() >= 4, 240)
    # Kill right inside the silence after a round: a second or two after its first sample was stored.
    before = r.samples()
    r.wait_for("the next round", lambda: r.samples() > before, 3 * SLEEP_SECONDS)
    time.sleep(SLEEP_SECONDS / 2)

    bench = psutil.Process(r.proc.pid)
    children = bench.children(recursive=True)
    workers = [p for p in children if "multiprocessing" in " ".join(p.cmdline())]
    assert len(workers) >= 3, [p.cmdline() for p in children]  # two workers and the resource tracker
    nodes = jvms_of(trial_id)
    assert nodes
    killed_wall, killed = time.time(), time.monotonic()
    r.proc.kill()
    r.proc.wait(10)

    workers_gone, alive = wait_gone(workers, 10, since=killed)
    print(f"kill -9: workers and resource tracker gone after {workers_gone:.2f} s")
    assert not alive, [p.cmdline() for p in alive]
    nodes_gone, alive = wait_gone(nodes, 30, since=killed)
    print(f"kill -9: node processes gone after {nodes_gone:.2f} s")
    assert not alive
    assert workers_gone <= 2.0 and nodes_gone <= 2.0

    done = completions(home, trial_id)
    assert sorted(done) == [0, 1], done
    for client, times in done.items():
        # The client's next request would have completed SLEEP_SECONDS after its last stored one; if that
        # moment lies before the kill, a sample was taken and lost. Allowed: about a second.
        lost_age = killed_wall - (max(times) + SLEEP_SECONDS)
        print(f"kill -9: client {client}: newest unstored sample {max(lost_age, 0):.2f} s older than the kill")
        assert lost_age <= 1.2, f"client {client} lost a sample taken {lost_age:.1f} s before the kill"

    with TrialStore(home / "bench.db") as store:  # a bench command opening the store settles the trial
        pass
    listed = subprocess.run([sys.executable, "-m", "bench", "list", "trials"], cwd=ROOT,
                            env={**os.environ, "BENCH_HOME": str(home)}, capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if trial_id[:12] in line)
    assert "interrupted" in row, listed.stdout
    trial, taken = stored_trial(home, trial_id)
    assert trial.status == "interrupted" and trial.end_time is not None
    assert taken == sum(len(t) for t in done.values()) + 1  # + the create-index sample
    assert abs(trial.end_time.timestamp() - max(max(t) for t in done.values())) < 0.01
    with TrialStore(home / "bench.db") as store:
        summary = store.summary(trial_id)
    assert summary is not None and any(t.task == "slow" for t in summary.tasks)
    wait_gone(jvms_of(trial_id), 30)  # the guards keep the logs before exiting


def test_ctrl_c_cancels_in_flight_requests_and_stores_the_trial_at_once(tmp_path: Path,
                                                                       race: list[RaceProcess]) -> None:
    # Requests that take a minute: bench used to wait for them (and record them as if they had completed).
    home = tmp_path / "bench-home-cancel"
    track = sleep_track(tmp_path / "slow-track", 60.0, clients=2)
    r = start_race(race, home, f"--track-path={track}", "--car=defaults,512mheap")
    trial_id = r.wait_trial()
    r.wait_measuring()  # the create-index sample: the two slow requests are in flight now
    time.sleep(1)

    def status() -> str | None:
        with sqlite3.connect(f"file:{home / 'bench.db'}?mode=ro", uri=True, timeout=5) as db:
            return db.execute("SELECT status FROM trials WHERE id = ?", (trial_id,)).fetchone()[0]

    r.proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    while status() == "running" and time.monotonic() - sent < 60:
        time.sleep(0.05)
    stored_after = time.monotonic() - sent
    rc = r.wait_exit(90)
    exited_after = time.monotonic() - sent
    print(f"Ctrl-C: trial stored after {stored_after:.2f} s, bench exited after {exited_after:.2f} s")
    assert rc == 130
    assert stored_after <= 2.0
    line = one_line_error(r.stderr, "interrupted", trial_id, "aborted", "2 in-flight requests cancelled")
    trial, taken = stored_trial(home, trial_id)
    assert trial.status == "aborted", line
    assert trial.error == "interrupted (Ctrl-C; 2 in-flight requests cancelled, not counted as samples)"
    assert completions(home, trial_id) == {}  # cancelled requests are not samples
    assert taken == 1  # create-index
    no_jvm_left(trial_id)


def test_ctrl_c_mid_bulk_cancels_large_bulks(tmp_path: Path, race: list[RaceProcess]) -> None:
    # Bulks of 20,000 documents take seconds each here: Ctrl-C used to wait for the ones in flight.
    home = tmp_path / "bench-home-bulk-cancel"
    r = start_race(race, home, "--track=nginx", "--challenge=index-only", "--car=defaults,512mheap",
                   "--track-params=doc_count:400000,bulk_size:20000,bulk_indexing_clients:2")
    trial_id = r.wait_trial()
    r.wait_measuring(300)  # create-index done
    # Interrupt only once the cluster itself reports a bulk in flight: before that, the clients may still be
    # reading the corpus, and a Ctrl-C then rightly cancels no request.
    address = re.compile(r"1 node\(s\) at (http://127\.0\.0\.1:\d+)")
    r.wait_for("the cluster's address", lambda: address.search(r.stdout) is not None, 60)
    host = address.search(r.stdout).group(1)  # type: ignore[union-attr]

    def bulk_in_flight() -> bool:
        try:
            with urllib.request.urlopen(f"{host}/_tasks?actions=indices:data/write/bulk&detailed=false",
                                        timeout=5) as resp:
                return any(node["tasks"] for node in json.load(resp)["nodes"].values())
        except OSError:
            return False

    r.wait_for("a bulk request in flight on the cluster", bulk_in_flight, 120)
    r.proc.send_signal(signal.SIGINT)
    sent, sent_wall = time.monotonic(), time.time()

    def status() -> str | None:
        with sqlite3.connect(f"file:{home / 'bench.db'}?mode=ro", uri=True, timeout=5) as db:
            return db.execute("SELECT status FROM trials WHERE id = ?", (trial_id,)).fetchone()[0]

    while status() == "running" and time.monotonic() - sent < 90:
        time.sleep(0.05)
    stored_after = time.monotonic() - sent
    rc = r.wait_exit(90)
    print(f"Ctrl-C mid-bulk: trial stored after {stored_after:.2f} s, bench exited after "
          f"{time.monotonic() - sent:.2f} s")
    assert rc == 130
    assert stored_after <= 2.0
    trial, _ = stored_trial(home, trial_id)
    m = re.fullmatch(r"interrupted \(Ctrl-C; (\d+) in-flight requests? cancelled, not counted as samples\)",
                     trial.error or "")
    assert trial.status == "aborted" and m, trial.error
    print(f"Ctrl-C mid-bulk: bulk requests cancelled: {m.group(1)}")
    with sqlite3.connect(f"file:{home / 'bench.db'}?mode=ro", uri=True, timeout=5) as db:
        late = db.execute("SELECT count(*) FROM samples WHERE trial_id = ? AND absolute_time + latency > ?",
                          (trial_id, sent_wall + 1.0)).fetchone()[0]
    assert late == 0  # nothing completed after the interruption took effect: the rest was cancelled
    no_jvm_left(trial_id)
