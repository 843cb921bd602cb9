"""Live CCR with security on both clusters (tests/support/secured_pair.py: a real OpenSearch 2.19.1 pair with the
security plugin from Maven Central, TLS on transport and HTTP from one CA bench made, the replication plugin): a
``bench race`` replicates as a user mapped to the replication roles on both sides and never writes the password
anywhere; a client that does not trust the CA and a user without the replication role each fail in one line."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bench.ccr.security import FOLLOWER_ROLE, LEADER_ROLE
from bench.provision.certs import Authority, write_ca
from tests.support.ccr_pair import CcrPairInfo, os_ccr_pair, write_ccr_track  # noqa: F401 (os_ccr_pair: fixture)
from tests.support.secured_pair import SecuredPair, os_secured_pair  # noqa: F401 (the session fixture)

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]


def _bench(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BENCH_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=540)


def _race(pair: SecuredPair, home: Path, track: Path, index: str, *extra: str,
          options: str | None = None) -> subprocess.CompletedProcess[str]:
    return _bench(home, "race", f"--track-path={track}", f"--target-hosts={pair.target_hosts}",
                  f"--client-options={options or pair.client_options()}", f"--track-params=index:{index}", *extra)


def _fresh(pair: SecuredPair, index: str) -> None:
    pair.request("follower", "POST", f"/_plugins/_replication/{index}/_stop", {})
    for cluster in ("follower", "leader"):
        pair.request(cluster, "DELETE", f"/{index}")


def _count(pair: SecuredPair, cluster: str, index: str) -> int:
    pair.request(cluster, "POST", f"/{index}/_refresh")
    status, body = pair.request(cluster, "GET", f"/{index}/_count")
    assert status == 200, body
    return int(body["count"])


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    err = proc.stderr.strip()
    assert proc.returncode != 0 and "Traceback" not in err and len(err.splitlines()) == 1, err[-3000:]
    return err


@pytest.mark.timeout(600)
def test_race_replicates_over_tls_with_roles_and_keeps_the_password_out(os_secured_pair: SecuredPair,  # noqa: F811
                                                                        es_target: str, tmp_path: Path) -> None:
    pair, index, docs = os_secured_pair, "secured-race", 2000
    track = write_ccr_track(tmp_path / "track", docs=docs)
    _fresh(pair, index)
    home, report = tmp_path / "home", tmp_path / "report.md"
    store = f"http://{es_target.split(',')[0]}"  # the session's Elasticsearch as the metrics store
    proc = _race(pair, home, track, index, f"--report-file={report}", "--report-format=markdown",
                 f"--metrics-store={store}", "--metrics-store-options=index_prefix:secured-ccr")
    try:
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        # the track indexes half the corpus, then all of it again: 1.5 x docs on the leader, all on the follower
        assert _count(pair, "follower", index) == _count(pair, "leader", index) == docs * 3 // 2
        # the race user holds the replication roles on both sides, through mappings bench made
        for cluster, role in (("leader", LEADER_ROLE), ("follower", FOLLOWER_ROLE)):
            status, body = pair.request(cluster, "GET", f"/_plugins/_security/api/rolesmapping/{role}")
            assert status == 200 and pair.user in body[role]["users"], body
        status, body = pair.request("follower", "GET", f"/_plugins/_replication/{index}/_status")
        assert body.get("status") == "SYNCING", body
        # HTTP is TLS only on both clusters: plain HTTP gets no answer a client could read
        for info in (pair.leader, pair.follower):
            plain = info.hosts[0].replace("https://", "http://")
            with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
                urllib.request.urlopen(plain + "/_cluster/health", timeout=10).read()
        # the password bench generated appears in no file the race wrote: trial store, logs, report, metrics
        assert report.is_file()
        secret = pair.password.encode()
        files = [p for p in home.rglob("*") if p.is_file()] + [report]
        assert any(p.name.endswith(".db") for p in files), files
        leaked = [str(p) for p in files if secret in p.read_bytes()]
        assert not leaked and pair.password not in proc.stdout + proc.stderr, leaked
        urllib.request.urlopen(urllib.request.Request(f"{store}/secured-ccr-*/_refresh", method="POST"), timeout=30)
        with urllib.request.urlopen(urllib.request.Request(
                f"{store}/secured-ccr-*/_search?size=10000", data=b'{"query": {"match_all": {}}}',
                headers={"Content-Type": "application/json"}), timeout=30) as r:
            stored = r.read()
        assert json.loads(stored)["hits"]["hits"] and secret not in stored  # the store has the race, not the secret
    finally:
        pair.request("follower", "POST", f"/_plugins/_replication/{index}/_stop", {})


@pytest.mark.timeout(300)
def test_a_client_that_does_not_trust_the_ca_fails_in_one_line(os_secured_pair: SecuredPair,  # noqa: F811
                                                                tmp_path: Path) -> None:
    other = write_ca(tmp_path / "other-ca.pem", Authority("another race"))
    track = write_ccr_track(tmp_path / "track", docs=10)
    proc = _race(os_secured_pair, tmp_path / "home", track, "secured-wrong-ca",
                 options=os_secured_pair.client_options(ca=other))
    err = _one_line(proc)
    assert "TLS certificate verification failed" in err and "ca_certs" in err, err


@pytest.mark.timeout(300)
def test_a_follower_user_without_the_replication_role_fails_in_one_line(os_secured_pair: SecuredPair,  # noqa: F811
                                                                       tmp_path: Path) -> None:
    pair, user, password = os_secured_pair, "no-replication", secrets.token_urlsafe(18)
    # a user who may monitor and read everything on both clusters, but holds no replication role
    for cluster in ("leader", "follower"):
        for path, body in ((f"/_plugins/_security/api/roles/bench_test_{user}",
                            {"cluster_permissions": ["cluster_monitor"],
                             "index_permissions": [{"index_patterns": ["*"], "allowed_actions": ["read", "monitor"]}]}),
                           (f"/_plugins/_security/api/internalusers/{user}", {"password": password}),
                           (f"/_plugins/_security/api/rolesmapping/bench_test_{user}", {"users": [user]})):
            status, answer = pair.request(cluster, "PUT", path, body)
            assert status in (200, 201), (path, answer)
    track = write_ccr_track(tmp_path / "track", docs=10)
    proc = _race(pair, tmp_path / "home", track, "secured-no-role",
                 options=pair.client_options(user=user, password=password))
    err = _one_line(proc)
    assert f"cluster follower (follower): user {user} lacks the replication role {FOLLOWER_ROLE}" in err, err
    status, body = pair.request("follower", "GET", f"/_plugins/_security/api/rolesmapping/{FOLLOWER_ROLE}")
    assert user not in (body.get(FOLLOWER_ROLE) or {}).get("users", []), body
    assert json.dumps(body).count(user) == 0


@pytest.mark.timeout(300)
def test_security_on_the_leader_only_is_refused_in_one_line(os_secured_pair: SecuredPair,  # noqa: F811
                                                            os_ccr_pair: CcrPairInfo,  # noqa: F811
                                                            tmp_path: Path) -> None:
    # the secured pair's leader beside the plain pair's follower (its own remote 'leader' stays as it is)
    hosts = f"leader:{os_secured_pair.leader.hosts[0]},follower:{os_ccr_pair.follower_url}"
    options = f"ca_certs:'{os_secured_pair.ca}',basic_auth_user:'{os_secured_pair.user}'," \
              f"basic_auth_password:'{os_secured_pair.password}'"
    track = write_ccr_track(tmp_path / "track", docs=10)
    proc = _bench(tmp_path / "home", "race", f"--track-path={track}", f"--target-hosts={hosts}",
                  f"--client-options={options}", "--track-params=index:secured-mixed")
    err = _one_line(proc)
    assert "security is on for cluster leader but off for cluster follower" in err and "security: true" in err, err
