"""Synthetic documents made from an index mapping (``bench race --generate-corpora``), seeded.

What OpenSearch Benchmark's ``generate-data`` does from a mapping (a value generator per field type, objects and
nested fields recursed into), for the field types Elasticsearch and OpenSearch have: text and keyword families,
numbers within their type's range (``scaled_float`` rounded to its factor), dates in the field's own ``format``,
IPs, geo points and shapes, vectors of the mapped dimensions (unit length, so ``dot_product`` accepts them),
sparse vectors, ranges, histograms, ``constant_keyword`` with its mapped value, parent-join names, percolator
queries. ``alias`` fields are never sent (the engines refuse values for them). A field type bench has no generator
for is left out and named (``Generated.unknown_types``), never guessed.

Same (mapping, seed, count) -> byte-identical output on any machine: one ``random.Random`` seeded with an int,
times advancing from a fixed start, no clock and no hash-ordering.
"""

from __future__ import annotations

import base64
import json
import math
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

# Documents are one second apart from here (date histograms then have data in every bucket).
START = datetime(2024, 1, 1, tzinfo=timezone.utc)
_WORDS = ("the quick brown fox jumps over lazy dog search index shard node cluster query term match range "
          "document field value segment merge refresh replica primary bulk request latency throughput benchmark "
          "elastic open source data stream metric log trace event host service error warning info debug user "
          "agent network disk memory cpu time window bucket histogram vector score rank filter").split()
_VECTOR_DIMS = 8  # a dense_vector mapped without dims takes the first document's: keep it small

Value = Callable[[random.Random, int], Any]


@dataclass
class Generated:
    """A compiled mapping: ``document(rnd, i)`` makes the i-th document; ``unknown_types`` the field types left out
    (type -> the fields that have it)."""

    fields: list[tuple[str, Value]]
    unknown_types: dict[str, list[str]] = field(default_factory=dict)
    presence: float = 1.0  # the probability of each field but @timestamp being in a document (fit_to_size)

    def document(self, rnd: random.Random, i: int) -> dict[str, Any]:
        return _present(self.fields, rnd, i)


_MISSING: Any = object()  # a field left out of this document (fields present with a probability below 1)


