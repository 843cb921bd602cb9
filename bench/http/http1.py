"""A minimal HTTP/1.1 keep-alive client: the hot path of every request bench sends to a cluster.

Why not aiohttp: per small request aiohttp builds a URL object, a request and a response object, header
multidicts, a payload and a writer, about 60 µs of Python per search here (2026-11-27, profiled with
benchmarks/search_profile.py), which capped one worker near 10,000 searches/s; and on Python < 3.12.9 it joins
request head and body into one new buffer before writing (its ``SKIP_WRITELINES``), one extra copy of every
multi-megabyte bulk body. Here a request is its head bytes (the fixed part prepared once per pool) and the body
handed to the transport separately, and an answer is parsed from the bytes as they arrive. Only what the clusters'
REST APIs need: any method, Content-Length, chunked and until-close responses, no body for HEAD/204/304,
gzip/deflate answers (sent only when a track asks for them with Accept-Encoding), keep-alive, TLS through the same
ssl context, timeouts, and one retry of an idempotent request whose reused keep-alive connection the server had
closed before answering (what HTTP clients do for a stale connection; a fresh connection is never retried).
"""

from __future__ import annotations

import asyncio
import ssl
import time
import zlib
from collections import deque
from typing import cast

_NO_BODY_STATUS = (204, 304)
_UNTIL_CLOSE = -2
# Bodies up to this size are joined to the head (one copy, one send() instead of two); larger ones are not copied.
_JOIN_BELOW = 64 << 10
# How often a pool looks for answers past their timeout: 20 times per (shortest) timeout, at most every second and
# every 10 ms at the least, so a timeout fires up to 5 % late.
SWEEPS_PER_TIMEOUT = 20
MAX_SWEEP_INTERVAL = 1.0
MIN_SWEEP_INTERVAL = 0.01
_CHUNKED = -1


class StaleConnection(ConnectionResetError):
    """A reused keep-alive connection was closed by the server before any byte of the answer arrived."""


