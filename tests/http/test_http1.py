"""The bulk hot path's HTTP/1.1 client against a real socket server on 127.0.0.1 that answers with
Content-Length, chunked and connection-close responses (Elasticsearch itself only shows the first)."""

from __future__ import annotations

import asyncio

import pytest

from bench.http.client import ClusterTarget, RawHttp, request_target
from bench.http.http1 import Http1Pool, StaleConnection


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
                if answer == b"DROP":  # read the request, close without a byte of answer
                    break
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


def test_any_method_head_no_content_interim_gzip_and_until_close_answers():
    async def run() -> None:
        import gzip

        packed = gzip.compress(b'{"hits":1}')
        answers = [
            b"HTTP/1.1 200 OK\r\ncontent-length: 321\r\n\r\n",  # HEAD: the length of a body never sent
            b"HTTP/1.1 204 No Content\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\n{}",
            b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: %d\r\n\r\n" % len(packed) + packed,
            b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n{\"until\":\"close\"}",
        ]
        seen: list[bytes] = []
        connections: list[int] = []
        server, port = await _serve(answers, seen, connections)
        async with server:
            async with RawHttp(ClusterTarget(hosts=[f"127.0.0.1:{port}"]), connections=1) as http:
                assert await http.send("HEAD", "/logs") == (200, b"")
                assert await http.send("DELETE", "/logs/_doc/1") == (204, b"")
                assert await http.send("PUT", "/logs", b'{"a":1}', params={"wait_for_active_shards": 1,
                                                                           "pretty": True}) == (201, b"{}")
                assert await http.request("GET", "/<logs-{now/d}>/_search", headers={"Accept-Encoding": "gzip"}) \
                    == (200, {"hits": 1})
                assert await http.send("GET", "/_cat/indices?v", params={"h": "index,docs.count"}) \
                    == (200, b'{"until":"close"}')
        heads = [s.split(b"\r\n\r\n")[0] for s in seen]
        assert heads[0].startswith(b"HEAD /logs HTTP/1.1") and b"Content-Length" not in heads[0]
        assert heads[2].startswith(b"PUT /logs?wait_for_active_shards=1&pretty=true HTTP/1.1")
        assert b"Content-Length: 7" in heads[2] and seen[2].endswith(b'{"a":1}')
        assert heads[3].startswith(b"GET /%3Clogs-%7Bnow/d%7D%3E/_search HTTP/1.1") and b"Accept-Encoding: gzip" in heads[3]
        assert heads[4].startswith(b"GET /_cat/indices?v&h=index,docs.count HTTP/1.1")
        assert len(connections) == 1

    asyncio.run(run())


def test_a_stale_keep_alive_connection_is_retried_once_only_when_the_request_is_idempotent():
    async def run() -> None:
        ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"
        seen: list[bytes] = []
        connections: list[int] = []
        server, port = await _serve([ok, b"DROP", ok, b"DROP", b"DROP"], seen, connections)
        async with server:
            pool = Http1Pool("127.0.0.1", port, headers={}, limit=1, ssl_context=None, timeout=5)
            assert await pool.request("GET", "/_search", None) == (200, b"{}")
            # the server drops the reused connection: sent again, once, on a new one
            assert await pool.request("POST", "/logs/_search", b"{}", retry_stale=True) == (200, b"{}")
            with pytest.raises(StaleConnection):  # not idempotent (a bulk): never sent twice
                await pool.post("/_bulk", b"x\n")
            # a fresh connection closed without an answer is a failure, not retried
            with pytest.raises(ConnectionResetError) as e:
                await pool.request("GET", "/_search", None, retry_stale=True)
            assert not isinstance(e.value, StaleConnection)
            pool.close()
        assert len(seen) == 5 and len(connections) == 3

    asyncio.run(run())


def test_request_targets_are_encoded_once_as_urls_carry_them():
    assert request_target("/logs-*,other/_search") == "/logs-*,other/_search"
    assert request_target("logs/_doc/a b") == "/logs/_doc/a%20b"
    assert request_target("/idx/_doc/already%2Fencoded?q=a:b&x=1") == "/idx/_doc/already%2Fencoded?q=a:b&x=1"
