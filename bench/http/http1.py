"""A minimal HTTP/1.1 keep-alive client for the bulk hot path.

Why not aiohttp here: on Python < 3.12.9 aiohttp joins request head and body into one new buffer
before writing (its ``SKIP_WRITELINES``), i.e. one extra copy of every multi-megabyte bulk body. Here
the head and the prepared body are handed to the transport separately, so a body goes from the
prepared ``bytes`` straight into the kernel. Only what bulk needs: POST, Content-Length or chunked
responses, keep-alive, TLS through the same ssl context, timeouts.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from typing import cast


class _Response(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self._status = 0
        self._length: int | None = None  # body length, or -1 for chunked
        self._body_start = 0
        self.keep_alive = True
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a TCP (or TLS) connection's: a full Transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc or ConnectionResetError("connection closed by the server"))

    def expect(self) -> asyncio.Future[tuple[int, bytes]]:
        self._buf.clear()
        self._length = None
        self._waiter = asyncio.get_running_loop().create_future()
        return self._waiter

    def data_received(self, data: bytes) -> None:
        self._buf += data
        if self._length is None:
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self._buf[:end]).split(b"\r\n")
            self._status = int(head[0][9:12])
            self._length = 0
            for line in head[1:]:
                k, _, v = line.partition(b":")
                k = k.strip().lower()
                if k == b"content-length":
                    self._length = int(v.strip())
                elif k == b"transfer-encoding" and b"chunked" in v.lower():
                    self._length = -1
                elif k == b"connection" and v.strip().lower() == b"close":
                    self.keep_alive = False
            self._body_start = end + 4
        if self._length == -1:
            body = _dechunk(self._buf, self._body_start)
            if body is None:
                return
        else:
            if len(self._buf) - self._body_start < self._length:
                return
            body = bytes(self._buf[self._body_start:self._body_start + self._length])
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result((self._status, body))


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


class Http1Pool:
    """Keep-alive connections to one host:port, at most ``limit`` at once."""

    def __init__(self, host: str, port: int, *, headers: dict[str, str], limit: int,
                 ssl_context: ssl.SSLContext | None, timeout: float | None, send_buffer: int = 0) -> None:
        self.host, self.port = host, port
        self._ssl = ssl_context
        self._timeout = timeout
        self._send_buffer = send_buffer
        self._idle: deque[_Response] = deque()
        self._sem = asyncio.Semaphore(max(1, limit))
        fixed = {"Host": f"{host}:{port}", **headers}
        self._head_tail = "".join(f"{k}: {v}\r\n" for k, v in fixed.items()).encode()

    async def _connect(self) -> _Response:
        loop = asyncio.get_running_loop()
        _, proto = await loop.create_connection(_Response, self.host, self.port, ssl=self._ssl,
                                                server_hostname=self.host if self._ssl else None)
        if self._send_buffer and proto.transport is not None:
            import socket

            sock = proto.transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self._send_buffer)
        return proto

    async def post(self, path: str, body: bytes, extra_headers: bytes = b"") -> tuple[int, bytes]:
        async with self._sem:
            conn = None
            while self._idle:
                c = self._idle.pop()
                if not c.closed:
                    conn = c
                    break
            if conn is None:
                conn = await asyncio.wait_for(self._connect(), self._timeout)
            waiter = conn.expect()
            assert conn.transport is not None
            conn.transport.write(b"POST " + path.encode() + b" HTTP/1.1\r\n" + self._head_tail + extra_headers
                                 + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
            conn.transport.write(body)
            # A timer on the answer's future instead of asyncio.wait_for, which wraps every request in another
            # future and callbacks: measurable at thousands of bulks per second.
            timer = (asyncio.get_running_loop().call_later(self._timeout, _expire, waiter)
                     if self._timeout is not None else None)  # None: Rally's timeout:None, no timeout
            try:
                result = await waiter
            except BaseException:
                conn.transport.close()  # a late answer must not be read as the next request's
                raise
            finally:
                if timer is not None:
                    timer.cancel()
            if conn.keep_alive and not conn.closed:
                self._idle.append(conn)
            else:
                conn.transport.close()
            return result

    def close(self) -> None:
        while self._idle:
            c = self._idle.pop()
            if c.transport is not None:
                c.transport.close()
