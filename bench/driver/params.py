"""Parameter sources: what a client sends next for a task.

A source is an iterator of parameter dicts; when it is exhausted the client is done (a bulk that
consumed its corpus slice). Sources are built before the clock starts, so the hot path only takes
the next prepared item.
"""

from __future__ import annotations

import gzip
import itertools
import json
import random
from collections.abc import Iterator
from typing import Any

from bench.driver.bodies import BulkBody, IdConflicts, prepare_bodies
from bench.driver.param_types import param_bool, param_int
from bench.errors import TrackError
from bench.track.model import DocumentsSpec, Task

BULK_PATH = "/_bulk?filter_path=errors,items.*.error"


def _id_conflicts(task: Task) -> IdConflicts | None:
    p = task.operation.params
    if "conflicts" not in p:
        return None
    where = f"task '{task.name}'"
    mode = p["conflicts"]
    if mode not in ("sequential", "random"):
        raise TrackError(f"{where}: conflicts must be 'sequential' or 'random', got {mode!r}")
    on_conflict = p.get("on-conflict", "index")
    if on_conflict not in ("index", "update"):
        raise TrackError(f"{where}: on-conflict must be 'index' or 'update', got {on_conflict!r}")
    try:
        prob = float(p.get("conflict-probability", 25))
        recency = float(p.get("recency", 0))
    except (TypeError, ValueError):
        raise TrackError(f"{where}: conflict-probability and recency must be numbers") from None
    if not 0 <= prob <= 100:
        raise TrackError(f"{where}: conflict-probability must be in [0, 100], got {prob}")
    if not 0 <= recency <= 1:
        raise TrackError(f"{where}: recency must be in [0, 1], got {recency}")
    return IdConflicts(mode, prob, on_conflict, recency, param_int(p, "seed", 0))


def bulk_size_bytes(task: Task) -> int | None:
    p = task.operation.params
    if "bulk-size-mb" not in p:
        return None
    try:
        mb = float(p["bulk-size-mb"])
    except (TypeError, ValueError):
        mb = -1.0
    if mb <= 0:
        raise TrackError(f"task '{task.name}': bulk-size-mb must be a positive number, got {p['bulk-size-mb']!r}")
    return max(1, int(mb * 1024 * 1024))


def _bulk_path(p: dict[str, Any], path: str = BULK_PATH) -> str:
    extra = {k: v for k, v in (p.get("request-params") or {}).items()}
    for key in ("pipeline", "refresh", "timeout"):
        if key in p:
            extra[key] = p[key]
    if extra:
        path += "&" + "&".join(f"{k}={v}" for k, v in extra.items())
    return path


def bulk_source(task: Task, documents: list[DocumentsSpec], *, client: int, gzip_bodies: bool,
                default_index: str | None) -> Iterator[dict[str, Any]]:
    p = task.operation.params
    if "template" in p:
        return template_bulk_source(task, client=client, gzip_bodies=gzip_bodies, default_index=default_index)
    by_bytes = bulk_size_bytes(task)
    if "bulk-size" not in p and by_bytes is None:
        raise TrackError(f"task '{task.name}': bulk operation '{task.operation.name}' needs 'bulk-size' "
                         f"(documents) or 'bulk-size-mb'")
    try:
        bulk_size = int(p.get("bulk-size", 1))
        ingest = float(p.get("ingest-percentage", 100))
    except (TypeError, ValueError):
        raise TrackError(f"task '{task.name}': bulk-size and ingest-percentage must be numbers") from None
    if not 0 < ingest <= 100:
        raise TrackError(f"task '{task.name}': ingest-percentage must be in (0, 100], got {ingest}")
    bodies = prepare_bodies(documents, client=client, clients=task.clients, bulk_size=bulk_size,
                            ingest_percentage=ingest, gzip_bodies=gzip_bodies, default_index=default_index,
                            bulk_size_bytes=by_bytes, id_conflicts=_id_conflicts(task))
    path = _bulk_path(p)
    base = {k: v for k, v in p.items() if k == "cluster"}
    looped = param_bool(p, "looped", False)
    if not bodies:
        return iter(())
    seq = itertools.cycle(bodies) if looped else iter(bodies)
    return ({**base, "body": b, "path": path} for b in seq)


