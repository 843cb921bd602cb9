"""provider: local — a topology's clusters started on 127.0.0.1 by the LocalProvisioner, in dependency
order (a cluster after the clusters it names in remote_clusters), each followed by its after-start hooks.

After-start hooks are the place for per-cluster wiring once a cluster is up: the built-in one points a
cluster's remote-cluster seeds at the transport addresses of the clusters it names; the CCR work adds
its own (e.g. follow patterns) with ``register_after_start``.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable

from rich.console import Console

from bench.cloud.local_links import LocalLinks
from bench.cloud.topology import ClusterTopology, Topology
from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterInfo
from bench.util.errors import ClusterError, ConfigError

log = logging.getLogger(__name__)

# (topology, this cluster's entry, its ClusterInfo, every cluster started so far by name) -> None
AfterStartHook = Callable[[Topology, ClusterTopology, ClusterInfo, dict[str, ClusterInfo]], None]
_HOOKS: list[AfterStartHook] = []


def register_after_start(hook: AfterStartHook) -> None:
    """Run hook after each cluster of a topology has started (after the built-in remote-seeds wiring)."""
    if hook not in _HOOKS:
        _HOOKS.append(hook)


def start_order(topo: Topology) -> list[ClusterTopology]:
    """Clusters ordered so that each comes after the clusters it names in remote_clusters."""
    done: list[ClusterTopology] = []
    pending = list(topo.clusters)
    while pending:
        ready = [c for c in pending if all(r in {d.name for d in done} for r in c.remote_clusters)]
        if not ready:
            raise ConfigError(f"topology {topo.name}: remote_clusters form a cycle among "
                              f"{[c.name for c in pending]}")
        done += ready
        pending = [c for c in pending if c not in ready]
    return done


def _request(info: ClusterInfo, method: str, path: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(info.hosts[0] + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    if info.username and info.password is not None:
        token = base64.b64encode(f"{info.username}:{info.password.get_secret_value()}".encode()).decode()
        req.add_header("Authorization", f"Basic {token}")
    try:
        context = ssl.create_default_context(cafile=str(info.tls_ca)) if info.tls_ca is not None else None
        with urllib.request.urlopen(req, timeout=30, context=context) as r:
            return json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        raise ClusterError(f"{method} {path} on cluster {info.name} answered HTTP {e.code}: "
                           f"{e.read()[:300].decode(errors='replace')}") from None
    except OSError as e:
        raise ClusterError(f"{method} {path} on cluster {info.name} failed: {e}") from None


def connect_remote_clusters(topo: Topology, cluster: ClusterTopology, info: ClusterInfo,
                            started: dict[str, ClusterInfo], links: LocalLinks | None = None) -> None:
    """cluster.remote.<name>.seeds = the named clusters' transport addresses (what the cloud startup script
    writes into the config file, set here through the API because local ports are only known now); a remote
    cluster behind one of the topology's links goes through that link's proxy instead."""
    if not cluster.remote_clusters:
        return
    linked = {k.target for k in links.linked(cluster)} if links is not None else set()
    settings: dict[str, object] = {f"cluster.remote.{r}.seeds": started[r].transport_addresses
                                   for r in cluster.remote_clusters if r not in linked}
    if links is not None:
        settings.update(links.start(cluster, started))
    _request(info, "PUT", "/_cluster/settings", {"persistent": settings})
    log.info("cluster %s: remote clusters %s", cluster.name, settings)


def start_topology(provisioner: LocalProvisioner, topo: Topology, console: Console | None = None,
                   timeout: float = 180.0, cpus: dict[str, frozenset[int] | None] | None = None,
                   jvm_options: dict[str, list[str]] | None = None, links: LocalLinks | None = None
                   ) -> list[ClusterInfo]:
    """Start every cluster of a provider-local topology; returns them in the topology's order (the first
    is the track's default target). Clusters already started are stopped by the provisioner's owner. ``cpus``:
    each cluster's CPU set (bench/provision/pinning.py); ``links``: the proxies of the topology's links (their
    owner stops them), None when it has none."""
    if topo.provider != "local":
        raise ConfigError(f"topology {topo.name} has provider {topo.provider}; only provider local runs on "
                          f"this machine")
    specs = {s.name: s.model_copy(update={"jvm_options": (jvm_options or {}).get(s.name, [])})
             for s in topo.cluster_specs(cpus)}
    started: dict[str, ClusterInfo] = {}
    for c in start_order(topo):
        if console:
            console.print(f"Starting cluster [cyan]{c.name}[/cyan]: {c.nodes} node(s) of {c.engine} {c.version} "
                          f"(car {'+'.join(c.car)}) on 127.0.0.1 ...", highlight=False)
        info = provisioner.start(specs[c.name], timeout=timeout)
        started[c.name] = info
        connect_remote_clusters(topo, c, info, started, links)
        for hook in _HOOKS:
            hook(topo, c, info, started)
    return [started[c.name] for c in topo.clusters]
