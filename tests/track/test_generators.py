"""Document generators: deterministic, valid for the built-in tracks, fast."""

from __future__ import annotations

import hashlib
import io
import json
import re
import time
from datetime import datetime, timezone

import pytest

from bench.track.generators import HTTP_LOGS_START, NGINX_START_MS, generate, generate_file
from bench.util.errors import TrackError

COMBINED = re.compile(
    r"^(?P<ip>\d+\.\d+\.\d+\.\d+) - - \[(?P<t>\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d \+0000)\] "
    r'"(?P<method>[A-Z]+) (?P<path>/\S*) HTTP/1\.1" (?P<status>\d{3}) (?P<bytes>\d+) '
    r'"(?P<ref>[^"]*)" "(?P<ua>[^"]+)"$'
)


def _gen(name: str, seed: int, count: int) -> bytes:
    b = io.BytesIO()
    generate(name, seed, count, b)
    return b.getvalue()


@pytest.mark.parametrize("name", ["nginx", "http_logs"])
def test_same_seed_same_bytes_other_seed_other_bytes(name):
    a, b = _gen(name, 42, 30_000), _gen(name, 42, 30_000)
    assert hashlib.sha256(a).digest() == hashlib.sha256(b).digest()
    assert a.count(b"\n") == 30_000 and a.endswith(b"\n")
    assert _gen(name, 43, 30_000) != a
    # a prefix of a longer run is the shorter run: count only cuts
    assert _gen(name, 42, 45_000).startswith(a)


def test_nginx_documents():
    lines = _gen("nginx", 1, 25_000).decode().splitlines()
    ids = set()
    prev_ms = NGINX_START_MS
    for line in lines:
        d = json.loads(line)
        assert set(d) == {
            "id",
            "routing_no",
            "batch_number",
            "message",
            "random_no",
            "ip",
            "now_local",
            "now_unix",
        }
        assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}", d["id"])
        ids.add(d["id"])
        m = COMBINED.match(d["message"])
        assert m, d["message"]
        assert m["ip"] == d["ip"]
        ts = datetime.fromtimestamp(d["now_unix"] / 1000, timezone.utc)
        assert m["t"] == ts.strftime("%d/%b/%Y:%H:%M:%S +0000")
        assert d["now_local"] == ts.strftime("%Y-%m-%d %H:%M:%S.") + f"{d['now_unix'] % 1000:03d}"
        assert d["now_unix"] >= prev_ms
        prev_ms = d["now_unix"]
        assert isinstance(d["batch_number"], int) and isinstance(d["random_no"], int)
    assert len(ids) == len(lines)  # ids are unique
    statuses = {COMBINED.match(json.loads(x)["message"])["status"] for x in lines}
    assert {"200", "404", "500"} <= statuses  # varied, not constant


def test_http_logs_documents_like_rallys():
    lines = _gen("http_logs", 1, 25_000).decode().splitlines()
    prev = HTTP_LOGS_START
    for line in lines:
        d = json.loads(line)
        assert set(d) == {"@timestamp", "clientip", "request", "status", "size"}
        assert isinstance(d["@timestamp"], int) and d["@timestamp"] >= prev
        prev = d["@timestamp"]
        assert re.fullmatch(r"(GET|HEAD|POST) /\S* HTTP/1\.[01]", d["request"])
        assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", d["clientip"])
        assert isinstance(d["status"], int) and isinstance(d["size"], int)
    # same era as Rally's corpus (1998 World Cup)
    assert datetime.fromtimestamp(prev, timezone.utc).year == 1998
    assert any(
        json.loads(x)["request"] == "GET / HTTP/1.0" for x in lines
    )  # the built-in `term` query matches


def test_generate_file_is_atomic(tmp_path):
    out = generate_file("http_logs", 3, 1000, tmp_path / "sub" / "docs.json")
    assert out.read_bytes() == _gen("http_logs", 3, 1000)
    assert not (tmp_path / "sub" / "docs.json.part").exists()


def test_unknown_generator():
    with pytest.raises(
        TrackError, match="unknown document generator 'geonames': use one of http_logs, nginx"
    ):
        generate("geonames", 1, 1, io.BytesIO())


@pytest.mark.parametrize("name", ["nginx", "http_logs"])
def test_generators_are_fast(name):
    n = 200_000
    # CPU time, not wall time: other tests (Elasticsearch nodes) may share the machine.
    t = time.process_time()
    _gen(name, 1, n)
    rate = n / max(time.process_time() - t, 1e-9)
    print(f"{name}: {rate:,.0f} docs/s")
    # Aim is > 200k docs/s on an idle machine; leave headroom for a busy CI runner.
    assert rate > 100_000