def template_bulk_source(task: Task, *, client: int, gzip_bodies: bool,
                         default_index: str | None) -> Iterator[dict[str, Any]]:
    """Bulk bodies rendered from a Loadgen template (``template``: body, variables, runtime variables); each
    request renders ``bulk-size`` repetitions with fresh values (see bench.loadgen.template for the cost)."""
    from bench.loadgen.source import track_template

    p = task.operation.params
    if task.iterations is None and task.time_period is None:
        raise TrackError(f"task '{task.name}': a templated bulk never runs out of documents: give the task "
                         f"'iterations' or 'time-period'")
    tpl = track_template(task, client=client, default_index=default_index)
    path = _bulk_path(p)
    base = {k: v for k, v in p.items() if k == "cluster"}

    def gen() -> Iterator[dict[str, Any]]:
        while True:
            r = tpl.render()
            wire = gzip.compress(r.body, compresslevel=1) if gzip_bodies else r.body
            yield {**base, "body": BulkBody(wire, r.docs, len(r.body), gzip_bodies), "path": path}

    return gen()


def search_source(task: Task, *, client: int) -> Iterator[dict[str, Any]]:
    """k6-style search: random ``from``/``size`` (``random-from``/``random-size``: [lo, hi), clipped so that
    from + size <= ``max-result-window``, default 10,000) and a match on a random term (``random-match``:
    {field, terms}). Bodies are JSON-encoded here, before the request is timed."""
    p = task.operation.params
    rnd = random.Random(f"{task.name}:{client}:{p.get('seed', 0)}")
    base = {k: v for k, v in p.items() if k not in ("random-from", "random-size", "random-match", "body")}
    body = dict(p.get("body") or {})
    window = param_int(p, "max-result-window", 10_000)
    frm = p.get("random-from")
    size = p.get("random-size")
    match = p.get("random-match")
    for name, rng in (("random-from", frm), ("random-size", size)):
        if rng is not None and not (isinstance(rng, list) and len(rng) == 2 and all(isinstance(x, int) for x in rng)
                                    and rng[0] < rng[1]):
            raise TrackError(f"task '{task.name}': {name} must be [low, high) integers, got {rng!r}")
    terms = list((match or {}).get("terms") or [])
    if match is not None and (not terms or not match.get("field")):
        raise TrackError(f"task '{task.name}': random-match needs 'field' and a non-empty 'terms' list")

    def gen() -> Iterator[dict[str, Any]]:
        while True:
            b = dict(body)
            if frm is not None:
                b["from"] = rnd.randrange(frm[0], frm[1])
            if size is not None:
                b["size"] = rnd.randrange(size[0], size[1])
            if b.get("from", 0) + b.get("size", 10) > window:  # Elasticsearch's index.max_result_window
                b["size"] = max(0, window - b.get("from", 0))
            if match is not None:
                b["query"] = {"match": {match["field"]: rnd.choice(terms)}}
            yield {**base, "_body_bytes": json.dumps(b, separators=(",", ":")).encode()}

    return gen()


def static_source(task: Task) -> Iterator[dict[str, Any]]:
    """Every request of a non-bulk task sends the operation's parameters unchanged."""
    params = dict(task.operation.params)
    return itertools.repeat(params)


def other_source(task: Task, *, client: int, gzip_for: dict[str, bool] | None = None) -> Iterator[dict[str, Any]]:
    """The source of a non-bulk task: Loadgen requests, randomised searches, or the static parameters."""
    op = task.operation
    if op.operation_type == "loadgen-request":
        from bench.loadgen.source import loadgen_source

        return loadgen_source(task, client=client, gzip_for=gzip_for or {})
    if op.operation_type == "search" and any(k in op.params for k in ("random-from", "random-size", "random-match")):
        return search_source(task, client=client)
    return static_source(task)
