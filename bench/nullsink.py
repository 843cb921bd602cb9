"""A null bulk sink: an HTTP/1.1 server on 127.0.0.1 that reads every request body and answers
``_bulk`` with a canned success, ``_nodes`` with a minimal node list, everything else with ``{}``.

It measures the load driver's ceiling: whatever docs/s bench reaches against it is what the client
side can do on this machine. Bodies are drained with a BufferedProtocol into one reused buffer, so the
sink costs little CPU per byte. ``python -m bench.nullsink --port 9299 [--processes 2]``.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import socket

_BULK_OK = b'{"errors":false}'
_NODES = (b'{"cluster_name":"null-sink","nodes":{"n0":{"name":"null-sink-0","version":"8.19.21",'
          b'"build_flavor":"default"}}}')


def _response(body: bytes) -> bytes:
    return (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-elastic-product: Elasticsearch\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


# What GET / answers on Elasticsearch: clients that ask for the version first (esrally, elasticsearch-py's
# info()) then start.
_ROOT = (b'{"name":"null-sink-0","cluster_name":"null-sink","version":{"number":"8.19.21","build_flavor":"default",'
         b'"lucene_version":"9.12.2","minimum_wire_compatibility_version":"7.17.0",'
         b'"minimum_index_compatibility_version":"7.0.0"},"tagline":"You Know, for Search"}')
_RESP_BULK = _response(_BULK_OK)
_RESP_ROOT = _response(_ROOT)
_RESP_NODES = _response(_NODES)
_RESP_EMPTY = _response(b"{}")


class _Conn(asyncio.BufferedProtocol):
    def __init__(self, stats: list[int], delay: float = 0.0) -> None:
        self._delay = delay  # seconds before each answer: a server of known service time
        self._buf = bytearray(4 << 20)
        self._view = memoryview(self._buf)
        self._head = bytearray()  # a request head split across reads (rare)
        self._remaining = 0  # body bytes still to drain
        self._path = b""
        self._stats = stats  # [requests]

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._view

    def buffer_updated(self, nbytes: int) -> None:
        # Bodies are skipped by arithmetic; only request heads are ever copied (a few hundred bytes).
        buf, pos = self._buf, 0
        while pos < nbytes:
            if self._remaining:
                take = min(self._remaining, nbytes - pos)
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
        if not length:
            self._answer()

    def _answer(self) -> None:
        self._stats[0] += 1
        p = self._path
        if b"_bulk" in p:
            resp = _RESP_BULK
        elif b"_nodes" in p:
            resp = _RESP_NODES
        elif p in (b"/", b"/?"):
            resp = _RESP_ROOT
        else:
            resp = _RESP_EMPTY
        if self._delay > 0:
            # A constant delay keeps answers in request order on a connection.
            asyncio.get_running_loop().call_later(self._delay, self._write, resp)
        else:
            self.transport.write(resp)  # type: ignore[attr-defined]

    def _write(self, resp: bytes) -> None:
        if not self.transport.is_closing():  # type: ignore[attr-defined]
            self.transport.write(resp)  # type: ignore[attr-defined]


async def serve(port: int, *, reuse_port: bool = False, ready: object | None = None, delay: float = 0.0) -> None:
    stats = [0]
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    server = await loop.create_server(lambda: _Conn(stats, delay), sock=sock)
    if ready is not None:
        ready.set()  # type: ignore[attr-defined]
    async with server:
        await server.serve_forever()


def _run(port: int, reuse_port: bool, ready: object | None, delay: float = 0.0) -> None:
    asyncio.run(serve(port, reuse_port=reuse_port, ready=ready, delay=delay))


def start_in_background(port: int, processes: int = 1, *, delay: float = 0.0) -> list[mp.Process]:
    """Start the sink in ``processes`` processes sharing the port (SO_REUSEPORT); returns them. ``delay``:
    seconds every answer waits (a known service time)."""
    ctx = mp.get_context("spawn")
    procs = []
    for _ in range(processes):
        ev = ctx.Event()
        p = ctx.Process(target=_run, args=(port, processes > 1, ev, delay), daemon=True, name="bench-nullsink")
        p.start()
        if not ev.wait(30):
            raise RuntimeError("null sink did not start")
        procs.append(p)
    return procs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=9299)
    ap.add_argument("--processes", type=int, default=1)
    ap.add_argument("--delay-ms", type=float, default=0.0, help="answer every request after this many ms")
    a = ap.parse_args()
    procs = start_in_background(a.port, a.processes, delay=a.delay_ms / 1000.0)
    print(f"null sink on 127.0.0.1:{a.port} ({a.processes} process(es)); Ctrl-C to stop", flush=True)
    try:
        for p in procs:
            p.join()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
