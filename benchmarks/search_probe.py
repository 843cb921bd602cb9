"""The ceiling a load driver's search path is measured against: bare asyncio sending one prebuilt search request
over and over, no bookkeeping.

One process, ``--clients`` keep-alive HTTP/1.1 connections (asyncio protocols, no streams), each sending the same
``POST /<index>/_search`` with a constant ``match_all`` body, reading the whole answer, sending the next, for
``--seconds``. No samples, no schedule, no latency: only requests answered per second and the process's CPU.
Prints one JSON object. Used by benchmarks/search_ceiling.py; runnable alone against any HTTP server that answers
searches (the null sink, a node):

    python benchmarks/search_probe.py --port PORT [--clients 64] [--seconds 20] [--index logs]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import time
from array import array
from pathlib import Path
from typing import cast

import psutil

BODY = b'{"query":{"match_all":{}},"size":10}'


def request(host: str, port: int, index: str) -> bytes:
    return (b"POST /%s/_search HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (index.encode(), host.encode(), port, len(BODY), BODY))


class _Client(asyncio.Protocol):
    """Sends the request, waits for one complete answer (Content-Length framing), sends it again."""

    def __init__(self, req: bytes, until: float, counts: list[int], took: array[float],
                 done: asyncio.Future[None]) -> None:
        self.req, self.until, self.counts, self.took, self.done = req, until, counts, took, done
        self.buf = b""
        self.sent = 0.0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.sent = time.perf_counter()
        self.transport.write(self.req)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return
        head = self.buf[:end]
        i = head.lower().find(b"content-length:")
        length = int(head[i + 15:head.find(b"\r\n", i) if head.find(b"\r\n", i) > 0 else None]) if i >= 0 else 0
        if len(self.buf) < end + 4 + length:
            return
        if not head.startswith(b"HTTP/1.1 2"):
            self.done.set_exception(RuntimeError(f"the server answered {head[:40]!r}"))
            return
        self.buf = self.buf[end + 4 + length:]
        self.counts[0] += 1
        now = time.perf_counter()
        self.took.append(now - self.sent)
        if time.monotonic() < self.until:
            assert self.transport is not None
            self.sent = now
            self.transport.write(self.req)
        else:
            assert self.transport is not None
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def run(host: str, port: int, clients: int, seconds: float, index: str) -> tuple[int, float, array[float]]:
    loop = asyncio.get_running_loop()
    counts = [0]
    took: array[float] = array("d")
    req = request(host, port, index)
    start = time.monotonic()
    dones = []
    for _ in range(clients):
        done: asyncio.Future[None] = loop.create_future()
        dones.append(done)
        await loop.create_connection(functools.partial(_Client, req, start + seconds, counts, took, done), host, port)
    await asyncio.gather(*dones)
    return counts[0], time.monotonic() - start, took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--index", default="logs")
    ap.add_argument("--json-file", help="also write the result here")
    a = ap.parse_args()
    me = psutil.Process()
    cpu0 = sum(me.cpu_times()[:2])
    n, wall, took = asyncio.run(run(a.host, a.port, a.clients, a.seconds, a.index))
    cpu = sum(me.cpu_times()[:2]) - cpu0
    ms = sorted(took)
    result = json.dumps({"ops_per_s": round(n / wall), "cpu_cores": round(cpu / wall, 2),
                         "seconds": round(wall, 1), "clients": a.clients,
                         "latency_ms_p50_p99": [round(ms[len(ms) // 2] * 1000, 2),
                                                round(ms[min(len(ms) - 1, int(len(ms) * 0.99))] * 1000, 2)]})
    print(result)
    if a.json_file:
        Path(a.json_file).write_text(result + "\n")


if __name__ == "__main__":
    main()
