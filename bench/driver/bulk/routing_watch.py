"""While a shard-aware bulk task runs, re-read where its index's primaries are, so bulks follow moved shards.

One watch per task and worker process, shared by the worker's clients of that task: every ``interval`` seconds it
reads ``_cluster/state/routing_table`` and ``_nodes/http`` (two small requests, off the clients' path) and, when a
primary moved, its clients' next bodies go to the node now holding most of their documents' primaries. A failed
read keeps the last table: a document sent to a node that no longer holds its shard is still indexed (that node
forwards it), so a stale table costs speed, never correctness.
"""

from __future__ import annotations

import asyncio
import logging
import weakref

from bench.driver.bulk.routed_bodies import RoutedBody, node_for
from bench.driver.bulk.shard_routing import ShardTable, shard_table
from bench.http.client import RawHttp

log = logging.getLogger(__name__)

DEFAULT_INTERVAL = 5.0

_watches: weakref.WeakValueDictionary[str, RoutingWatch] = weakref.WeakValueDictionary()


class RoutingWatch:
    def __init__(self, table: ShardTable, cluster: str | None, interval: float) -> None:
        self.index = table.routing.index
        self.cluster = cluster  # None: the race's default cluster
        self.interval = interval
        self.primary_urls = dict(table.primary_urls)
        self.moves = 0  # primaries seen on another node than before
        self._nodes: dict[tuple[tuple[int, int], ...], str] = {}

    @staticmethod
    def shared(table: ShardTable, cluster: str | None, interval: float) -> RoutingWatch:
        """The watch of this task run (its id prefix) in this process, made on first use."""
        watch = _watches.get(table.id_prefix)
        if watch is None:
            watch = RoutingWatch(table, cluster, interval)
            _watches[table.id_prefix] = watch
        return watch

    def node(self, body: RoutedBody) -> str:
        if not self.moves:
            return body.url
        url = self._nodes.get(body.shards)
        if url is None:
            url = self._nodes[body.shards] = node_for(body.shards, self.primary_urls)
        return url

    def update(self, primary_urls: dict[int, str]) -> list[str]:
        """Take a freshly read table; what moved, as "shard N: old -> new" lines."""
        moved = [f"shard {s}: {self.primary_urls.get(s)} -> {u}" for s, u in sorted(primary_urls.items())
                 if self.primary_urls.get(s) != u]
        if moved:
            self.primary_urls = dict(primary_urls)
            self.moves += len(moved)
            self._nodes.clear()
        return moved

    async def refresh(self, http: RawHttp, scheme: str) -> list[str]:
        s1, state = await http.request("GET", f"/_cluster/state/metadata,routing_table/{self.index}")
        s2, nodes = await http.request("GET", "/_nodes/http")
        if s1 >= 300 or s2 >= 300 or not isinstance(state, dict) or not isinstance(nodes, dict):
            raise ValueError(f"HTTP {s1 if s1 >= 300 else s2}")
        return self.update(shard_table(self.index, state, nodes, scheme, id_prefix="").primary_urls)

    async def run(self, http: RawHttp, scheme: str) -> None:
        """Refresh every ``interval`` seconds until cancelled."""
        failing = False
        while True:
            await asyncio.sleep(self.interval)
            try:
                moved = await self.refresh(http, scheme)
            except Exception as e:  # noqa: BLE001 - keep the last table (see the module doc), say so once
                if not failing:
                    log.warning("index %s: reading its routing table failed (%s); bulks keep the last one",
                                self.index, e)
                failing = True
                continue
            failing = False
            if moved:
                log.info("index %s: primaries moved (%s); shard-aware bulks follow", self.index, "; ".join(moved))
