"""Parameter sources: what a client sends next for a task.

A source is an iterator of parameter dicts; when it is exhausted the client is done (a bulk that
consumed its corpus slice). Sources are built before the clock starts, so the hot path only takes
the next prepared item. An extension supplies the source of its own operation type, or of a core type given
one of its parameters (Loadgen: ``loadgen-request``, and ``bulk`` with a ``template``), through
``register_param_source``.
"""

from __future__ import annotations

import itertools
import json
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bench import extensions
from bench.driver.bulk.bodies import IdConflicts, prepare_bodies
from bench.driver.bulk.routed_bodies import RoutedBody, prepare_routed_bodies
from bench.driver.bulk.routing_watch import DEFAULT_INTERVAL, RoutingWatch
from bench.driver.bulk.shard_routing import ShardTable
from bench.driver.param_types import param_bool, param_float, param_int
from bench.driver.runners.core import search_body
from bench.driver.runners.registry import callable_name
from bench.driver.runners.vector import SOURCES as VECTOR_SOURCES
from bench.track.model import DocumentsSpec, Task
from bench.util.errors import ConfigError, TrackError

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


def ingest_doc_count(task: Task) -> int | None:
    """Rally's ``ingest-doc-count``: how many documents of the corpus the task indexes, over all its clients."""
    value = task.operation.params.get("ingest-doc-count")
    return None if value is None else int(value)


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


def bulk_path(p: dict[str, Any], path: str = BULK_PATH) -> str:
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
    if param_bool(p, "shard-aware", False):
        return _routed_source(task, documents, client=client, bulk_size=bulk_size, ingest=ingest,
                              gzip_bodies=gzip_bodies, default_index=default_index)
    bodies = prepare_bodies(documents, client=client, clients=task.clients, bulk_size=bulk_size,
                            ingest_percentage=ingest, gzip_bodies=gzip_bodies, default_index=default_index,
                            bulk_size_bytes=by_bytes, id_conflicts=_id_conflicts(task),
                            ingest_doc_count=ingest_doc_count(task))
    path = bulk_path(p)
    base = {k: v for k, v in p.items() if k == "cluster"}
    if param_bool(p, "looped", False):
        return ({**base, "body": b, "path": path} for b in itertools.cycle(bodies)) if bodies else iter(())
    return CorpusSource([{**base, "body": b, "path": path} for b in bodies])


SHARD_TABLE = "_shard-table"  # the coordinator's routing table of a shard-aware bulk, read before the task starts


def shard_aware_problem(task: Task) -> str | None:
    """Why a bulk task cannot be sent shard-aware (None: it can, or it does not ask to)."""
    p = task.operation.params
    if task.operation.operation_type != "bulk" or not param_bool(p, "shard-aware", False):
        return None
    for key in ("looped", "conflicts", "bulk-size-mb", "param-source", "ingest-doc-count"):
        if key in p and p[key] not in (False, None):
            return (f"task '{task.name}': shard-aware bulk cannot be combined with '{key}' (its documents get "
                    f"client-side ids, sent once, in bulks of bulk-size documents per node)")
    interval = p.get("routing-refresh-interval", DEFAULT_INTERVAL)
    if isinstance(interval, bool) or not isinstance(interval, int | float) or interval < 0:
        return (f"task '{task.name}': routing-refresh-interval must be a number of seconds >= 0 (0: read the "
                f"routing table only when the task starts), got {interval!r}")
    return None


def _routed_source(task: Task, documents: list[DocumentsSpec], *, client: int, bulk_size: int, ingest: float,
                   gzip_bodies: bool, default_index: str | None) -> Iterator[dict[str, Any]]:
    p = task.operation.params
    if SHARD_TABLE not in p:  # the coordinator adds it after checking shard_aware_problem
        raise TrackError(f"task '{task.name}': shard-aware bulk has no routing table (the coordinator reads it "
                         f"before the task starts)")
    table = ShardTable.model_validate(p[SHARD_TABLE])
    bodies = prepare_routed_bodies(documents, client=client, clients=task.clients, bulk_size=bulk_size, table=table,
                                   where=f"task '{task.name}'", ingest_percentage=ingest, gzip_bodies=gzip_bodies,
                                   default_index=default_index)
    base = {k: v for k, v in p.items() if k == "cluster"}
    watch = RoutingWatch.shared(table, p.get("cluster"), param_float(p, "routing-refresh-interval", DEFAULT_INTERVAL))
    return RoutedSource(bodies, {**base, "path": bulk_path(p)}, watch)


