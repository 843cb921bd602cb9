"""A null bulk sink: an HTTP/1.1 server on 127.0.0.1 that reads every request body and answers
``_bulk`` with a canned success, ``_nodes`` with a minimal node list, everything else with ``{}``.

With ``count_docs`` it also keeps a ground truth for tools that report their own throughput: the
documents it received, answered as ``indices.indexing.index_total`` by ``GET _nodes/stats`` (as Elasticsearch
counts indexed documents). Counting every newline would cost the sink about a core at the rates drivers reach
here, so it counts the lines of every ``COUNT_EVERY``-th bulk body of a connection exactly and takes the
documents of the others as the mean of those counted; the share of bodies counted is in the answer.

It measures the load driver's ceiling: whatever docs/s bench reaches against it is what the client
side can do on this machine. Bodies are drained with a BufferedProtocol into one reused buffer, so the
sink costs little CPU per byte. ``python -m benchmarks.nullsink --port 9299 [--processes 2]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing as mp
import multiprocessing.synchronize
import signal
import socket
import sys
import time
from collections.abc import Iterator
from multiprocessing.process import BaseProcess
from typing import Any, cast

COUNT_EVERY = 16
SMALL_BUFFER = 64 << 10
LARGE_BUFFER = 4 << 20

_BULK_OK = b'{"errors":false}'
_NODES = (b'{"cluster_name":"null-sink","nodes":{"n0":{"name":"null-sink-0","version":"8.19.21",'
          b'"build_flavor":"default"}}}')


def _response(body: bytes) -> bytes:
    return (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-elastic-product: Elasticsearch\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


# What GET / answers on Elasticsearch: clients that ask for the version first (esrally, elasticsearch-py's
# info()) then start.
_ROOT = (b'{"name":"null-sink-0","cluster_name":"null-sink","version":{"number":"8.19.21","build_flavor":"default",'
         b'"build_type":"tar","build_hash":"0000000","build_date":"2026-01-01T00:00:00.000Z","build_snapshot":false,'
         b'"lucene_version":"9.12.2","minimum_wire_compatibility_version":"7.17.0",'
         b'"minimum_index_compatibility_version":"7.0.0"},"tagline":"You Know, for Search"}')
_RESP_BULK = _response(_BULK_OK)
_RESP_ROOT = _response(_ROOT)
_RESP_NODES = _response(_NODES)
_RESP_EMPTY = _response(b"{}")
_RESP_GEOIP = _response(b'{"stats":{},"nodes":{}}')


def _nodes_stats(counts: Any) -> bytes:
    """``_nodes/stats``: the fields Rally's and OSB's default telemetry read at a benchmark's start and end (JVM
    collectors and pools, all zero) and, when counting, the documents received as the indexing total (see the
    module doc)."""
    bulks = counted = docs = 0
    if counts is not None:
        with counts.get_lock():
            bulks, counted, docs = counts[0], counts[1], counts[2]
    total = round(bulks * docs / counted) if counted else 0
    zero_gc = {"collection_count": 0, "collection_time_in_millis": 0}
    node = {"name": "null-sink-0", "host": "127.0.0.1", "ip": "127.0.0.1",
            "jvm": {"gc": {"collectors": {"young": zero_gc, "old": zero_gc}},
                    "mem": {"pools": {p: {"peak_used_in_bytes": 0} for p in ("young", "survivor", "old")}}},
            "indices": {"indexing": {"index_total": total}},
            "ingest": {"total": {"count": 0, "time_in_millis": 0, "current": 0, "failed": 0}, "pipelines": {}}}
    return _response(json.dumps({"cluster_name": "null-sink", "nodes": {"n0": node}, "bulk_requests": bulks,
                                 "bulk_requests_counted": counted}).encode())


def stalled_wait(now: float, delay: float, seconds: float, period: float) -> float:
    """How long an answer ready at ``now`` (epoch seconds) waits: ``delay``, and when that lands in a stall (the
    first ``seconds`` of every ``period`` of the epoch clock, so that the test reading a trial can tell from a
    sample's scheduled wall-clock time whether it fell in one), until that stall's end."""
    release = now + delay
    phase = release % period
    return release - now + (seconds - phase if phase < seconds else 0.0)


class _Conn(asyncio.BufferedProtocol):
    transport: asyncio.Transport

    def __init__(self, stats: list[int], delay: float = 0.0, counts: Any = None,
                 stall: tuple[float, float] | None = None) -> None:
        self._delay = delay  # seconds before each answer: a server of known service time
        self._stall = stall  # (seconds, period): every answer due in such a window waits for its end
        # Small until the connection sends a large body: thousands of search connections must not cost 4 MB
        # each (zero-filled: 1,000 of them took the sink 15 s before it answered their first requests).
        self._buf = bytearray(SMALL_BUFFER)
        self._view = memoryview(self._buf)
        self._head = bytearray()  # a request head split across reads (rare)
        self._remaining = 0  # body bytes still to drain
        self._path = b""
        self._stats = stats  # [requests]
        self._counts = counts  # shared [bulk requests, bulk requests counted, documents in those], or None
        self._bulks = 0  # this connection's bulk requests
        self._counting = False  # this body's lines are counted
        self._lines = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a TCP server's: a full Transport

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._remaining > SMALL_BUFFER and len(self._buf) == SMALL_BUFFER:
            self._buf = bytearray(LARGE_BUFFER)  # bulk bodies: drained in few large reads
            self._view = memoryview(self._buf)
        return self._view

    def buffer_updated(self, nbytes: int) -> None:
        # Bodies are skipped by arithmetic; only request heads are ever copied (a few hundred bytes).
        buf, pos = self._buf, 0
        while pos < nbytes:
            if self._remaining:
                take = min(self._remaining, nbytes - pos)
                if self._counting:
                    self._lines += buf.count(b"\n", pos, pos + take)
                self._remaining -= take
                pos += take
                if not self._remaining:
                    self._answer()
                continue
            if self._head:
                before = len(self._head)
                chunk_end = min(nbytes, pos + 16384)
                self._head += buf[pos:chunk_end]
                end = self._head.find(b"\r\n\r\n")
                if end < 0:
                    pos = chunk_end
                    continue
                head = bytes(self._head[:end])
                self._head.clear()
                pos += end + 4 - before
            else:
                end = buf.find(b"\r\n\r\n", pos, nbytes)
                if end < 0:
                    self._head += buf[pos:nbytes]
                    return
                head = bytes(buf[pos:end])
                pos = end + 4
            self._start(head)

    def _start(self, head: bytes) -> None:
        first, _, headers = head.partition(b"\r\n")
        parts = first.split(b" ")
        self._path = parts[1] if len(parts) > 1 else b"/"
        length = 0
        for line in headers.split(b"\r\n"):
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v.strip())
        self._remaining = length
        if self._counts is not None and b"_bulk" in self._path:
            self._counting = self._bulks % COUNT_EVERY == 0
            self._bulks += 1
            self._lines = 0
        if not length:
            self._answer()

    def _answer(self) -> None:
        self._stats[0] += 1
        p = self._path
        if b"_bulk" in p:
            resp = _RESP_BULK
            if self._counts is not None:
                with self._counts.get_lock():
                    self._counts[0] += 1
                    if self._counting:
                        self._counts[1] += 1
                        self._counts[2] += self._lines // 2  # an action line and a document per document
                self._counting = False
        elif b"_nodes/stats" in p:
            resp = _nodes_stats(self._counts)
        elif b"_nodes" in p:
            resp = _RESP_NODES
        elif b"_ingest/geoip/stats" in p:
            resp = _RESP_GEOIP
        elif p in (b"/", b"/?"):
            resp = _RESP_ROOT
        else:
            resp = _RESP_EMPTY
        wait = self._delay if self._stall is None else stalled_wait(time.time(), self._delay, *self._stall)
        if wait > 0:
            # A constant delay keeps answers in request order on a connection; a stall releases answers at its
            # end, in the order they were held.
            asyncio.get_running_loop().call_later(wait, self._write, resp)
        else:
            self.transport.write(resp)

    def _write(self, resp: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(resp)


async def serve(port: int, *, reuse_port: bool = False, ready: multiprocessing.synchronize.Event | None = None,
                delay: float = 0.0, counts: Any = None, stall: tuple[float, float] | None = None) -> None:
    stats = [0]
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    # A listen queue as deep as the system allows (the kernel caps it at net.core.somaxconn; asyncio's default is
    # 100): thousands of clients connecting at once are then queued, as by Elasticsearch, not dropped.
    server = await loop.create_server(lambda: _Conn(stats, delay, counts, stall), sock=sock, backlog=65535)
    if ready is not None:
        ready.set()
    async with server:
        await server.serve_forever()


def _run(port: int, reuse_port: bool, ready: multiprocessing.synchronize.Event | None, delay: float = 0.0,
         counts: Any = None, stall: tuple[float, float] | None = None) -> None:
    from bench.driver.worker import raise_nofile_limit

    raise_nofile_limit()  # a socket per client: thousands of them
    asyncio.run(serve(port, reuse_port=reuse_port, ready=ready, delay=delay, counts=counts, stall=stall))


def start_in_background(port: int, processes: int = 1, *, delay: float = 0.0, count_docs: bool = False,
                        stall: tuple[float, float] | None = None) -> list[BaseProcess]:
    """Start the sink in ``processes`` processes sharing the port (SO_REUSEPORT); returns them. ``delay``:
    seconds every answer waits (a known service time); ``count_docs``: keep the documents received (module doc);
    ``stall``: (seconds, period), every answer due in the first ``seconds`` of each ``period`` of the epoch clock
    waits until then (a server that freezes: the coordinated-omission check)."""
    ctx = mp.get_context("spawn")
    counts = ctx.Array("q", 3) if count_docs else None  # shared by the processes, so any of them answers the total
    procs: list[BaseProcess] = []
    for _ in range(processes):
        ev = ctx.Event()
        p = ctx.Process(target=_run, args=(port, processes > 1, ev, delay, counts, stall), daemon=True,
                        name="bench-nullsink")
        p.start()
        if not ev.wait(30):
            raise RuntimeError("null sink did not start")
        procs.append(p)
    return procs


@contextlib.contextmanager
def running(processes: int = 1, **options: Any) -> Iterator[str]:
    """A sink on a free port for the ``with`` block (``start_in_background``'s options): yields its host:port, stops
    its processes after."""
    port = free_port()
    procs = start_in_background(port, processes, **options)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        for p in procs:
            p.kill()
            p.join(10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=9299)
    ap.add_argument("--processes", type=int, default=1)
    ap.add_argument("--delay-ms", type=float, default=0.0, help="answer every request after this many ms")
    ap.add_argument("--count-docs", action="store_true", help="answer GET _nodes/stats with the documents received")
    ap.add_argument("--stall", metavar="SECONDS/PERIOD", help="hold every answer due in the first SECONDS of each "
                    "PERIOD seconds of the epoch clock until then, e.g. 1/10")
    a = ap.parse_args()
    stall = None
    if a.stall:
        try:
            secs, period = (float(x) for x in a.stall.split("/"))
        except ValueError:
            ap.error(f"--stall {a.stall}: write SECONDS/PERIOD, e.g. 1/10")
        stall = (secs, period)
    procs = start_in_background(a.port, a.processes, delay=a.delay_ms / 1000.0, count_docs=a.count_docs,
                                stall=stall)
    print(f"null sink on 127.0.0.1:{a.port} ({a.processes} process(es)); Ctrl-C to stop", flush=True)
    # A plain kill (SIGTERM) must not leave the serving processes behind (daemonic ones only go at a normal exit).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        for p in procs:
            p.join()
    except KeyboardInterrupt:
        pass
    finally:
        for p in procs:
            p.terminate()


if __name__ == "__main__":
    main()
