"""The null sink's ground truth: the documents it received, answered by ``GET _nodes/stats`` as Elasticsearch's
``indices.indexing.index_total``, over several connections and sink processes (the side-by-side benchmark reads
every tool's true throughput from it)."""

from __future__ import annotations

import json
import socket

import pytest

from benchmarks.nullsink import COUNT_EVERY, free_port, start_in_background


def _request(sock: socket.socket, method: str, path: str, body: bytes = b"") -> bytes:
    sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    while len(rest) < length:
        rest += sock.recv(65536)
    return rest


def _bulk(docs: int) -> bytes:
    # Documents of different lengths, so a count by bytes would not come out right.
    return b"".join(b'{"index":{"_index":"i"}}\n{"n":%d,"pad":"%s"}\n' % (i, b"x" * (i % 97)) for i in range(docs))


@pytest.fixture(scope="module")
def sink():
    port = free_port()
    procs = start_in_background(port, 2, count_docs=True)
    yield port
    for p in procs:
        p.terminate()
        p.join(10)


def test_documents_received_are_the_indexing_total(sink):
    conns = [socket.create_connection(("127.0.0.1", sink)) for _ in range(3)]
    try:
        sent = 0
        for i in range(3 * COUNT_EVERY + 5):
            docs = 250
            assert json.loads(_request(conns[i % 3], "POST", "/_bulk", _bulk(docs))) == {"errors": False}
            sent += docs
        stats = json.loads(_request(conns[0], "GET", "/_nodes/stats/indices/indexing"))
    finally:
        for c in conns:
            c.close()
    assert stats["bulk_requests"] == 3 * COUNT_EVERY + 5
    # Each connection counts its first body and every COUNT_EVERY-th after it exactly.
    assert stats["bulk_requests_counted"] == sum(len(range(0, n, COUNT_EVERY))
                                                 for n in (COUNT_EVERY + 2, COUNT_EVERY + 2, COUNT_EVERY + 1))
    totals = [n["indices"]["indexing"]["index_total"] for n in stats["nodes"].values()]
    assert totals == [sent]
    # What Rally's default telemetry reads at a benchmark's start is there (it stops a race when missing).
    node = next(iter(stats["nodes"].values()))
    assert node["jvm"]["gc"]["collectors"]["old"]["collection_count"] == 0
    assert "total" in node["ingest"]


def test_root_answers_as_elasticsearch(sink):
    with socket.create_connection(("127.0.0.1", sink)) as c:
        root = json.loads(_request(c, "GET", "/"))
    assert root["version"]["number"] and root["version"]["build_hash"]
