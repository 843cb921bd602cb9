"""A provider-local topology's links: one proxy (``link_process.py``) per link in front of the leader's transport
port, the follower's remote cluster in proxy mode pointing at it, the link measured through it, and its facts.

Proxy mode (``cluster.remote.<name>.mode: proxy``) rather than seeds: in sniff mode the follower reads the
leader's published transport addresses from the seed and then connects to them directly, past the proxy. Every
connection of the remote cluster (the handshake too) goes through the link to the leader's first node, which
routes requests for shards elsewhere inside its own cluster."""

from __future__ import annotations

import logging
from typing import Any

from bench.cloud.link_measure import LinkMeasurement, measure_added_rtt, measure_throughput
from bench.cloud.link_process import LinkProcess
from bench.cloud.links import Link, rate_text
from bench.cloud.topology import ClusterTopology, Topology
from bench.provision.model import ClusterInfo

log = logging.getLogger(__name__)

PROXY = "bench link proxy (python -m bench.cloud.link_proxy)"


def remote_settings(alias: str, proxy_address: str) -> dict[str, Any]:
    """The follower's remote cluster through the link (seeds cleared: a cluster has one mode)."""
    return {f"cluster.remote.{alias}.seeds": None, f"cluster.remote.{alias}.mode": "proxy",
            f"cluster.remote.{alias}.proxy_address": proxy_address}


def link_fact(link: Link, target: str, proxy: str, measured: LinkMeasurement) -> dict[str, Any]:
    """What the trial stores of an emulated link: its configured values and bench's measurement through it."""
    return {"from": link.source, "to": link.target, "kind": "emulated", "via": PROXY, "proxy_address": proxy,
            "leader_transport": target,
            "rtt_ms": link.rtt_ms, "rate_bps": link.rate_bps, "rate": rate_text(link.rate_bps),
            "measured": measured.model_dump(exclude_none=True)}


class LocalLinks:
    """The proxies of one race; ``stop`` ends them all (the race's clusters' ``stop`` calls it)."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.proxies: list[LinkProcess] = []
        self._facts: dict[str, list[dict[str, Any]]] = {}

    def linked(self, cluster: ClusterTopology) -> list[Link]:
        return [k for r in cluster.remote_clusters if (k := self.topology.link(cluster.name, r)) is not None]

    def start(self, cluster: ClusterTopology, started: dict[str, ClusterInfo]) -> dict[str, Any]:
        """Start the proxies of ``cluster``'s links, measure them; returns the remote-cluster settings to put."""
        settings: dict[str, Any] = {}
        for link in self.linked(cluster):
            target = started[link.target].transport_addresses[0]
            proxy = LinkProcess(link, target)
            self.proxies.append(proxy)
            measured = measure_added_rtt(target, proxy.address)
            rate = measure_throughput(link)
            measured = measured.model_copy(update={"throughput_bps": rate.throughput_bps,
                                                   "throughput_bytes": rate.throughput_bytes})
            self._facts.setdefault(cluster.name, []).append(link_fact(link, target, proxy.address, measured))
            settings.update(remote_settings(link.target, proxy.address))
            log.info("link %s: proxy %s (pid %d) to %s, measured %s", link.text(), proxy.address, proxy.pid, target,
                     measured.model_dump(exclude_none=True))
        return settings

    def facts(self) -> dict[str, dict[str, Any]]:
        """cluster name -> {"links": [...]} for the clusters whose connections went through a link."""
        return {name: {"links": links} for name, links in self._facts.items()}

    def died(self) -> str | None:
        """A proxy that ended during the race: the follower lost its leader, and its lag would be read as the
        link's."""
        for proxy in self.proxies:
            if not proxy.running():
                return (f"link {proxy.link.label}: its proxy (pid {proxy.pid}) ended during the race, cutting "
                        f"cluster {proxy.link.source} off from {proxy.link.target}")
        return None

    def stop(self, keep: bool = False) -> list[str]:
        lines = []
        while self.proxies:
            proxy = self.proxies.pop()
            proxy.stop()
            if keep:
                lines.append(f"link {proxy.link.label}: its proxy {proxy.address} stopped with the race; cluster "
                             f"{proxy.link.source}'s remote cluster {proxy.link.target} points at it (re-point "
                             f"cluster.remote.{proxy.link.target}.proxy_address to {proxy.target})")
        return lines
