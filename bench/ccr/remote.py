"""Remote-cluster wiring for CCR: the follower's ``cluster.remote.<alias>.seeds`` (the leader's *transport*
addresses) and a connected ``_remote/info`` (Elasticsearch's licence: ``license.py``)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from bench.http.client import RawHttp
from bench.util import redact
from bench.util.errors import ClusterError

log = logging.getLogger(__name__)

def _short(body: Any) -> str:
    return redact.redact_text(" ".join(str(body).split())[:300])


async def transport_addresses(http: RawHttp, cluster: str) -> list[str]:
    """The publish transport addresses of a cluster's nodes (what a remote cluster's seeds name)."""
    status, body = await http.request("GET", "/_nodes/_all/transport",
                                      params={"filter_path": "nodes.*.transport.publish_address"})
    nodes = (body or {}).get("nodes", {}) if isinstance(body, dict) else {}
    seeds = sorted(str(n["transport"]["publish_address"]) for n in nodes.values()
                   if isinstance(n.get("transport"), dict) and n["transport"].get("publish_address"))
    if status >= 400 or not seeds:
        raise ClusterError(f"cluster {cluster}: GET _nodes/transport gave HTTP {status} without transport addresses: "
                           f"{_short(body)}")
    return seeds


async def remote_info(http: RawHttp, cluster: str) -> dict[str, Any]:
    status, body = await http.request("GET", "/_remote/info")
    if status >= 400 or not isinstance(body, dict):
        raise ClusterError(f"cluster {cluster}: GET _remote/info answered HTTP {status}: {_short(body)}")
    return body


async def ensure_remote(follower: RawHttp, follower_name: str, alias: str, leader: RawHttp | None,
                        leader_name: str | None, *, timeout: float = 60.0) -> dict[str, Any]:
    """Make ``alias`` a connected remote cluster of the follower; returns its ``_remote/info`` entry.

    Seeds already configured (a topology's after-start hook, or an existing cluster) are kept; otherwise they
    are set to the leader's transport addresses."""
    info = await remote_info(follower, follower_name)
    entry = info.get(alias)
    if not entry or not (entry.get("seeds") or entry.get("proxy_address")):
        if leader is None:
            raise ClusterError(f"cluster {follower_name} has no remote cluster {alias!r} and the race has no cluster "
                               f"named {alias!r} to point it at: set cluster.remote.{alias}.seeds on it, or name the "
                               f"leader in --target-hosts ({alias}:host:port,{follower_name}:host:port)")
        seeds = await transport_addresses(leader, leader_name or alias)
        status, body = await follower.request("PUT", "/_cluster/settings",
                                              body={"persistent": {f"cluster.remote.{alias}.seeds": seeds}})
        if status >= 400:
            raise ClusterError(f"cluster {follower_name}: setting cluster.remote.{alias}.seeds={seeds} answered "
                               f"HTTP {status}: {_short(body)}")
        log.info("cluster %s: remote cluster %s seeds %s", follower_name, alias, seeds)
    deadline = time.monotonic() + timeout
    while True:
        entry = (await remote_info(follower, follower_name)).get(alias) or {}
        if entry.get("connected"):
            return entry
        if time.monotonic() >= deadline:
            raise ClusterError(f"cluster {follower_name}: remote cluster {alias!r} is not connected after {timeout:g} s "
                               f"(seeds {entry.get('seeds') or entry.get('proxy_address')}); is the leader's transport "
                               f"port reachable from the follower?")
        await asyncio.sleep(0.5)
