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

from bench.util.errors import TrackError
from bench.util.file_lock import part_path

_CHUNK = 20_000  # documents per write


def _pool(items: list[str], size: int, rnd: random.Random) -> list[str]:
    """Repeat/shuffle ``items`` into exactly ``size`` (a power of two) entries; earlier items are weighted
    more because lists are given most-frequent first."""
    out: list[str] = []
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
        lines: list[str] = []
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
        lines: list[str] = []
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


def generator_names() -> list[str]:
    """The log generators first (the foundation's), then the others, each group sorted."""
    first = ("http_logs", "nginx")
    return sorted(n for n in GENERATORS if n in first) + sorted(n for n in GENERATORS if n not in first)


def generate(name: str, seed: int, count: int, out: BinaryIO) -> int:
    """Write ``count`` newline-terminated JSON documents to ``out``; returns bytes written."""
    try:
        chunks = GENERATORS[name]
    except KeyError:
        raise TrackError(
            f"unknown document generator '{name}': use one of {', '.join(generator_names())}"
        ) from None
    written = 0
    for text in chunks(seed, count):
        data = text.encode("utf-8")
        out.write(data)
        written += len(data)
    return written


def generate_file(name: str, seed: int, count: int, path: Path) -> Path:
    """Generate into ``path`` via a part file of its own + rename, so an interrupted run never leaves a usable file
    and two writers never share one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = part_path(path)
    try:
        with open(part, "wb", buffering=1 << 20) as f:
            generate(name, seed, count, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)  # gone already unless something failed
    return path


# ---------------------------------------------------------------- shakespeare, eventdata, geopoint, pmc

_PLAYS = ["Henry IV", "Hamlet", "Macbeth", "King Lear", "Othello", "Romeo and Juliet", "The Tempest", "Julius Caesar",
          "A Midsummer nights dream", "Twelfth Night", "Much Ado about nothing", "As you like it",
          "Merchant of Venice", "Richard III", "Antony and Cleopatra", "Coriolanus"]
_SPEAKERS = ["KING HENRY IV", "HAMLET", "MACBETH", "LADY MACBETH", "KING LEAR", "OTHELLO", "IAGO", "ROMEO", "JULIET",
             "PROSPERO", "BRUTUS", "CASSIUS", "PUCK", "VIOLA", "BENEDICK", "BEATRICE", "ROSALIND", "PORTIA", "SHYLOCK",
             "GLOUCESTER", "CLEOPATRA", "CORIOLANUS", "FALSTAFF", "HORATIO", "OPHELIA", "POLONIUS", "EDMUND", "CORDELIA",
             "MERCUTIO", "NURSE", "ARIEL", "CALIBAN"]
# Common words of the plays: match queries on text_entry find hits at every corpus size.
SHAKESPEARE_WORDS = ["the", "and", "to", "of", "i", "you", "my", "a", "that", "in", "is", "not", "with", "me", "it", "for", "be", "his", "your", "this", "but", "he", "have", "as", "thou", "so", "him", "will", "what", "thy", "all", "her", "do", "no", "by", "shall", "if", "are", "we", "thee", "our", "lord", "on", "king", "good", "now", "sir", "from", "come", "they", "let", "o", "would", "well", "here", "more", "love", "which", "was", "then", "there", "how", "man", "or", "hath", "when", "upon", "like", "night", "death", "heart", "blood", "crown", "sword", "honour", "queen", "father", "brother", "sweet", "fair", "speak", "know", "time", "heaven", "world", "life", "eyes", "hand", "soul", "grace", "noble", "gentle", "war", "peace", "fortune", "sleep", "dream"]


def _zipf_pool(items: list[str], size: int, rnd: random.Random) -> list[str]:
    """``size`` entries covering every item, earlier items more often (quadratic skew), shuffled."""
    out = [items[min(len(items) - 1, int(len(items) * (k / size) ** 2))] for k in range(size)]
    rnd.shuffle(out)
    return out


def _shakespeare_chunks(seed: int, count: int) -> Iterator[str]:
    rnd = random.Random(seed)
    words = _zipf_pool(SHAKESPEARE_WORDS, 256, rnd)
    getbits = rnd.getrandbits
    play, act, scene, line, speech, speaker = 0, 1, 1, 1, 1, _SPEAKERS[0]
    i = 0
    while i < count:
        n = min(_CHUNK, count - i)
        lines: list[str] = []
        append = lines.append
        for j in range(i, i + n):
            r = getbits(64)
            if r & 7 == 0:  # a new speech
                speech += 1
                speaker = _SPEAKERS[(r >> 3) & 31]
                if (r >> 8) & 63 == 0:  # a new scene, sometimes a new act, rarely a new play
                    scene, line = scene + 1, 1
                    if (r >> 14) & 3 == 0:
                        act, scene = act + 1, 1
                    if act > 5:
                        play, act, scene, speech = (play + 1) % len(_PLAYS), 1, 1, 1
            nwords = 4 + ((r >> 16) & 7)
            w = getbits(8 * nwords)
            text = " ".join(words[(w >> (8 * k)) & 255] for k in range(nwords))
            append(f'{{"line_id":{j + 1},"play_name":"{_PLAYS[play]}","speech_number":{speech},'
                   f'"line_number":"{act}.{scene}.{line}","speaker":"{speaker}","text_entry":"{text.capitalize()}"}}\n')
            line += 1
        yield "".join(lines)
        i += n


_COUNTRIES = [("United States", -98.5, 39.8), ("China", 104.2, 35.9), ("India", 78.9, 20.6), ("Germany", 10.4, 51.2),
              ("Brazil", -51.9, -14.2), ("France", 2.2, 46.2), ("United Kingdom", -3.4, 55.4), ("Japan", 138.3, 36.2),
              ("Russia", 105.3, 61.5), ("Canada", -106.3, 56.1), ("Australia", 133.8, -25.3), ("Spain", -3.7, 40.5),
              ("Mexico", -102.6, 23.6), ("Italy", 12.6, 41.9), ("Sweden", 18.6, 60.1), ("Netherlands", 5.3, 52.1)]
_UA = [("Chrome", "Windows", "Windows 10", "Other", "124"), ("Firefox", "Linux", "Ubuntu", "Other", "125"),
       ("Safari", "Mac OS X", "Mac OS X", "Other", "17"), ("Mobile Safari", "iOS", "iOS", "iPhone", "17"),
       ("Chrome Mobile", "Android", "Android", "Samsung SM-G991B", "124"), ("Edge", "Windows", "Windows 11", "Other",
                                                                             "124"),
       ("Googlebot", "Other", "Other", "Spider", "2"), ("curl", "Other", "Other", "Other", "8")]
_EV_REQ = ["/", "/blog", "/products/elasticsearch", "/downloads/kibana", "/guide/index.html", "/webinars",
           "/customers", "/about", "/search?q=logs", "/elasticon/2024", "/blog/benchmarks", "/pricing"]
ELASTICLOGS_START = 1_525_132_800  # 2018-05-01T00:00:00Z


def _eventdata_chunks(seed: int, count: int) -> Iterator[str]:
    """Documents with the fields of Rally's eventdata track (elasticlogs: web access logs with geoip/useragent)."""
    rnd = random.Random(seed)
    ips = _ip_pool(rnd, 1 << 14)
    reqs = _pool(_EV_REQ, 32, rnd)
    statuses = _pool(["200", "200", "304", "404", "301", "500", "206", "403"], 16, rnd)
    refs = _pool(["-", "https://www.elastic.co/", "https://www.google.com/", "https://github.com/"], 8, rnd)
    getbits = rnd.getrandbits
    ts = ELASTICLOGS_START * 1000
    i = 0
    while i < count:
        n = min(_CHUNK, count - i)
        lines: list[str] = []
        append = lines.append
        for _ in range(n):
            r = getbits(80)
            ts += r & 63
            sec = ts // 1000
            tm = time.gmtime(sec)
            stamp = (f"{tm.tm_year:04d}-{tm.tm_mon:02d}-{tm.tm_mday:02d}T{tm.tm_hour:02d}:{tm.tm_min:02d}:"
                     f"{tm.tm_sec:02d}.{ts % 1000:03d}Z")
            ip = ips[(r >> 6) & 0x3FFF]
            country, lon, lat = _COUNTRIES[(r >> 20) & 15]
            lon += ((r >> 24) & 1023) / 200.0 - 2.56
            lat += ((r >> 34) & 1023) / 400.0 - 1.28
            name, os_, os_name, device, major = _UA[(r >> 44) & 7]
            status = statuses[(r >> 47) & 15]
            req = reqs[(r >> 51) & 31]
            size = 0 if status == "304" else (r >> 56) & 0xFFFF
            verb = "GET" if (r >> 72) & 7 else "POST"
            ref = refs[(r >> 75) & 7]
            append(f'{{"@timestamp":"{stamp}","message":"{ip} - - \\"{verb} {req} HTTP/1.1\\" {status} {size}",'
                   f'"agent":"{name}/{major} ({os_name})","bytes":{size},"clientip":"{ip}",'
                   f'"geoip":{{"country_name":"{country}","location":[{lon:.4f},{lat:.4f}]}},"httpversion":"1.1",'
                   f'"referrer":"{ref}","request":"{req}","response":{status},"verb":"{verb}",'
                   f'"useragent":{{"name":"{name}","os":"{os_}","os_name":"{os_name}","device":"{device}",'
                   f'"major":"{major}"}}}}\n')
        yield "".join(lines)
        i += n


