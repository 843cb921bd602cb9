"""Fault-matrix cells of CCR and of the stores bench writes to (docs/guide/failures.md#the-fault-matrix): a follower
paused by a user during a CCR race (the real OpenSearch pair, and Elasticsearch's paused answers from the recorded
fixtures), the password of a secured cluster a ``--keep-cluster`` race keeps, and a metrics store (a secured
Elasticsearch node) whose credentials are wrong. Each ends in one true line, the right exit code and no secret
printed.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import ssl
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from bench.ccr.engine import PAUSED_ERROR, CcrError, ElasticsearchCcr, FollowerPaused, NoStats
from bench.ccr.section import build_section
from bench.ccr.sync import wait_for_sync
from bench.http.client import ClusterTarget, RawHttp
from bench.provision.model import ClusterInfo
from bench.results.exit_status import EXIT_FAILED, EXIT_UNMEASURED
from bench.results.summary import Summary, TaskSummary
from bench.telemetry.ccr_stats import CcrStats
from bench.telemetry.device import TelemetryContext
from bench.telemetry.runner import SAMPLE_METRIC
from bench.telemetry.section import with_telemetry
from bench.trials.metrics_store.config import ENV_PASSWORD
from bench.trials.sqlite import TrialStore
from tests.cli.test_cli_errors import one_line_error
from tests.faults.test_faults import RaceProcess, jvms_of, no_jvm_left
from tests.support.ccr_pair import CcrPairInfo, os_ccr_pair  # noqa: F401 - the session fixture
from tests.support.ccr_pair import http as ccr_http
from tests.support.checkout import ROOT
from tests.support.esnode import default_cache
from tests.support.fixture_server import FixtureServer, fixture
from tests.trials.test_metrics_store import secure_es_store  # noqa: F401 - a secured Elasticsearch node as the store

pytestmark = [pytest.mark.timeout(600), pytest.mark.usefixtures("fault_injection")]

ES = "elasticsearch-ccr"


# -- a follower paused by a user -------------------------------------------------------------------------------------

# The follower is paused with the real pause API right after it starts following, then the leader is indexed for
# ~10 s (paced) and the followers are waited for with the default timeout of 600 s, as a user's race would.
PAUSED_TRACK = """{
  "version": 2,
  "description": "a follower paused by a user while its leader is indexed",
  "indices": [{"name": "{{ index }}", "body": "index.json"}],
  "corpora": [{"name": "c", "documents": [{"source-file": "docs.json", "document-count": 20000,
                                           "target-index": "{{ index }}"}]}],
  "schedule": [
    {"operation": {"name": "create-leader", "operation-type": "create-index", "cluster": "leader"}},
    {"operation": {"name": "leader-health", "operation-type": "cluster-health", "cluster": "leader",
                   "index": "{{ index }}", "request-params": {"wait_for_status": "yellow"},
                   "retry-until-success": true}},
    {"operation": {"name": "follow", "operation-type": "ccr-follow", "cluster": "follower",
                   "remote-cluster": "leader", "leader-index": "{{ index }}", "index": "{{ index }}"}},
    {"operation": {"name": "pause", "operation-type": "ccr-pause", "cluster": "follower", "index": "{{ index }}"}},
    {"name": "index", "clients": 1, "target-throughput": 20,
     "operation": {"name": "bulk", "operation-type": "bulk", "cluster": "leader", "bulk-size": 100}},
    {"operation": {"name": "sync", "operation-type": "wait-for-followers-to-sync", "cluster": "follower",
                   "indices": ["{{ index }}"]}}
  ]
}
"""


def _paused_track(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "docs.json").write_text("".join(json.dumps({"n": i, "message": f"GET /item/{i}"}) + "\n"
                                            for i in range(20000)))
    (root / "index.json").write_text(json.dumps({
        "settings": {"number_of_shards": 2, "number_of_replicas": 0},
        "mappings": {"dynamic": "strict", "properties": {"n": {"type": "long"}, "message": {"type": "text"}}}}))
    (root / "track.json").write_text(PAUSED_TRACK)
    return root


def test_a_follower_paused_by_a_user_ends_the_ccr_race_at_once_and_exits_4(
        tmp_path: Path, os_ccr_pair: CcrPairInfo) -> None:  # noqa: F811
    index = "fault-follower-paused"
    os_ccr_pair.fresh(index)
    home = tmp_path / "home"
    r = RaceProcess(home, [f"--track-path={_paused_track(tmp_path / 'track')}",
                           f"--target-hosts={os_ccr_pair.target_hosts}", f"--track-params=index:{index}"])
    try:
        trial_id = r.wait_trial()
        rc = r.wait_exit(300)
        status, st = ccr_http("GET", f"{os_ccr_pair.follower_url}/_plugins/_replication/{index}/_status")
    finally:
        r.cleanup()
        os_ccr_pair.stop_replication(index)
    assert status == 200 and st["status"] == "PAUSED" and st["reason"] == "User initiated", st
    # A paused follower replicates nothing until resumed: no measurement of replication, said in one line.
    assert rc == EXIT_UNMEASURED, r.stderr
    line = one_line_error(r.stderr, "not measured", "sync", "paused by a user")
    assert "telemetry" not in line, line
    with TrialStore(home / "bench.db") as store:
        trial, summary = store.get_trial(trial_id), store.summary(trial_id)
    assert trial.status == "complete" and summary is not None
    [sync] = [t for t in summary.tasks if t.task == "sync"]
    # ... at once, not after the 600 s default timeout
    assert sync.failed_requests == 1 and sync.errors_by_type == {PAUSED_ERROR: 1}, sync
    assert sync.duration_s < 10, sync.duration_s
    [message] = [e.message for e in sync.error_messages]
    assert f"follower {index} on cluster follower was paused by a user (paused (User initiated))" in message
    assert "resume it (POST _plugins/_replication/" in message
    # The warnings agree: the follower was paused -- neither failing telemetry nor errors of its samples.
    [catch_up] = summary.section("ccr")["catch_up"]
    assert catch_up["paused"] == 1 and catch_up["service_time_ms"] == {}
    [follower] = [f for f in summary.section("ccr")["followers"] if f["index"] == index]
    assert follower["paused_samples"] >= 1, follower
    notes = "\n".join(summary.notes)
    if follower["lag_samples"] == 0:  # no sample fell between the follow and the pause (the usual case)
        assert f"no lag for follower/{index}: the follower was paused in all of its" in notes, notes
    assert "telemetry off or failing" not in notes and "errors reported" not in notes, notes
    assert not any(n.startswith("Telemetry ccr-stats") for n in summary.notes), notes


def _es_http(srv: FixtureServer) -> RawHttp:
    return RawHttp(ClusterTarget(name="follower", hosts=[srv.host]), connections=2)


def test_an_elasticsearch_follower_paused_by_a_user_ends_the_sync_at_once() -> None:
    # Elasticsearch drops a paused follower from _ccr/stats; _ccr/info says "paused" (the API reference's shapes).
    with FixtureServer() as srv:
        srv.add("GET", "/follower_index/_ccr/stats", {"indices": []})
        srv.add("GET", "/follower_index/_ccr/info", fixture(ES, "follow_info_paused.json"))

        async def wait() -> float:
            async with _es_http(srv) as http:
                t0 = time.monotonic()
                with pytest.raises(FollowerPaused) as e:  # (bounded: a wait that does not end at once fails)
                    await asyncio.wait_for(wait_for_sync(ElasticsearchCcr(http, "follower"), ["follower_index"],
                                                         timeout=600), 30)
                assert isinstance(e.value, CcrError) and e.value.status == 200
                assert "follower follower_index on cluster follower was paused by a user" in str(e.value)
                assert "POST follower_index/_ccr/resume_follow" in str(e.value)
                return time.monotonic() - t0

        assert asyncio.run(wait()) < 5


def test_an_elasticsearch_follower_that_vanished_unpaused_is_still_waited_for() -> None:
    # Absent from _ccr/stats and not paused (unfollowed, not following yet): the wait goes on to its timeout.
    with FixtureServer() as srv:
        srv.add("GET", "/follower_index/_ccr/stats", {"indices": []})
        srv.add("GET", "/follower_index/_ccr/info", {"follower_indices": []})

        async def wait() -> str:
            async with _es_http(srv) as http:
                p = await ElasticsearchCcr(http, "follower").progress("follower_index")
                assert isinstance(p, NoStats) and not p.paused
                with pytest.raises(CcrError) as e:
                    await wait_for_sync(ElasticsearchCcr(http, "follower"), ["follower_index"], timeout=0.3,
                                        poll_interval=0.05)
                return str(e.value)

        message = asyncio.run(wait())
    assert "did not catch up within 0.3 s" in message and "paused by a user" not in message


def test_the_ccr_stats_of_an_elasticsearch_follower_paused_throughout_agree_with_the_ccr_section() -> None:
    # ccr-stats samples of a follower paused from the first sample: a paused row each, no error, so the summary
    # says the follower was paused -- not "N errors reported" beside "telemetry off or failing".
    with FixtureServer() as srv:
        srv.add("GET", "/_ccr/stats", fixture(ES, "ccr_stats_paused_follower_vanished.json"))
        srv.add("GET", "/_all/_ccr/info", fixture(ES, "follow_info_paused.json"))
        target = ClusterTarget(name="follower", hosts=[srv.host])
        ctx = TelemetryContext(targets={"follower": target}, clusters={"follower": {"engine": "elasticsearch"}})
        device = CcrStats({"ccr-stats-clusters": ["follower"]}, ctx)

        async def samples() -> list:
            await device.open()
            try:
                return [await device.sample("follower", float(ts)) for ts in (0, 5, 10)]
            finally:
                await device.close()

        taken = asyncio.run(samples())
    assert all(not s.errors for s in taken), [s.errors for s in taken]
    rows = [r for s in taken for r in s.rows]
    assert [r.value for r in rows if r.node == "follower_index" and r.metric == "paused"] == [1.0, 1.0, 1.0]
    assert not [r for r in rows if r.node == "follower_index" and r.metric in ("lag_ops", "missing")]
    df = pd.DataFrame([{"timestamp": r.timestamp, "cluster": r.cluster, "node": r.node, "device": r.device,
                        "metric": r.metric, "value": r.value, "raw": None} for r in rows]
                      + [{"timestamp": float(ts), "cluster": "follower", "node": "", "device": "ccr-stats",
                          "metric": SAMPLE_METRIC, "value": 1.0, "raw": None} for ts in (0, 5, 10)])
    sync = TaskSummary(task="sync", operation_type="wait-for-followers-to-sync", unit="ops", requests=1,
                       failed_requests=1, errors_by_type={PAUSED_ERROR: 1}, error_rate=1.0)
    summary = with_telemetry(Summary(tasks=[sync]), df)
    assert summary is not None

    class Follow:
        follower_cluster, follower_index, leader_cluster, leader_index = ("follower", "follower_index", "leader",
                                                                          "leader_index")

    class Plan:
        tasks: list = []
        follows = [Follow()]

    section = build_section(Plan(), summary, {})
    notes = [*summary.notes, *section.notes]
    assert "CCR: no lag for follower/follower_index: the follower was paused in all of its 3 ccr-stats samples." \
        in notes, notes
    assert not any("telemetry off or failing" in n or "errors reported" in n or "problem" in n for n in notes), notes
    assert any("the lag of follower follower/follower_index is unknown in all of its 3 samples (the follower was "
               "paused)" in u for u in section.unmeasured), section.unmeasured


# -- the password of a secured cluster a --keep-cluster race keeps ---------------------------------------------------

def _bench(home: Path, *args: str, timeout: float = 420) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "BENCH_HOME": str(home), "BENCH_CACHE": default_cache()})


def _get(url: str, auth: str | None = None, ca: Path | None = None) -> int:
    headers = {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()} if auth else {}
    context = ssl.create_default_context(cafile=str(ca)) if ca is not None else None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30, context=context) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


@pytest.mark.usefixtures("local_engines")
def test_a_kept_secured_cluster_names_the_file_holding_its_password_never_the_password(tmp_path: Path) -> None:
    home = tmp_path / "home"
    raced = _bench(home, "race", "--track=nginx", "--test-mode", "--quiet", "--car=defaults,512mheap,security",
                   "--keep-cluster")
    m = re.search(r"Trial ([0-9a-f]{32})", raced.stdout)
    assert m, raced.stdout[-2000:] + raced.stderr[-2000:]
    trial_id = m.group(1)
    try:
        assert raced.returncode == 0, raced.stderr[-2000:]
        [line] = [x for x in raced.stdout.splitlines() if x.startswith("kept node")]
        found = re.search(r"running at (https://\S+) .*security on: sign in as (\S+) with the password in (\S+) "
                          r"\(readable by you only; curl --cacert (\S+) ", line)
        assert found, line
        url, user, path, ca = found.group(1), found.group(2), Path(found.group(3)), Path(found.group(4))
        assert f"stop it with: bench stop {trial_id}" in line
        # The file holds user:password, for this user only; with it the kept cluster is usable, without it not.
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.stat().st_uid == os.geteuid()
        credentials = path.read_text().strip()
        assert credentials.startswith(f"{user}:") and len(credentials) > len(user) + 20
        password = credentials.split(":", 1)[1]
        assert _get(f"{url}/_cluster/health", ca=ca) == 401
        assert _get(f"{url}/_cluster/health", credentials, ca) == 200
        # ... and the password itself is nowhere bench writes or prints.
        assert password not in raced.stdout + raced.stderr
        for f in home.rglob("*"):
            if f.is_file() and f != path:  # (as a non-root user, the kept node's folder is under the home)
                assert password.encode() not in f.read_bytes(), f"the password leaked into {f}"
    finally:
        stopped = _bench(home, "stop", trial_id)
        for p in jvms_of(trial_id):
            p.kill()
    assert stopped.returncode == 0, stopped.stderr
    no_jvm_left(trial_id, timeout=30)
    assert not path.exists()  # gone with the node's folder


# -- a metrics store whose credentials are wrong ----------------------------------------------------------------------

def test_a_metrics_store_refusing_the_password_fails_the_race_before_any_node_starts(
        tmp_path: Path, secure_es_store: ClusterInfo) -> None:  # noqa: F811
    user, right = secure_es_store.username, secure_es_store.password.get_secret_value()  # type: ignore[union-attr]
    host = secure_es_store.hosts[0].removeprefix("http://")
    wrong = "not-the-password-" + right[:4]
    home = tmp_path / "home"
    t0 = time.monotonic()
    # A race that would start a node of its own (no --target-hosts): it must not get that far.
    raced = subprocess.run([sys.executable, "-m", "bench", "race", "--track=nginx", "--test-mode", "--quiet",
                            "--car=defaults,512mheap", f"--metrics-store=http://{user}@{host}",
                            "--metrics-store-options=index_prefix:wrongpw-early"], cwd=ROOT, capture_output=True,
                           text=True, timeout=300, env={**os.environ, "BENCH_HOME": str(home),
                                                        "BENCH_CACHE": default_cache(), ENV_PASSWORD: wrong})
    took = time.monotonic() - t0
    assert raced.returncode == EXIT_FAILED, raced.stderr
    line = one_line_error(raced.stderr, f"metrics store http://{user}@{host}", "HTTP 401", ENV_PASSWORD,
                          "nothing was started")
    assert wrong not in raced.stdout + raced.stderr and right not in raced.stdout + raced.stderr, line
    # Before the track, a trial or a node: nothing started, nothing stored.
    assert "Trial " not in raced.stdout and took < 60, (raced.stdout, took)
    if (home / "bench.db").exists():
        with TrialStore(home / "bench.db") as store:
            assert store.list_trials() == []
    assert not list(home.rglob("nodes"))
    log = home / "logs" / "bench.log"
    assert not log.exists() or wrong not in log.read_text(errors="replace")
