"""A real OpenSearch 2.19.1 leader/follower pair with the cross-cluster replication plugin, shared by the live
CCR tests of a session (``os_ccr_pair``): starting a pair costs ~1 min on 2 cores, so tests share it and isolate
themselves by using their own index names. Skipped unless BENCH_OPENSEARCH_REPLICATION_PLUGIN names the plugin
(noxfile.py sets it when ../shared/ has the zip).

    def test_x(os_ccr_pair: CcrPairInfo) -> None:
        os_ccr_pair.leader_url, os_ccr_pair.follower_url, os_ccr_pair.target_hosts

Test modules import the fixture, which makes one fixture per module: the pair is started once all the same.
"""

from __future__ import annotations

import json
import os
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterInfo
from tests.support.esnode import LocalEngines

PLUGIN_ENV = "BENCH_OPENSEARCH_REPLICATION_PLUGIN"
PAIR_ENV = "BENCH_TEST_OS_CCR_PAIR"
LEADER_ALIAS = "leader"


def plugin_path() -> Path | None:
    raw = os.environ.get(PLUGIN_ENV)
    return Path(raw).expanduser().resolve() if raw else None


def need_plugin() -> Path:
    """The replication plugin zip, or the calling test (or fixture) is skipped saying how to provide it."""
    plugin = plugin_path()
    if plugin is None:
        pytest.skip(f"set {PLUGIN_ENV} to the OpenSearch replication plugin zip (noxfile.py does when "
                    f"../shared/opensearch-replication-plugin/ has it)")
    return plugin


def http(method: str, url: str, body: Any = None, timeout: float = 60.0, *, headers: dict[str, str] | None = None,
         context: ssl.SSLContext | None = None) -> tuple[int, Any]:
    """One JSON request; HTTP errors are answers too (status, body). ``headers``/``context``: e.g. basic auth and a
    CA to trust (tests/support/secured_pair.py)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw.decode(errors="replace")


@dataclass
class CcrPairInfo:
    leader_url: str  # http://host:port
    follower_url: str

    @property
    def target_hosts(self) -> str:
        """--target-hosts naming both clusters."""
        return (f"leader:{self.leader_url.removeprefix('http://')},"
                f"follower:{self.follower_url.removeprefix('http://')}")

    def stop_replication(self, index: str) -> None:
        """Best effort: a test's follower index stops replicating, so the next test's indices are alone."""
        http("POST", f"{self.follower_url}/_plugins/_replication/{index}/_stop", {})

    def fresh(self, *indices: str) -> None:
        """No trace of these indices on either cluster (a rerun on a reused pair starts clean)."""
        for index in indices:
            self.stop_replication(index)
            for url in (self.follower_url, self.leader_url):
                http("DELETE", f"{url}/{index}")


_MADE: list[CcrPairInfo] = []


def connect(follower_url: str, seeds: list[str], timeout: float = 60.0) -> None:
    status, body = http("PUT", f"{follower_url}/_cluster/settings",
                        {"persistent": {f"cluster.remote.{LEADER_ALIAS}.seeds": seeds}})
    assert status == 200, body
    deadline = time.monotonic() + timeout
    while not (http("GET", f"{follower_url}/_remote/info")[1].get(LEADER_ALIAS) or {}).get("connected"):
        assert time.monotonic() < deadline, f"remote cluster {LEADER_ALIAS} not connected after {timeout} s"
        time.sleep(0.5)


@pytest.fixture(scope="session")
def os_ccr_pair(tmp_path_factory: pytest.TempPathFactory, local_engines: LocalEngines) -> Iterator[CcrPairInfo]:
    if _MADE:
        yield _MADE[0]
        return
    if os.environ.get(PAIR_ENV):  # a running pair (while developing tests): leader_url,follower_url
        leader_url, follower_url = os.environ[PAIR_ENV].split(",")
        _MADE.append(CcrPairInfo(leader_url, follower_url))
        yield _MADE[0]
        return
    plugin = need_plugin()
    base = tmp_path_factory.mktemp("os-ccr-pair")
    started: list[LocalProvisioner] = []

    def start(name: str) -> ClusterInfo:
        provisioner, info = local_engines.start_cluster(base / name, car=["defaults", "512mheap"], name=name,
                                                        engine="opensearch", version="2.19.1", plugins=[plugin],
                                                        timeout=300)
        started.append(provisioner)
        return info

    try:
        # Both at once: a node spends most of its start waiting (JVM, plugin install), ~40 s each here.
        with ThreadPoolExecutor(2) as pool:
            leader, follower = pool.map(start, ("leader", "follower"))
        connect(follower.hosts[0], leader.transport_addresses)
        _MADE.append(CcrPairInfo(leader.hosts[0], follower.hosts[0]))
        yield _MADE[0]
    finally:
        for p in started:
            p.stop_all()


CCR_TRACK = """{
  "version": 2,
  "description": "live CCR: index into the leader while the follower follows, then wait for it to catch up",
  "indices": [{"name": "{{ index }}", "body": "index.json"}],
  "corpora": [{"name": "c", "documents": [{"source-file": "docs.json", "document-count": {{ docs }},
                                           "target-index": "{{ index }}"}]}],
  "schedule": [
    {"operation": {"name": "create-leader", "operation-type": "create-index", "cluster": "leader"}},
    {"operation": {"name": "leader-health", "operation-type": "cluster-health", "cluster": "leader",
                   "index": "{{ index }}", "request-params": {"wait_for_status": "yellow"},
                   "retry-until-success": true}},
    {"operation": {"name": "follow", "operation-type": "ccr-follow", "cluster": "follower",
                   "remote-cluster": "leader", "leader-index": "{{ index }}", "index": "{{ index }}"}},
    {"name": "index-first-half", "clients": 1,
     "operation": {"name": "bulk-1", "operation-type": "bulk", "cluster": "leader", "bulk-size": 100,
                   "ingest-percentage": 50}},
    {% if pause %}{"operation": {"name": "pause", "operation-type": "ccr-pause", "cluster": "follower",
                                 "index": "{{ index }}"}},{% endif %}
    {"name": "index-second-half", "clients": 1,
     "operation": {"name": "bulk-2", "operation-type": "bulk", "cluster": "leader", "bulk-size": 100}},
    {"operation": {"name": "sync", "operation-type": "wait-for-followers-to-sync", "cluster": "follower",
                   "indices": ["{{ index }}"], "timeout": {{ sync_timeout | default(120) }}}}
  ]
}
"""


def write_ccr_corpus(root: Path, docs: int) -> None:
    """The CCR tracks' corpus (``docs.json``, ``docs`` log lines) and leader index (``index.json``, 2 shards, no
    replica, strict mapping) in ``root``; the soak benchmark's track uses them too."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "docs.json").write_text("".join(
        json.dumps({"n": i, "message": f"GET /item/{i} HTTP/1.1 200 {i * 7 % 5000}"}) + "\n" for i in range(docs)))
    (root / "index.json").write_text(json.dumps({
        "settings": {"number_of_shards": 2, "number_of_replicas": 0},
        "mappings": {"dynamic": "strict", "properties": {"n": {"type": "long"}, "message": {"type": "text"}}}}))


