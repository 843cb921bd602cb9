"""A real OpenSearch 2.19.1 leader/follower pair with security on (``os_secured_pair``, one per session): started as
a topology with ``security: true``, both clusters at once (the security plugin fetched from Maven Central into bench's download cache,
TLS on transport and HTTP from one CA bench makes, an admin user with a generated password on each cluster) and the
replication plugin from ../shared. Skipped unless BENCH_OPENSEARCH_REPLICATION_PLUGIN names the plugin.

    def test_x(os_secured_pair: SecuredPair) -> None:
        os_secured_pair.target_hosts, os_secured_pair.client_options(), os_secured_pair.request("follower", ...)

Test modules import the fixture; tests isolate themselves by index names.
"""

from __future__ import annotations

import base64
import ssl
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.cloud.local import connect_remote_clusters
from bench.cloud.topology import parse_topology
from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterInfo
from tests.support.ccr_pair import http, need_plugin
from tests.support.esnode import LocalEngines


@dataclass
class SecuredPair:
    leader: ClusterInfo
    follower: ClusterInfo
    trial_dir: Path  # the provisioner's trial folder (node logs are copied there when the pair stops)

    @property
    def ca(self) -> Path:
        assert self.leader.tls_ca is not None
        return self.leader.tls_ca

    @property
    def user(self) -> str:
        assert self.leader.username is not None
        return self.leader.username

    @property
    def password(self) -> str:
        assert self.leader.password is not None
        return self.leader.password.get_secret_value()

    def info(self, cluster: str) -> ClusterInfo:
        return self.leader if cluster == "leader" else self.follower

    @property
    def target_hosts(self) -> str:
        return ",".join(f"{c.name}:{c.hosts[0].split('://', 1)[1]}" for c in (self.leader, self.follower))

    def client_options(self, user: str | None = None, password: str | None = None, ca: Path | None = None) -> str:
        """--client-options for a race on the pair (the pair's admin and CA unless others are given)."""
        return (f"use_ssl:true,ca_certs:'{ca or self.ca}',basic_auth_user:'{user or self.user}',"
                f"basic_auth_password:'{password or self.password}'")

    def request(self, cluster: str, method: str, path: str, body: Any = None, user: str | None = None,
                password: str | None = None) -> tuple[int, Any]:
        """One JSON request over HTTPS as the admin (or ``user``); HTTP errors are answers too."""
        token = base64.b64encode(f"{user or self.user}:{password or self.password}".encode()).decode()
        return http(method, self.info(cluster).hosts[0] + path, body, headers={"Authorization": f"Basic {token}"},
                    context=ssl.create_default_context(cafile=str(self.ca)))


def secured_topology(plugin: Path, name: str = "secured-pair") -> dict[str, Any]:
    """A leader and a follower (1 node each, 512 MB heap) with security on for the whole topology."""
    cluster = {"nodes": 1, "car": "defaults,512mheap", "engine": "opensearch", "version": "2.19.1",
               "plugins": [str(plugin)]}
    return {"name": name, "provider": "local", "security": True,
            "clusters": [{"name": "leader", **cluster}, {"name": "follower", **cluster, "remote_clusters": ["leader"]}]}


_MADE: list[SecuredPair] = []


@pytest.fixture(scope="session")
def os_secured_pair(tmp_path_factory: pytest.TempPathFactory, local_engines: LocalEngines) -> Iterator[SecuredPair]:
    if _MADE:
        yield _MADE[0]
        return
    plugin = need_plugin()
    trial_dir = tmp_path_factory.mktemp("os-secured-pair")
    provisioner = LocalProvisioner(f"secured-{uuid.uuid4().hex[:8]}", trial_dir)
    topo = parse_topology(secured_topology(plugin))
    try:
        # Both at once (a node spends most of its start waiting), then the follower's remote-cluster seeds as
        # start_topology sets them; one provisioner, so one CA and one password for both.
        with ThreadPoolExecutor(2) as pool:
            leader, follower = pool.map(lambda spec: provisioner.start(spec, timeout=300), topo.cluster_specs())
        connect_remote_clusters(topo, topo.clusters[1], follower, {"leader": leader, "follower": follower})
        _MADE.append(SecuredPair(leader, follower, trial_dir))
        yield _MADE[0]
    finally:
        provisioner.stop_all()
