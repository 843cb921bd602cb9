"""The bulk hot path's HTTP/1.1 client against a real socket server on 127.0.0.1 that answers with
Content-Length, chunked and connection-close responses (Elasticsearch itself only shows the first)."""

from __future__ import annotations

import asyncio

import pytest

from bench.http.http1 import Http1Pool


async def _serve(answers: list[bytes], seen: list[bytes], connections: list[int]):
    """A server that reads one request per answer (head + Content-Length body) and replies in order."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            while answers:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length)
                seen.append(head + body)
                answer = answers.pop(0)
                if answer == b"HANG":
                    await asyncio.sleep(5)
                    return
                writer.write(answer)
                await writer.drain()
                if b"connection: close" in answer.lower():
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def test_content_length_chunked_keep_alive_and_close():
    async def run() -> None:
        answers = [
            b"HTTP/1.1 200 OK\r\ncontent-length: 16\r\n\r\n" + b'{"errors":false}',
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n6\r\n{\"a\":1\r\n1\r\n}\r\n0\r\n\r\n",
            b"HTTP/1.1 429 Too Many Requests\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}",
        ]
        seen: list[bytes] = []
        connections: list[int] = []
        server, port = await _serve(answers, seen, connections)
        async with server:
            pool = Http1Pool("127.0.0.1", port, headers={"Content-Type": "application/x-ndjson",
                                                         "Authorization": "Basic eDp5"},
                             limit=1, ssl_context=None, timeout=5)
            body = b'{"index":{}}\n{"n":1}\n'
            assert await pool.post("/_bulk", body) == (200, b'{"errors":false}')
            assert await pool.post("/_bulk", body, b"Content-Encoding: gzip\r\n") == (200, b'{"a":1}')
            assert await pool.post("/_bulk", body) == (429, b"{}")
            assert await pool.post("/_bulk", body) == (200, b"{}")  # a new connection after "close"
            pool.close()
        assert len(connections) == 2  # keep-alive for the first three, reconnect after close
        assert all(s.endswith(body) for s in seen)
        assert b"Authorization: Basic eDp5" in seen[0] and b"Content-Encoding: gzip" in seen[1]
        assert f"Host: 127.0.0.1:{port}".encode() in seen[0]

    asyncio.run(run())


def test_timeout_closes_the_connection_so_a_late_answer_is_never_misread():
    async def run() -> None:
        answers = [b"HANG", b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]
        seen: list[bytes] = []
        connections: list[int] = []
        server, port = await _serve(answers, seen, connections)
        async with server:
            pool = Http1Pool("127.0.0.1", port, headers={}, limit=1, ssl_context=None, timeout=0.5)
            with pytest.raises(asyncio.TimeoutError):
                await pool.post("/_bulk", b"x\n")
            assert await pool.post("/_bulk", b"y\n") == (200, b"{}")
            pool.close()
        assert len(connections) == 2

    asyncio.run(run())


def test_connection_refused_raises():
    async def run() -> None:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        pool = Http1Pool("127.0.0.1", port, headers={}, limit=1, ssl_context=None, timeout=2)
        with pytest.raises(OSError):
            await pool.post("/_bulk", b"x\n")

    asyncio.run(run())