_CITIES = [(-0.1276, 51.5072), (2.3522, 48.8566), (13.4050, 52.5200), (-74.0060, 40.7128), (139.6917, 35.6895),
           (151.2093, -33.8688), (-122.4194, 37.7749), (37.6173, 55.7558), (116.4074, 39.9042), (-43.1729, -22.9068),
           (77.2090, 28.6139), (18.4241, -33.9249), (-99.1332, 19.4326), (103.8198, 1.3521), (12.4964, 41.9028),
           (-79.3832, 43.6532)]


def _geopoint_chunks(seed: int, count: int) -> Iterator[str]:
    """Rally's geopoint documents: ``{"location": [lon, lat]}`` (points of interest, clustered around cities)."""
    rnd = random.Random(seed)
    getbits = rnd.getrandbits
    i = 0
    while i < count:
        n = min(_CHUNK, count - i)
        lines: list[str] = []
        append = lines.append
        for _ in range(n):
            r = getbits(64)
            lon, lat = _CITIES[r & 15]
            if (r >> 4) & 7 == 0:  # an eighth anywhere on earth
                lon, lat = ((r >> 7) & 0xFFFFF) / 0xFFFFF * 360.0 - 180.0, ((r >> 27) & 0xFFFFF) / 0xFFFFF * 170.0 - 85.0
            else:
                lon += (((r >> 7) & 0xFFFF) / 0xFFFF - 0.5) * 1.5
                lat += (((r >> 23) & 0xFFFF) / 0xFFFF - 0.5) * 1.0
            append(f'{{"location":[{lon:.7f},{lat:.7f}]}}\n')
        yield "".join(lines)
        i += n


