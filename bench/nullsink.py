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


_RESP_BULK = _response(_BULK_OK)
_RESP_NODES = _response(_NODES)
_RESP_EMPTY = _response(b"{}")


class _Conn(asyncio.BufferedProtocol):
    def __init__(self, stats: list[int]) -> None:
        self._buf = bytearray(1 << 20)
        self._view = memoryview(self._buf)
        self._head = bytearray()
        self._remaining = 0
        self._path = b""
        self._stats = stats  # [requests, body bytes]

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._view

    def buffer_updated(self, nbytes: int) -> None:
        start = 0
        while start < nbytes:
            if self._remaining:
                take = min(self._remaining, nbytes - start)
                self._remaining -= take
                self._stats[1] += take
                start += take
                if not self._remaining:
                    self._answer()
                continue
            self._head += self._buf[start:nbytes]
            start = nbytes
            end = self._head.find(b"\r\n\r\n")
            if end < 0:
                continue
            head, rest = bytes(self._head[:end]), bytes(self._head[end + 4:])
            self._head.clear()
            first, _, headers = head.partition(b"\r\n")
            parts = first.split(b" ")
            self._path = parts[1] if len(parts) > 1 else b"/"
            length = 0
            for line in headers.split(b"\r\n"):
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v.strip())
            if length == 0:
                self._answer()
                if rest:
                    self._head += rest
                    self.buffer_updated_from_head()
                continue
            take = min(length, len(rest))
            self._remaining = length - take
            self._stats[1] += take
            leftover = rest[take:]
            if not self._remaining:
                self._answer()
                if leftover:
                    self._head += leftover
                    self.buffer_updated_from_head()

    def buffer_updated_from_head(self) -> None:
        # Pipelined bytes already moved into _head: re-run the parser on them.
        pending = bytes(self._head)
        self._head.clear()
        n = len(pending)
        if n > len(self._buf):
            self._buf = bytearray(n)
            self._view = memoryview(self._buf)
        self._buf[:n] = pending
        self.buffer_updated(n)

    def _answer(self) -> None:
        self._stats[0] += 1
        p = self._path
        if b"_bulk" in p:
            self.transport.write(_RESP_BULK)  # type: ignore[attr-defined]
        elif b"_nodes" in p:
            self.transport.write(_RESP_NODES)  # type: ignore[attr-defined]
        else:
            self.transport.write(_RESP_EMPTY)  # type: ignore[attr-defined]


async def serve(port: int, *, reuse_port: bool = False, ready: object | None = None) -> None:
    stats = [0, 0]
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    server = await loop.create_server(lambda: _Conn(stats), sock=sock)
    if ready is not None:
        ready.set()  # type: ignore[attr-defined]
    async with server:
        await server.serve_forever()


def _run(port: int, reuse_port: bool, ready: object | None) -> None:
    asyncio.run(serve(port, reuse_port=reuse_port, ready=ready))


def start_in_background(port: int, processes: int = 1) -> list[mp.Process]:
    """Start the sink in ``processes`` processes sharing the port (SO_REUSEPORT); returns them."""
    ctx = mp.get_context("spawn")
    procs = []
    for _ in range(processes):
        ev = ctx.Event()
        p = ctx.Process(target=_run, args=(port, processes > 1, ev), daemon=True, name="bench-nullsink")
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
    a = ap.parse_args()
    procs = start_in_background(a.port, a.processes)
    print(f"null sink on 127.0.0.1:{a.port} ({a.processes} process(es)); Ctrl-C to stop", flush=True)
    try:
        for p in procs:
            p.join()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
