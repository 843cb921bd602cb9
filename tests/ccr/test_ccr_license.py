"""CCR's licence on Elasticsearch: bench starts the 30-day trial and says so in one line (or says which licence it
found), also when a race uses CCR only through the ccr-stats device or a wired leader/follower pair; where no
licence can be had (trial used, user not allowed) it is one line saying what to do. Live against Elasticsearch
8.19.21 (its Maven zip has x-pack-core, so licensing works, but no CCR module: that is then one line as before),
plus the replayed CCR pair (tests/support/ccr_replay.py) for which clusters a race without CCR tasks reaches."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import secrets
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from bench.ccr.license import STARTED, clusters_ccr_reaches, ensure_ccr_license
from bench.cli import main
from bench.http.client import ClientOptions, ClusterTarget, RawHttp
from bench.provision.model import ClusterInfo
from bench.provision.osuser import node_user, popen_user_kwargs
from bench.race.options import RaceOptions
from bench.util.errors import ClusterError
from bench.util.redact import register_secret
from tests.cli.test_cli_errors import one_line_error
from tests.support.ccr_replay import CcrPair
from tests.support.esnode import start_cluster

STARTED_LINE = "started a 30-day trial licence for CCR (as Rally's trial-license car mixin does)"


def _target(info: ClusterInfo, user: str, password: str) -> ClusterTarget:
    return ClusterTarget(name=info.name, hosts=[h.removeprefix("http://") for h in info.hosts],
                         options=ClientOptions(basic_auth_user=user, basic_auth_password=password))


def _call(info: ClusterInfo, method: str, path: str, user: str, password: str) -> tuple[int, dict]:
    req = urllib.request.Request(info.hosts[0] + path, method=method)
    req.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def _add_file_realm_user(info: ClusterInfo, user: str, password: str, role: str) -> None:
    """``bin/elasticsearch-users useradd`` in the node's install, with the JDK the node runs on, as its user."""
    node = info.nodes[0]
    assert node.pid is not None
    java_home = Path(psutil.Process(node.pid).exe()).parent.parent
    env = {**os.environ, "ES_JAVA_HOME": str(java_home), "ES_PATH_CONF": str(node.home / "config"),
           "HOME": str(node.home)}
    # the password on stdin (the tool asks twice), as bench adds its own user: never on a command line
    res = subprocess.run([str(node.home / "bin" / "elasticsearch-users"), "useradd", user, "-r", role],
                         input=f"{password}\n{password}\n", cwd=node.home, env=env, capture_output=True, text=True,
                         timeout=120, **popen_user_kwargs(node_user()))
    assert res.returncode == 0, res.stdout + res.stderr


async def _ensure(target: ClusterTarget):
    async with RawHttp(target, connections=1) as http:
        return await ensure_ccr_license(http, target.name)


@pytest.mark.cluster
@pytest.mark.timeout(400)
def test_license_lines_on_a_real_elasticsearch(tmp_path: Path) -> None:
    # basic auth over plain HTTP is what this test is about (TLS: tests/provision/test_security_tls.py)
    provisioner, info = start_cluster(tmp_path, car=["defaults", "security", "512mheap"], name="leader",
                                      car_params={"security_tls": False})
    try:
        assert info.username and info.password is not None
        admin = _target(info, info.username, info.password.get_secret_value())
        # a file-realm user without the manage privilege (the file realm picks the new user up within seconds)
        password = secrets.token_urlsafe(16)
        register_secret(password)
        _add_file_realm_user(info, "watcher", password, "monitoring_user")
        deadline = time.monotonic() + 60
        while _call(info, "GET", "/_security/_authenticate", "watcher", password)[0] != 200:
            assert time.monotonic() < deadline, "the file realm did not pick up the new user"
            time.sleep(1)
        with pytest.raises(ClusterError) as forbidden:
            asyncio.run(_ensure(_target(info, "watcher", password)))
        msg = str(forbidden.value)
        assert "\n" not in msg and password not in msg
        for needle in ("cluster leader: CCR needs a platinum, enterprise or trial licence", "may not read or start",
                       "HTTP 403", "manage cluster privilege", "PUT _license", "fresh cluster"):
            assert needle in msg, msg

        started = asyncio.run(_ensure(admin))
        assert started.started and started.type == "trial" and started.line() == STARTED == STARTED_LINE
        again = asyncio.run(_ensure(admin))
        assert not again.started and again.line() == "trial license active"

        # back to basic: this cluster's one trial is used, so no licence can be had without the user's help
        status, body = _call(info, "POST", "/_license/start_basic?acknowledge=true", info.username,
                             info.password.get_secret_value())
        assert status == 200 and body.get("basic_was_started"), body
        with pytest.raises(ClusterError) as used:
            asyncio.run(_ensure(admin))
        msg = str(used.value)
        assert "\n" not in msg
        for needle in ("cluster leader", "has basic (active)", "used its one trial already", "PUT _license",
                       "fresh cluster"):
            assert needle in msg, msg
    finally:
        provisioner.stop_all()


