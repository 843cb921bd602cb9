"""A stand-in OpenSearch leader/follower pair whose follower applies at a known rate: a replication lag knee known
in advance, for the lag-budget redline (``--redline=...,ccr-lag:p99:5s``).

Two HTTP servers on 127.0.0.1 in one process. The leader takes ``_bulk`` bodies and counts their documents exactly
(one action line and one source line each; append only): its primary's sequence numbers are 0 .. documents - 1, so
``GET <index>/_stats?level=shards`` answers global checkpoint = max seq no = documents - 1. The follower applies
those documents at ``rate`` docs/s (never beyond what the leader has) and answers what the replication plugin
answers for one follower index named like its leader, in the shapes recorded from a real OpenSearch 2.19.1 pair
(the replication fixtures beside the checkout): ``_plugins/_replication/<index>/_status`` (SYNCING with
summed ``syncing_details``; after ``_pause`` PAUSED "User initiated" without them; ``REPLICATION NOT IN PROGRESS``
for any other index), ``follower_stats``, the follower setting on ``_all/_settings``, ``_pause``/``_resume``, and
its own ``<index>/_stats?level=shards``. Both answer ``GET _nodes`` as OpenSearch 2.19.1 (no build flavor).

Below ``rate`` the follower is behind by one bulk at most; above it the backlog grows by (leader rate - rate)
docs/s, so the time lag after t s of load is t (1 - rate / leader rate).
``python -m benchmarks.ccr_standin --rate 1000 --index knee``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing as mp
import multiprocessing.synchronize
import time
from collections.abc import Iterator
from typing import Any

from benchmarks.nullsink import free_port

FOLLOWER_SETTING = "index.plugins.replication.follower.leader_index"
REPLICATION = "/_plugins/_replication"


class Pair:
    """The shared state: documents on the leader, documents applied on the follower."""

    def __init__(self, index: str, rate: float) -> None:
        self.index = index
        self.rate = rate
        self.docs = 0
        self.applied = 0.0
        self.paused = False
        self._at = time.monotonic()

    def follower_docs(self) -> int:
        now = time.monotonic()
        if not self.paused:
            self.applied = min(float(self.docs), self.applied + self.rate * (now - self._at))
        self._at = now
        return int(self.applied)


def _nodes(name: str) -> dict[str, Any]:
    return {"cluster_name": name, "nodes": {"n0": {"name": f"{name}-0", "version": "2.19.1",
                                                   "roles": ["data", "ingest", "cluster_manager"],
                                                   "transport_address": "127.0.0.1:9300", "attributes": {}}}}


def _shard_stats(index: str, docs: int) -> dict[str, Any]:
    seq = {"max_seq_no": docs - 1, "local_checkpoint": docs - 1, "global_checkpoint": docs - 1}
    copy = {"routing": {"state": "STARTED", "primary": True, "node": "n0", "relocating_node": None},
            "docs": {"count": docs, "deleted": 0}, "seq_no": seq}
    return {"_shards": {"total": 1, "successful": 1, "failed": 0},
            "indices": {index: {"uuid": "standin", "primaries": {}, "total": {}, "shards": {"0": [copy]}}}}


def leader_answer(pair: Pair, method: str, path: str, body: bytes) -> tuple[int, Any]:
    if path.endswith("/_bulk"):
        pair.docs += body.count(b"\n") // 2
        return 200, {"took": 1, "errors": False, "items": []}
    if path.startswith("/_nodes"):
        return 200, _nodes("leader")
    if path == f"/{pair.index}/_stats":
        return 200, _shard_stats(pair.index, pair.docs)
    return 200, {}


def _status(pair: Pair, applied: int) -> dict[str, Any]:
    head = {"reason": "User initiated", "leader_alias": "leader", "leader_index": pair.index,
            "follower_index": pair.index}
    if pair.paused:
        return {"status": "PAUSED", **head}
    return {"status": "SYNCING", **head, "syncing_details": {"leader_checkpoint": pair.docs - 1,
                                                             "follower_checkpoint": applied - 1, "seq_no": applied}}


def follower_answer(pair: Pair, method: str, path: str, body: bytes) -> tuple[int, Any]:
    applied = pair.follower_docs()
    if path == f"{REPLICATION}/{pair.index}/_status":
        return 200, _status(pair, applied)
    if path.endswith("/_status") and path.startswith(REPLICATION):
        return 200, {"status": "REPLICATION NOT IN PROGRESS"}
    if path == f"{REPLICATION}/{pair.index}/_pause" and method == "POST":
        pair.paused = True
        return 200, {"acknowledged": True}
    if path == f"{REPLICATION}/{pair.index}/_resume" and method == "POST":
        pair.paused = False
        return 200, {"acknowledged": True}
    if path == f"{REPLICATION}/follower_stats":
        counts = {"operations_written": applied, "operations_read": applied, "failed_read_requests": 0,
                  "throttled_read_requests": 0, "failed_write_requests": 0, "throttled_write_requests": 0,
                  "follower_checkpoint": applied - 1, "leader_checkpoint": pair.docs - 1, "total_write_time_millis": 0}
        syncing = {} if pair.paused else {pair.index: counts}
        return 200, {"num_syncing_indices": len(syncing), "num_bootstrapping_indices": 0,
                     "num_paused_indices": int(pair.paused), "num_failed_indices": 0, "num_shard_tasks": 1,
                     "num_index_tasks": 1, **counts, "index_stats": syncing}
    if path.startswith("/_all/_settings"):
        return 200, {pair.index: {"settings": {FOLLOWER_SETTING: pair.index}}}
    if path.startswith("/_nodes"):
        return 200, _nodes("follower")
    if path == f"/{pair.index}/_stats":
        return 200, _shard_stats(pair.index, applied)
    return 200, {}


async def _handle(pair: Pair, answer: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target = lines[0].split(" ")[:2]
            length = next((int(v) for k, _, v in (h.partition(":") for h in lines[1:])
                           if k.strip().lower() == "content-length"), 0)
            body = await reader.readexactly(length) if length else b""
            status, doc = answer(pair, method, target.split("?")[0], body)
            data = json.dumps(doc).encode()
            writer.write(b"HTTP/1.1 %d OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                         % (status, len(data), data))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


async def serve(leader_port: int, follower_port: int, index: str, rate: float,
                ready: multiprocessing.synchronize.Event | None = None) -> None:
    pair = Pair(index, rate)
    leader = await asyncio.start_server(lambda r, w: _handle(pair, leader_answer, r, w), "127.0.0.1", leader_port)
    follower = await asyncio.start_server(lambda r, w: _handle(pair, follower_answer, r, w), "127.0.0.1",
                                          follower_port)
    if ready is not None:
        ready.set()
    async with leader, follower:
        await asyncio.gather(leader.serve_forever(), follower.serve_forever())


def _run(leader_port: int, follower_port: int, index: str, rate: float,
         ready: multiprocessing.synchronize.Event) -> None:
    asyncio.run(serve(leader_port, follower_port, index, rate, ready))


@contextlib.contextmanager
def running(index: str, rate: float) -> Iterator[tuple[str, str]]:
    """The pair on free ports for the ``with`` block: yields (leader host:port, follower host:port)."""
    ports = free_port(), free_port()
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_run, args=(*ports, index, rate, ready), daemon=True, name="bench-ccr-standin")
    proc.start()
    try:
        if not ready.wait(30):
            raise RuntimeError("the stand-in CCR pair did not start")
        yield f"127.0.0.1:{ports[0]}", f"127.0.0.1:{ports[1]}"
    finally:
        proc.kill()
        proc.join(10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leader-port", type=int, default=9298)
    ap.add_argument("--follower-port", type=int, default=9299)
    ap.add_argument("--index", default="knee")
    ap.add_argument("--rate", type=float, default=1000.0, help="documents/s the follower applies")
    a = ap.parse_args()
    print(f"leader 127.0.0.1:{a.leader_port}, follower 127.0.0.1:{a.follower_port} ({a.rate:g} docs/s); Ctrl-C "
          "to stop", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(a.leader_port, a.follower_port, a.index, a.rate))


if __name__ == "__main__":
    main()