def write_ccr_track(root: Path, docs: int = 4000) -> Path:
    """A small CCR track (its index, pause and sync timeout are track params: index, pause, sync_timeout)."""
    write_ccr_corpus(root, docs)
    (root / "track.json").write_text(CCR_TRACK.replace("{{ docs }}", str(docs)))
    return root


def bulk(url: str, index: str, start: int, n: int) -> None:
    """n documents with autogenerated ids into index (append only, so checkpoints + shards = documents)."""
    lines = "".join('{"index":{}}\n' + json.dumps({"n": i, "message": f"GET /item/{i} HTTP/1.1 200"}) + "\n"
                    for i in range(start, start + n))
    req = urllib.request.Request(f"{url}/{index}/_bulk", data=lines.encode(), method="POST",
                                 headers={"Content-Type": "application/x-ndjson"})
    with urllib.request.urlopen(req, timeout=120) as r:
        body = json.loads(r.read())
    assert not body["errors"], str(body)[:500]


def global_checkpoints(url: str, index: str) -> dict[int, int]:
    """Each primary's global checkpoint, read from the cluster itself."""
    status, body = http("GET", f"{url}/{index}/_stats?level=shards")
    assert status == 200, body
    return {int(s): c["seq_no"]["global_checkpoint"] for s, copies in body["indices"][index]["shards"].items()
            for c in copies if c["routing"]["primary"]}


def count(url: str, index: str) -> int:
    http("POST", f"{url}/{index}/_refresh")
    status, body = http("GET", f"{url}/{index}/_count")
    assert status == 200, body
    return int(body["count"])


def create_index(url: str, index: str, shards: int = 2) -> None:
    status, body = http("PUT", f"{url}/{index}", {"settings": {"number_of_shards": shards,
                                                               "number_of_replicas": 0}})
    assert status == 200, body