class _Response(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self._status = 0
        self._length: int | None = None  # body length, _CHUNKED, _UNTIL_CLOSE; None while the head is incomplete
        self._body_start = 0
        self._head_only = False  # an answer to HEAD: headers only, whatever Content-Length says
        self._encoding = b""
        self.keep_alive = True
        self.closed = False
        self.reused = False  # this request is not the connection's first

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a TCP (or TLS) connection's: a full Transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        w = self._waiter
        if w is None or w.done():
            return
        if self._length == _UNTIL_CLOSE:
            w.set_result((self._status, self._decoded(bytes(self._buf[self._body_start:]))))
        elif self.reused and not self._buf:
            w.set_exception(StaleConnection("the server closed the keep-alive connection before answering"))
        else:
            w.set_exception(exc or ConnectionResetError("connection closed by the server"))

    def expect(self, head_only: bool = False) -> asyncio.Future[tuple[int, bytes]]:
        self._buf.clear()
        self._length = None
        self._head_only = head_only
        self._encoding = b""
        self._waiter = asyncio.get_running_loop().create_future()
        return self._waiter

    def data_received(self, data: bytes) -> None:
        self._buf += data
        if self._length is None and not self._head():
            return
        if self._length == _UNTIL_CLOSE:
            return
        if self._length == _CHUNKED:
            body = _dechunk(self._buf, self._body_start)
            if body is None:
                return
        else:
            assert self._length is not None
            if len(self._buf) - self._body_start < self._length:
                return
            body = bytes(self._buf[self._body_start:self._body_start + self._length])
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result((self._status, self._decoded(body)))

    def _head(self) -> bool:
        """Parse the answer's head once complete (skipping interim 1xx heads); False while incomplete."""
        while True:
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                return False
            lines = bytes(self._buf[:end]).split(b"\r\n")
            self._status = int(lines[0][9:12])
            if 100 <= self._status < 200:
                del self._buf[:end + 4]
                continue
            break
        length = _UNTIL_CLOSE
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            k = k.strip().lower()
            if k == b"content-length":
                length = int(v.strip())
            elif k == b"transfer-encoding" and b"chunked" in v.lower():
                length = _CHUNKED
            elif k == b"connection" and v.strip().lower() == b"close":
                self.keep_alive = False
            elif k == b"content-encoding":
                self._encoding = v.strip().lower()
        if self._head_only or self._status in _NO_BODY_STATUS:
            length = 0
        if length == _UNTIL_CLOSE:
            self.keep_alive = False
        self._length = length
        self._body_start = end + 4
        return True

    def _decoded(self, body: bytes) -> bytes:
        if self._encoding in (b"gzip", b"deflate") and body:
            return zlib.decompress(body, 47)  # 47: gzip or zlib header, detected
        return body


def _expire(waiter: asyncio.Future[tuple[int, bytes]]) -> None:
    if not waiter.done():
        waiter.set_exception(asyncio.TimeoutError())


def _dechunk(buf: bytearray, pos: int) -> bytes | None:
    """The body of a complete chunked message, or None while incomplete."""
    out = bytearray()
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return None
        size = int(bytes(buf[pos:eol]).split(b";")[0], 16)
        if size == 0:
            return bytes(out) if buf.find(b"\r\n", eol + 2) >= 0 else None
        if len(buf) < eol + 2 + size + 2:
            return None
        out += buf[eol + 2:eol + 2 + size]
        pos = eol + 2 + size + 2


def header_bytes(headers: dict[str, str]) -> bytes:
    """Headers as the lines of a request head."""
    return "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode("latin-1")


class Http1Pool:
    """Keep-alive connections to one host:port, at most ``limit`` at once. ``headers`` go with every request
    (Host is added); a request's own header lines come as bytes."""

    def __init__(self, host: str, port: int, *, headers: dict[str, str], limit: int,
                 ssl_context: ssl.SSLContext | None, timeout: float | None, send_buffer: int = 0,
                 prefix: str = "") -> None:
        self.host, self.port = host, port
        self._prefix = prefix.encode()  # the path of a host given as a URL with one (a proxy's)
        self._ssl = ssl_context
        self._timeout = timeout
        self._send_buffer = send_buffer
        self._idle: deque[_Response] = deque()
        self._limit = max(1, limit)
        self._sem = asyncio.Semaphore(self._limit)
        self._open: set[_Response] = set()
        self._deadlines: dict[asyncio.Future[tuple[int, bytes]], float] = {}  # answers awaited -> when they expire
        self._sweeper: asyncio.TimerHandle | None = None
        self._interval = (MAX_SWEEP_INTERVAL if timeout is None
                          else max(MIN_SWEEP_INTERVAL, min(MAX_SWEEP_INTERVAL, timeout / SWEEPS_PER_TIMEOUT)))
        self._head_tail = header_bytes({"Host": f"{host}:{port}", **headers})

    async def _connect(self) -> _Response:
        loop = asyncio.get_running_loop()
        _, proto = await loop.create_connection(_Response, self.host, self.port, ssl=self._ssl,
                                                server_hostname=self.host if self._ssl else None)
        if self._send_buffer and proto.transport is not None:
            import socket

            sock = proto.transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self._send_buffer)
        self._open.add(proto)
        return proto

    async def connect(self, n: int) -> list[BaseException]:
        """Open up to ``n`` idle connections now (before a measurement, so that connecting is not in it); returns
        why the ones that could not be opened failed (their requests will try again, and fail as requests)."""
        n = min(n, self._limit) - len(self._idle)
        opened = await asyncio.gather(*(asyncio.wait_for(self._connect(), self._timeout) for _ in range(max(0, n))),
                                      return_exceptions=True)
        failed = []
        for c in opened:
            if isinstance(c, _Response):
                self._idle.append(c)
            else:
                failed.append(c)
        return failed

    async def post(self, path: str, body: bytes, extra_headers: bytes = b"") -> tuple[int, bytes]:
        return await self.request("POST", path, body, extra_headers)

    async def request(self, method: str, target: str, body: bytes | None, extra_headers: bytes = b"", *,
                      timeout: float | None = None, retry_stale: bool = False) -> tuple[int, bytes]:
        """One request: ``target`` is the path with its query string, already encoded; ``extra_headers`` header
        lines. ``retry_stale``: the request may be sent again on a fresh connection when a reused one turns out
        to have been closed by the server before answering (idempotent requests only)."""
        head = method.encode() + b" " + self._prefix + target.encode() + b" HTTP/1.1\r\n" + self._head_tail + extra_headers
        if body is not None:
            head += b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
        elif method in ("POST", "PUT"):
            head += b"Content-Length: 0\r\n\r\n"
        else:
            head += b"\r\n"
        async with self._sem:
            try:
                return await self._exchange(head, body, method == "HEAD", timeout or self._timeout)
            except StaleConnection:
                if not retry_stale:
                    raise
            return await self._exchange(head, body, method == "HEAD", timeout or self._timeout, fresh=True)

    async def _exchange(self, head: bytes, body: bytes | None, head_only: bool, timeout: float | None, *,
                        fresh: bool = False) -> tuple[int, bytes]:
        conn = None
        while self._idle and not fresh:
            c = self._idle.pop()
            if not c.closed:
                conn = c
                break
            self._open.discard(c)
        if conn is None:
            conn = await asyncio.wait_for(self._connect(), timeout)
        waiter = conn.expect(head_only)
        assert conn.transport is not None
        if body and len(body) > _JOIN_BELOW:
            conn.transport.write(head)  # a bulk body goes to the socket as it is, uncopied
            conn.transport.write(body)
        else:
            conn.transport.write(head + body if body else head)  # one send() for a small request
        # A sweep every so often expires the answers past their deadline, instead of a timer per request
        # (asyncio.wait_for wraps every request in another future and callbacks; a call_later is a heap entry
        # made and cancelled): both measurable at tens of thousands of requests per second.
        if timeout is not None:  # None: Rally's timeout:None, no timeout
            self._deadlines[waiter] = time.monotonic() + timeout
            if timeout / SWEEPS_PER_TIMEOUT < self._interval:
                self._interval = max(MIN_SWEEP_INTERVAL, timeout / SWEEPS_PER_TIMEOUT)
            if self._sweeper is None:
                self._sweeper = asyncio.get_running_loop().call_later(self._interval, self._sweep)
        try:
            result = await waiter
        except BaseException:
            conn.transport.close()  # a late answer must not be read as the next request's
            self._open.discard(conn)
            raise
        finally:
            self._deadlines.pop(waiter, None)
        conn.reused = True
        if conn.keep_alive and not conn.closed:
            self._idle.append(conn)
        else:
            conn.transport.close()
            self._open.discard(conn)
        return result

    def _sweep(self) -> None:
        now = time.monotonic()
        for waiter, deadline in list(self._deadlines.items()):
            if deadline <= now:
                _expire(waiter)
        self._sweeper = (asyncio.get_running_loop().call_later(self._interval, self._sweep) if self._deadlines
                         else None)

    def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for c in [*self._idle, *self._open]:
            if c.transport is not None:
                c.transport.close()
        self._idle.clear()
        self._open.clear()