def _present(fields: list[tuple[str, Value]], rnd: random.Random, i: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, gen in fields:
        value = gen(rnd, i)
        if value is not _MISSING:
            out[name] = value
    return out


def _words(rnd: random.Random, lo: int, hi: int) -> str:
    return " ".join(_WORDS[rnd.getrandbits(6) % len(_WORDS)] for _ in range(rnd.randint(lo, hi)))


def _when(rnd: random.Random, i: int) -> datetime:
    return START + timedelta(seconds=i, milliseconds=rnd.randrange(1000))


# ---------------------------------------------------------------- dates in the mapping's format

_NAMED_FORMATS: dict[str, Callable[[datetime], Any]] = {
    "epoch_millis": lambda t: int(t.timestamp() * 1000),
    "epoch_second": lambda t: int(t.timestamp()),
    "date": lambda t: t.strftime("%Y-%m-%d"),
    "strict_date": lambda t: t.strftime("%Y-%m-%d"),
    "basic_date": lambda t: t.strftime("%Y%m%d"),
    "year_month_day": lambda t: t.strftime("%Y-%m-%d"),
    "strict_year_month_day": lambda t: t.strftime("%Y-%m-%d"),
    "date_time_no_millis": lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ"),
    "strict_date_time_no_millis": lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ"),
    "basic_date_time": lambda t: t.strftime("%Y%m%dT%H%M%S.") + f"{t.microsecond // 1000:03d}Z",
    "basic_date_time_no_millis": lambda t: t.strftime("%Y%m%dT%H%M%SZ"),
    "date_hour_minute_second": lambda t: t.strftime("%Y-%m-%dT%H:%M:%S"),
    "strict_date_hour_minute_second": lambda t: t.strftime("%Y-%m-%dT%H:%M:%S"),
}
_ISO = ("strict_date_optional_time", "date_optional_time", "strict_date_optional_time_nanos", "date_time",
        "strict_date_time", "iso8601")
# Java DateTimeFormatter letters -> strftime (the ones real mappings use); 'SSS' is done by hand.
_JAVA = [("yyyy", "%Y"), ("uuuu", "%Y"), ("yy", "%y"), ("MMM", "%b"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"),
         ("hh", "%I"), ("mm", "%M"), ("ss", "%S"), ("a", "%p"), ("XXX", "+00:00"), ("xxx", "+00:00"), ("Z", "+0000"),
         ("X", "Z")]


_MILLIS = "@@millis@@"  # strftime has no milliseconds: put in after it ran (a NUL would end its C string)


def _java_pattern(pattern: str) -> Callable[[datetime], str] | None:
    """A strftime rendering of a Java date pattern such as ``yyyy-MM-dd HH:mm:ss``, or None if it has letters bench
    does not know."""
    out, i = "", 0
    millis = False
    while i < len(pattern):
        if pattern[i] == "'":  # quoted literal
            end = pattern.find("'", i + 1)
            if end < 0:
                return None
            out += pattern[i + 1:end].replace("%", "%%")
            i = end + 1
            continue
        if pattern.startswith("SSS", i):
            out += _MILLIS
            millis = True
            i += 3
            continue
        for java, py in _JAVA:
            if pattern.startswith(java, i):
                out += py
                i += len(java)
                break
        else:
            if pattern[i].isalpha():
                return None
            out += pattern[i].replace("%", "%%")
            i += 1
    if millis:
        return lambda t: t.strftime(out).replace(_MILLIS, f"{t.microsecond // 1000:03d}")
    return lambda t: t.strftime(out)


def date_renderer(fmt: str | None) -> Callable[[datetime], Any] | None:
    """How a date is written for a mapping's ``format`` (the first of ``a||b``); None for a format bench cannot
    write."""
    first = (fmt or "strict_date_optional_time").split("||")[0].strip()
    if first in _ISO:
        return lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
    if first in _NAMED_FORMATS:
        return _NAMED_FORMATS[first]
    return _java_pattern(first)


# ---------------------------------------------------------------- one generator per field type

_INT_BOUNDS = {"byte": 127, "short": 32_767, "integer": 1_000_000, "long": 1_000_000_000,
               "unsigned_long": 1_000_000_000}


def _number(ftype: str, fdef: dict[str, Any]) -> Value:
    if ftype in _INT_BOUNDS:
        bound = _INT_BOUNDS[ftype]
        return lambda rnd, i: rnd.randrange(bound)
    if ftype == "scaled_float":
        factor = float(fdef.get("scaling_factor") or 100)
        return lambda rnd, i: round(round(rnd.random() * 1000 * factor) / factor, 6)
    return lambda rnd, i: round(rnd.random() * 1000, 3)


def _keyword(path: str) -> Value:
    leaf = path.rsplit(".", 1)[-1]
    return lambda rnd, i: f"{leaf}-{rnd.getrandbits(5)}"


def _vector(fdef: dict[str, Any], dims_key: str) -> Value:
    dims = int(fdef.get(dims_key) or _VECTOR_DIMS)
    element = fdef.get("element_type") or fdef.get("data_type") or "float"
    if element == "byte":
        return lambda rnd, i: [rnd.randint(-127, 127) or 1 for _ in range(dims)]
    if element in ("bit", "binary"):
        return lambda rnd, i: [rnd.randint(-128, 127) for _ in range(max(1, dims // 8))]

    def unit(rnd: random.Random, i: int) -> list[float]:
        v = [rnd.gauss(0.0, 1.0) for _ in range(dims)]
        norm = math.sqrt(sum(x * x for x in v)) or 1.0
        return [round(x / norm, 6) for x in v]
    return unit


def _range(ftype: str, fdef: dict[str, Any]) -> Value:
    if ftype == "ip_range":
        return lambda rnd, i: {"gte": f"10.{rnd.getrandbits(8)}.0.0", "lte": f"10.{rnd.getrandbits(8)}.255.255"}
    if ftype == "date_range":
        render = date_renderer(fdef.get("format")) or _NAMED_FORMATS["epoch_millis"]
        return lambda rnd, i: {"gte": render(_when(rnd, i)), "lte": render(_when(rnd, i) + timedelta(hours=1))}
    if ftype in ("integer_range", "long_range"):
        return lambda rnd, i: (lambda lo: {"gte": lo, "lte": lo + rnd.randrange(1000)})(rnd.randrange(1_000_000))
    return lambda rnd, i: (lambda lo: {"gte": lo, "lte": round(lo + rnd.random() * 100, 3)})(
        round(rnd.random() * 1000, 3))


def _join(fdef: dict[str, Any]) -> Value:
    relations = fdef.get("relations") or {}
    parents = sorted(relations) or ["parent"]
    return lambda rnd, i: parents[0]  # every document a parent: a child would need its parent's id as routing


def _aggregate_metric(fdef: dict[str, Any]) -> Value:
    metrics = list(fdef.get("metrics") or ["min", "max", "sum", "value_count"])

    def value(rnd: random.Random, i: int) -> dict[str, Any]:
        lo = round(rnd.random() * 100, 3)
        hi = round(lo + rnd.random() * 100, 3)
        n = rnd.randint(1, 20)
        every = {"min": lo, "max": hi, "sum": round((lo + hi) / 2 * n, 3), "value_count": n}
        return {m: every[m] for m in metrics if m in every}
    return value


def _absent(rnd: random.Random, i: int) -> Any:
    raise AssertionError("never called: fields generated by _ABSENT are dropped when the mapping is compiled")


_ABSENT: Value = _absent


def _leaf(ftype: str, fdef: dict[str, Any], path: str) -> Value | None:
    """The generator of one leaf field, or None for a type bench has none for."""
    if ftype in ("text", "match_only_text", "annotated_text", "search_as_you_type", "pattern_text", "token_count",
                 "semantic_text", "completion"):
        return lambda rnd, i: _words(rnd, 3, 12)
    if ftype in ("keyword", "wildcard", "counted_keyword"):
        return _keyword(path)
    if ftype == "constant_keyword":
        if "value" not in fdef:
            return _ABSENT  # the engine takes the first document's value: leave it to the index
        const = fdef["value"]
        return lambda rnd, i: const
    if ftype == "version":
        return lambda rnd, i: f"{rnd.randrange(10)}.{rnd.randrange(20)}.{rnd.randrange(50)}"
    if ftype in _INT_BOUNDS or ftype in ("double", "float", "half_float", "scaled_float"):
        return _number(ftype, fdef)
    if ftype == "boolean":
        return lambda rnd, i: bool(rnd.getrandbits(1))
    if ftype in ("date", "date_nanos"):
        render = date_renderer(fdef.get("format"))
        return None if render is None else (lambda rnd, i: render(_when(rnd, i)))
    if ftype == "ip":
        return lambda rnd, i: f"{rnd.randint(1, 223)}.{rnd.getrandbits(8)}.{rnd.getrandbits(8)}.{rnd.randint(1, 254)}"
    if ftype == "geo_point":
        return lambda rnd, i: {"lat": round(rnd.uniform(-89.0, 89.0), 6), "lon": round(rnd.uniform(-179.0, 179.0), 6)}
    if ftype == "point":
        return lambda rnd, i: {"x": round(rnd.uniform(-1000, 1000), 3), "y": round(rnd.uniform(-1000, 1000), 3)}
    if ftype in ("geo_shape", "shape"):
        return lambda rnd, i: {"type": "Point", "coordinates": [round(rnd.uniform(-179.0, 179.0), 6),
                                                                round(rnd.uniform(-89.0, 89.0), 6)]}
    if ftype == "dense_vector":
        return _vector(fdef, "dims")
    if ftype == "knn_vector":
        return _vector(fdef, "dimension")
    if ftype in ("sparse_vector", "rank_features"):
        return lambda rnd, i: {f"t{rnd.getrandbits(10)}": round(0.01 + rnd.random(), 4) for _ in range(5)}
    if ftype == "rank_feature":
        return lambda rnd, i: round(0.01 + rnd.random() * 100, 4)
    if ftype.endswith("_range"):
        return _range(ftype, fdef)
    if ftype == "histogram":
        return lambda rnd, i: {"values": [0.1, 0.5, 1.0, 5.0], "counts": [rnd.randrange(1, 10) for _ in range(4)]}
    if ftype == "aggregate_metric_double":
        return _aggregate_metric(fdef)
    if ftype == "binary":
        return lambda rnd, i: base64.b64encode(rnd.getrandbits(64).to_bytes(8, "big")).decode()
    if ftype in ("flattened", "flat_object"):
        return lambda rnd, i: {"key": f"value-{rnd.getrandbits(4)}", "other": {"key": f"value-{rnd.getrandbits(4)}"}}
    if ftype == "join":
        return _join(fdef)
    if ftype == "percolator":
        return lambda rnd, i: {"match_all": {}}
    return None


# ---------------------------------------------------------------- a whole mapping

_OBJECTS = ("object", "nested", "passthrough")


def properties_of(mappings: dict[str, Any]) -> dict[str, Any]:
    """The ``properties`` of an index body's ``mappings`` (also given as the mappings themselves, or under one
    type name as before Elasticsearch 7)."""
    m = mappings.get("mappings", mappings) if isinstance(mappings, dict) else {}
    if not isinstance(m, dict):
        return {}
    if "properties" not in m and len(m) == 1:
        (only,) = m.values()
        if isinstance(only, dict) and "properties" in only:
            return dict(only["properties"])
    return dict(m.get("properties") or {})


def _sometimes(gen: Value, presence: float) -> Value:
    return lambda rnd, i: gen(rnd, i) if rnd.random() < presence else _MISSING


def _compile(props: dict[str, Any], prefix: str, unknown: dict[str, list[str]],
             presence: float = 1.0) -> list[tuple[str, Value]]:
    out: list[tuple[str, Value]] = []
    for name in sorted(props):
        fdef = props[name] if isinstance(props[name], dict) else {}
        path = f"{prefix}{name}"
        ftype = fdef.get("type") or ("object" if "properties" in fdef else None)
        if ftype == "alias":
            continue  # an alias has no value of its own; the engines refuse one
        if ftype in _OBJECTS or ftype is None:
            inner = _compile(dict(fdef.get("properties") or {}), f"{path}.", unknown, presence)
            if not inner:
                continue  # no field mapped inside (or no type at all): the mapping names nothing to send
            out.append((name, _object(inner, nested=ftype == "nested")))
            continue
        gen = _leaf(str(ftype), fdef, path)
        if gen is _ABSENT:
            continue
        if gen is None:
            unknown.setdefault(str(ftype), []).append(path)
            continue
        out.append((name, gen if presence >= 1.0 or path == "@timestamp" else _sometimes(gen, presence)))
    return out


def _object(inner: list[tuple[str, Value]], *, nested: bool) -> Value:
    def one(rnd: random.Random, i: int) -> Any:
        return _present(inner, rnd, i) or _MISSING  # an object none of whose fields came is left out too

    if nested:
        def many(rnd: random.Random, i: int) -> Any:
            objects = [o for o in (one(rnd, i) for _ in range(rnd.randint(1, 3))) if o is not _MISSING]
            return objects or _MISSING
        return many
    return one


def compile_mapping(mappings: dict[str, Any], *, timestamp: bool = False, presence: float = 1.0) -> Generated:
    """The generator of documents for ``mappings``; ``timestamp``: always give ``@timestamp`` (a data stream needs
    it even when its template leaves it to the engine's default mapping); ``presence``: the probability of each
    other field being in a document."""
    unknown: dict[str, list[str]] = {}
    props = properties_of(mappings)
    fields = _compile(props, "", unknown, presence)
    if timestamp and "@timestamp" not in props:
        fields.insert(0, ("@timestamp", _leaf("date", {}, "@timestamp")))  # type: ignore[arg-type]
    if not fields and not unknown:
        # Nothing mapped: a dynamically mapped text field, so the documents are not empty.
        fields = [("message", _leaf("text", {}, "message"))]  # type: ignore[list-item]
    return Generated(fields, unknown, presence)


_SAMPLE = 64  # documents generated to measure the mean size
# Documents up to this much larger than the published mean are left whole: bench's values alone can make them ~3x
# the real ones (names of 3-12 words, floats with every digit: geonames 2.9x, http_logs 2.1x, a vector track 2.1x),
# and leaving out fields there would fail the track's scripts and queries on fields every real document has. Only a
# mapping that makes documents over 4x the published mean is taken as wide (github_archive 6x, metricbeat 49x).
_SLACK = 4.0


def mean_bytes(gen: Generated, seed: int) -> float:
    return sum(len(line) for line in document_lines(gen, seed, _SAMPLE)) / _SAMPLE


def fit_to_size(mappings: dict[str, Any], *, timestamp: bool, average_bytes: float | None, seed: int) -> Generated:
    """The generator for ``mappings`` whose documents have about ``average_bytes`` on average (the track's
    declared ``uncompressed-bytes`` / ``document-count``), when documents with every mapped field would be over
    four times that: each field but ``@timestamp`` is then present with the probability that brings the mean there. Real
    documents of a wide mapping fill a few of its fields (a GitHub event carries one payload type of dozens); every
    field in every document made github_archive's synthetic documents 6x its published ones."""
    gen = compile_mapping(mappings, timestamp=timestamp)
    if not average_bytes or average_bytes <= 0:
        return gen
    size = mean_bytes(gen, seed)
    if size <= average_bytes * _SLACK:
        return gen
    presence = 1.0
    for _ in range(3):  # the size is not linear in the presence (names, nesting): refine twice
        presence = round(max(0.01, min(1.0, presence * average_bytes / size)), 4)
        gen = compile_mapping(mappings, timestamp=timestamp, presence=presence)
        size = mean_bytes(gen, seed)
    return gen


def document_lines(gen: Generated, seed: int, count: int, action: dict[str, Any] | None = None) -> Iterator[bytes]:
    """``count`` documents as newline-terminated JSON lines (each after ``action`` as its own line when given)."""
    rnd = random.Random(seed)
    head = (json.dumps(action, separators=(",", ":")) + "\n").encode() if action is not None else b""
    for i in range(count):
        yield head + (json.dumps(gen.document(rnd, i), separators=(",", ":"), ensure_ascii=False) + "\n").encode()


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(text: str) -> str:
    """``text`` usable in a file name."""
    return _UNSAFE.sub("_", text).strip("_") or "documents"
