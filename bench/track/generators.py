"""Seeded, deterministic document generators for the built-in tracks.

Same (name, seed, count) -> byte-identical output, on any machine: only ``random.Random`` seeded with
an int and ``getrandbits`` are used (stable across Python versions), times advance from a fixed start.
Speed matters (a million docs should take seconds), so every random choice is a bit-slice of one
64-bit draw into a power-of-two sized pool, and text is written in large chunks.
"""

from __future__ import annotations

import hashlib
import os
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from bench.errors import TrackError

_CHUNK = 20_000  # documents per write


def _pool(items: list[str], size: int, rnd: random.Random) -> list[str]:
    """Repeat/shuffle ``items`` into exactly ``size`` (a power of two) entries; earlier items are weighted
    more because lists are given most-frequent first."""
    out = []
    while len(out) < size:
        for i, it in enumerate(items):
            # item i appears about (len(items) - i) times per round: a cheap skew like real logs have.
            out.extend([it] * max(1, (len(items) - i) // 2))
    out = out[:size]
    rnd.shuffle(out)
    return out


def _ip_pool(rnd: random.Random, size: int) -> list[str]:
    return [
        f"{rnd.randint(1, 223)}.{rnd.getrandbits(8)}.{rnd.getrandbits(8)}.{rnd.randint(1, 254)}"
        for _ in range(size)
    ]


_PATHS = [
    "/",
    "/index.html",
    "/images/hm_bg.jpg",
    "/images/logo.png",
    "/css/site.css",
    "/js/app.js",
    "/api/v1/orders",
    "/api/v1/users/login",
    "/favicon.ico",
    "/search?q=shoes",
    "/products/1234",
    "/products/5678/reviews",
    "/cart",
    "/checkout",
    "/nginx_status",
    "/robots.txt",
    "/static/fonts/inter.woff2",
    "/blog/2024/05/benchmarks",
    "/admin",
    "/wp-login.php",
]
_METHODS = ["GET", "GET", "GET", "POST", "HEAD"]
_STATUSES = ["200", "200", "304", "404", "301", "206", "500", "403", "400", "503"]
_REFERERS = [
    "-",
    "https://www.elastic.co/",
    "https://www.google.com/search?q=nginx",
    "https://github.com/",
    "https://news.ycombinator.com/",
    "https://example.com/products/1234",
]
_AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
    "curl/8.5.0",
    "Go-http-client/1.1",
    "Googlebot/2.1 (+http://www.google.com/bot.html)",
]
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

# 2024-05-01T00:00:00Z: a fixed start keeps the output deterministic.
NGINX_START_MS = 1714521600000


def _nginx_chunks(seed: int, count: int) -> Iterator[str]:
    rnd = random.Random(seed)
    ips = _ip_pool(rnd, 1 << 16)
    paths = _pool(_PATHS, 64, rnd)
    methods = _pool(_METHODS, 8, rnd)
    statuses = _pool(_STATUSES, 32, rnd)
    refs = _pool(_REFERERS, 8, rnd)
    agents = _pool(_AGENTS, 16, rnd)
    # id: a uuid-shaped string; the last group is a bijection of the doc number (unique), the rest from the seed.
    h = hashlib.sha256(f"nginx:{seed}".encode()).hexdigest()
    id_prefix = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-"
    mult, mask = 0x9E3779B97F4A7C15 | 1, (1 << 48) - 1
    routing = [f"R{i:03d}" for i in range(256)]
    # Pre-joined fragments (same bit slices as single choices): fewer per-document format operations.
    requests = [f'\\"{methods[k & 7]} {paths[k >> 3]} HTTP/1.1\\" ' for k in range(512)]
    tails = [f' \\"{refs[k & 7]}\\" \\"{agents[k >> 3]}\\"","random_no":' for k in range(128)]
    millis = [f".{k:03d}" for k in range(1000)]
    getbits = rnd.getrandbits
    t_ms = NGINX_START_MS
    cached_sec, sec_local, sec_nginx = -1, "", ""
    i = 0
    while i < count:
        n = min(_CHUNK, count - i)
        lines = []
        append = lines.append
        for j in range(i, i + n):
            r = getbits(80)
            t_ms += r & 15
            sec = t_ms // 1000
            if sec != cached_sec:
                cached_sec = sec
                tm = time.gmtime(sec)
                sec_local = (
                    f"{tm.tm_year:04d}-{tm.tm_mon:02d}-{tm.tm_mday:02d} "
                    f"{tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d}"
                )
                sec_nginx = (
                    f"{tm.tm_mday:02d}/{_MONTHS[tm.tm_mon - 1]}/{tm.tm_year:04d}:"
                    f"{tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d} +0000"
                )
            ip = ips[(r >> 4) & 0xFFFF]
            status = statuses[(r >> 20) & 31]
            size = 0 if status == "304" else (r >> 25) & 0xFFFF
            # JSON-escaped quotes: the message is an nginx "combined" log line.
            append(
                f'{{"id":"{id_prefix}{((j + 1) * mult) & mask:012x}","routing_no":"{routing[(r >> 41) & 255]}",'
                f'"batch_number":{j // 1000},"message":"{ip} - - [{sec_nginx}] {requests[(r >> 49) & 511]}'
                f'{status} {size}{tails[(r >> 58) & 127]}{(r >> 65) & 255},"ip":"{ip}",'
                f'"now_local":"{sec_local}{millis[t_ms % 1000]}","now_unix":{t_ms}}}\n'
            )
        yield "".join(lines)
        i += n


_HTTP_PATHS = [
    "/images/hm_bg.jpg",
    "/",
    "/english/index.html",
    "/images/nav_bg_top.gif",
    "/images/logo_cfo.gif",
    "/english/images/nav_news_off.gif",
    "/english/images/team_bu_roster_on.gif",
    "/french/index.html",
    "/english/news/newsprev.htm",
    "/images/space.gif",
    "/english/competition/matchprog.htm",
    "/english/history/history_of/images/cup/cup.gif",
    "/spanish/index.html",
    "/cgi-bin/trivia/Trivia.pl",
    "/english/venues/venues/saint.html",
    "/images/dot.gif",
]
_HTTP_PROTO = ["GET", "GET", "GET", "HEAD", "POST"]
_HTTP_STATUS = [200, 200, 304, 200, 404, 206, 500, 400]
# 1998-04-30T21:30:17Z, the first timestamp of Rally's http_logs corpus.
HTTP_LOGS_START = 893964617


def _http_logs_chunks(seed: int, count: int) -> Iterator[str]:
    rnd = random.Random(seed)
    ips = _ip_pool(rnd, 1 << 16)
    paths = _pool(_HTTP_PATHS, 64, rnd)
    methods = _pool(_HTTP_PROTO, 8, rnd)
    statuses = _pool([str(s) for s in _HTTP_STATUS], 16, rnd)
    protos = ["HTTP/1.0", "HTTP/1.0", "HTTP/1.0", "HTTP/1.1"]
    getbits = rnd.getrandbits
    ts = HTTP_LOGS_START
    i = 0
    while i < count:
        n = min(_CHUNK, count - i)
        lines = []
        append = lines.append
        for _ in range(n):
            r = getbits(64)
            # 1.5 s apart on average: a million docs span ~17 days from 1998-04-30, so the track's
            # range queries (May 1st, and "since May 15th") both match documents.
            ts += r & 3
            status = statuses[(r >> 2) & 15]
            size = 0 if status == "304" else (r >> 6) & 0x1FFFF
            append(
                f'{{"@timestamp":{ts},"clientip":"{ips[(r >> 23) & 0xFFFF]}","request":'
                f'"{methods[(r >> 39) & 7]} {paths[(r >> 42) & 63]} {protos[(r >> 48) & 3]}",'
                f'"status":{status},"size":{size}}}\n'
            )
        yield "".join(lines)
        i += n


GENERATORS: dict[str, Callable[[int, int], Iterator[str]]] = {
    "nginx": _nginx_chunks,
    "http_logs": _http_logs_chunks,
}


def generate(name: str, seed: int, count: int, out: BinaryIO) -> int:
    """Write ``count`` newline-terminated JSON documents to ``out``; returns bytes written."""
    try:
        chunks = GENERATORS[name]
    except KeyError:
        raise TrackError(
            f"unknown document generator '{name}': use one of {', '.join(sorted(GENERATORS))}"
        ) from None
    written = 0
    for text in chunks(seed, count):
        data = text.encode("utf-8")
        out.write(data)
        written += len(data)
    return written


def generate_file(name: str, seed: int, count: int, path: Path) -> Path:
    """Generate into ``path`` via ``path.part`` + rename, so an interrupted run never leaves a usable file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    with open(part, "wb", buffering=1 << 20) as f:
        generate(name, seed, count, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(part, path)
    return path