class CorpusSource(Iterator[dict[str, Any]]):
    """A client's share of a corpus, sent once: it knows how many requests it holds, so the client loop can
    keep part of them out of a warmup that would otherwise swallow the whole task (``bench.driver.warmup``)."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.count = len(items)
        self._items = iter(items)

    def __next__(self) -> dict[str, Any]:
        return next(self._items)


class RoutedSource(CorpusSource):
    """A client's shard-aware bodies, each sent to the node its watch says holds most of its documents' primaries
    now (the worker runs the watch while the task runs)."""

    def __init__(self, bodies: list[RoutedBody], base: dict[str, Any], watch: RoutingWatch) -> None:
        self.count = len(bodies)
        self._bodies = iter(bodies)
        self._base = base
        self.routing_watch = watch

    def __next__(self) -> dict[str, Any]:
        b = next(self._bodies)
        return {**self._base, "body": b.body, "node": self.routing_watch.node(b)}


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
    """Every request of a non-bulk task sends the operation's parameters unchanged; a search's body, constant, is
    serialised here once (``_body_bytes``, as the randomised search source does; a track's runner never sees it)."""
    params = dict(task.operation.params)
    if task.operation.operation_type == "search" and "_body_bytes" not in params:
        params["_body_bytes"] = search_body(params)  # constant: serialised once, not per request
    return itertools.repeat(params)


@dataclass(frozen=True)
class SourceContext:
    """What a client's parameter source may depend on besides its task."""

    client: int  # the client's id within its task
    documents: list[DocumentsSpec] = field(default_factory=list)  # the task's corpus files
    gzip_for: dict[str, bool] = field(default_factory=dict)  # cluster name -> pre-gzip bodies (http_compress)
    default_cluster: str = "default"
    default_index: str | None = None  # the track's only index, if it has exactly one

    def gzip_bodies(self, params: dict[str, Any]) -> bool:
        return self.gzip_for.get(params.get("cluster", self.default_cluster), False)


SourceFactory = Callable[[Task, SourceContext], Iterator[dict[str, Any]]]

_lock = threading.Lock()
# operation type -> [(parameter that selects the source, or None for any operation of the type), factory]
_SOURCES: dict[str, list[tuple[str | None, SourceFactory]]] = {}


def register_param_source(operation_type: str, factory: SourceFactory, *, if_param: str | None = None) -> None:
    """Let ``factory`` make the parameter source of ``operation_type``'s clients (only of the operations that
    have the parameter ``if_param``, when given). A second factory for the same selector is a ConfigError."""
    name = callable_name(factory)
    with _lock:
        entries = _SOURCES.setdefault(operation_type, [])
        for i, (param, old) in enumerate(entries):
            if param != if_param:
                continue
            old_name = callable_name(old)
            if old_name != name:
                what = f"'{operation_type}'" + (f" with '{if_param}'" if if_param else "")
                raise ConfigError(f"the parameter source of {what} is registered twice, by {old_name} and by "
                                  f"{name}: uninstall one of the extensions that provide them")
            entries[i] = (if_param, factory)
            return
        # A source selected by a parameter is more specific than one for every operation of the type.
        entries.insert(0 if if_param else len(entries), (if_param, factory))


def _extension_factory(task: Task) -> SourceFactory | None:
    op = task.operation
    for param, factory in _SOURCES.get(op.operation_type, []):
        if param is None or param in op.params:
            return factory
    return None


def sends_corpus_once(task: Task) -> bool:
    """Whether the task's clients each send their slice of a corpus once (a core, not looped bulk, no track's or
    extension's source): then the corpus, not a time or an iteration count, ends the task."""
    extensions.load()
    p = task.operation.params
    return (task.operation.operation_type == "bulk" and "param-source" not in p  # a track.py's source
            and _extension_factory(task) is None and not param_bool(p, "looped", False))


def param_source(task: Task, sc: SourceContext) -> Iterator[dict[str, Any]]:
    """A client's source: an extension's for the operation, else bulk bodies from the corpus, randomised
    searches, or the operation's static parameters."""
    extensions.load()
    op = task.operation
    factory = _extension_factory(task)
    if factory is not None:
        return factory(task, sc)
    if op.operation_type == "bulk":
        return bulk_source(task, sc.documents, client=sc.client, gzip_bodies=sc.gzip_bodies(op.params),
                           default_index=sc.default_index)
    if op.operation_type in VECTOR_SOURCES and "param-source" not in op.params:
        return VECTOR_SOURCES[op.operation_type](task, sc.client)
    if op.operation_type == "search" and any(k in op.params for k in ("random-from", "random-size", "random-match")):
        return search_source(task, client=sc.client)
    return static_source(task)