_JOURNALS = ["PLoS One", "Nucleic Acids Res", "BMC Bioinformatics", "J Biol Chem", "Sci Rep", "Nat Commun",
             "Proc Natl Acad Sci U S A", "BMC Genomics", "Cell Rep", "eLife", "Front Immunol", "J Clin Invest"]
_PMC_WORDS = ["the", "of", "and", "in", "to", "a", "with", "for", "was", "were", "is", "by", "that", "on", "as", "from", "at", "this", "are", "be", "cells", "protein", "expression", "analysis", "patients", "study", "gene", "data", "results", "cell", "using", "between", "these", "which", "or", "levels", "we", "treatment", "activity", "clinical", "increased", "response", "disease", "model", "observed", "associated", "compared", "significant", "samples", "effect", "group", "control", "human", "mice", "function", "genes", "proteins", "binding", "receptor", "signaling", "pathway", "sequence", "structure", "tissue", "tumor", "cancer", "infection", "immune", "virus", "dna", "rna", "mutation", "method", "methods", "figure", "table", "values", "higher", "lower", "after", "during", "both", "each", "two", "three", "time"]
PMC_START = 1_262_304_000  # 2010-01-01


def _pmc_chunks(seed: int, count: int, body_words: int = 800) -> Iterator[str]:
    """Documents shaped like Rally's pmc track (PubMed Central articles): long ``body`` text plus metadata."""
    rnd = random.Random(seed)
    words = _zipf_pool(_PMC_WORDS, 512, rnd)
    getbits = rnd.getrandbits
    # Pre-built 16-word phrases (bit-sliced picks) keep long bodies cheap to assemble.
    phrases = [" ".join(words[getbits(9)] for _ in range(16)) for _ in range(4096)]
    i = 0
    chunk = max(1, min(_CHUNK, 2000))
    while i < count:
        n = min(chunk, count - i)
        lines: list[str] = []
        append = lines.append
        for j in range(i, i + n):
            r = getbits(64)
            k = max(1, (body_words + ((r >> 40) & 255) - 128) // 16)
            body = ". ".join(phrases[getbits(12)] for _ in range(k))
            tm = time.gmtime(PMC_START + (r & 0xFFFFFFF) % (12 * 365 * 86400))
            title = phrases[(r >> 28) & 4095][:60].title()
            append(f'{{"name":"{title}","journal":"{_JOURNALS[(r >> 12) % len(_JOURNALS)]}",'
                   f'"date":"{tm.tm_year} {_MONTHS[tm.tm_mon - 1]} {tm.tm_mday}","volume":"{(r >> 20) & 63}",'
                   f'"issue":"{(r >> 26) & 15}","accession":"PMC{3000000 + j}","timestamp":'
                   f'"{tm.tm_year:04d}-{tm.tm_mon:02d}-{tm.tm_mday:02d} {tm.tm_hour:02d}:{tm.tm_min:02d}:'
                   f'{tm.tm_sec:02d}","pmid":{20000000 + j},"body":"{body}."}}\n')
        yield "".join(lines)
        i += n


GENERATORS.update({
    "shakespeare": _shakespeare_chunks,
    "eventdata": _eventdata_chunks,
    "geopoint": _geopoint_chunks,
    "pmc": _pmc_chunks,
})