@pytest.mark.cluster
@pytest.mark.timeout(400)
def test_a_ccr_stats_race_starts_the_trial_then_names_the_missing_ccr(capsys: pytest.CaptureFixture[str]) -> None:
    # No CCR task: the race needs CCR only through the ccr-stats device. The Maven zip has no CCR module.
    rc = main(["race", "--quiet", "--track=nginx", "--test-mode", "--car=defaults,512mheap", "--telemetry=ccr-stats"])
    out, err = capsys.readouterr()
    assert rc != 0
    assert f"Cluster default: {STARTED_LINE}" in out, out
    one_line_error(err, "cluster default (elasticsearch): this cluster has no CCR support", "GET /_ccr/stats")


@pytest.mark.timeout(120)
def test_ccr_stats_reaches_the_follower_and_the_leader_it_names(capsys: pytest.CaptureFixture[str]) -> None:
    with CcrPair("elasticsearch") as pair:
        pair.remote_seeds = [f"127.0.0.1:{pair.ports['leader'] + 1}"]  # the follower names the leader
        rc = main(["race", "--quiet", "--track=nginx", "--test-mode", f"--target-hosts={pair.target_hosts}",
                   "--telemetry=ccr-stats", "--telemetry-params=ccr-stats-clusters:follower,"
                   "ccr-stats-sample-interval:0.05"])
        out, err = capsys.readouterr()
        # The stand-in pair answers the licence and CCR APIs only: every search fails, so nothing is measured.
        assert rc == 4 and "not measured" in err, err
        assert "Cluster follower: trial license active" in out and "Cluster leader: trial license active" in out
        probed = [(c, p) for c, m, p in pair.requests if p == "/_ccr/stats"]
        assert ("follower", "/_ccr/stats") in probed


def test_which_clusters_a_race_without_ccr_tasks_reaches() -> None:
    with CcrPair("elasticsearch") as pair:
        targets = [ClusterTarget(name=n, hosts=[f"127.0.0.1:{pair.ports[n]}"]) for n in ("leader", "follower")]
        plain = RaceOptions(track="nginx")
        # not wired: nothing, whoever started the clusters
        assert asyncio.run(clusters_ccr_reaches(plain, targets, {"leader", "follower"})) == ([], [])
        pair.remote_seeds = [f"127.0.0.1:{pair.ports['leader'] + 1}"]
        # wired clusters bench started: both need the licence (a CCR topology running a challenge without CCR)
        assert asyncio.run(clusters_ccr_reaches(plain, targets, {"leader", "follower"})) == (["follower", "leader"],
                                                                                              [])
        # the same wiring on someone else's clusters: bench leaves their licences alone
        assert asyncio.run(clusters_ccr_reaches(plain, targets, set())) == ([], [])
        sampled = RaceOptions(track="nginx", telemetry=["ccr-stats"])
        assert asyncio.run(clusters_ccr_reaches(sampled, targets, set())) == (["leader", "follower"],
                                                                              ["leader", "follower"])
