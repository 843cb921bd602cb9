"""Parameter sources: what a client sends next for a task.

A source is an iterator of parameter dicts; when it is exhausted the client is done (a bulk that
consumed its corpus slice). Sources are built before the clock starts, so the hot path only takes
the next prepared item.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from bench.driver.bodies import prepare_bodies
from bench.errors import TrackError
from bench.track.model import DocumentsSpec, Task

BULK_PATH = "/_bulk?filter_path=errors,items.*.error"


def bulk_source(task: Task, documents: list[DocumentsSpec], *, client: int, gzip_bodies: bool,
                default_index: str | None) -> Iterator[dict[str, Any]]:
    p = task.operation.params
    if "bulk-size" not in p:
        raise TrackError(f"task '{task.name}': bulk operation '{task.operation.name}' needs 'bulk-size'")
    try:
        bulk_size = int(p["bulk-size"])
        ingest = float(p.get("ingest-percentage", 100))
    except (TypeError, ValueError):
        raise TrackError(f"task '{task.name}': bulk-size and ingest-percentage must be numbers") from None
    if not 0 < ingest <= 100:
        raise TrackError(f"task '{task.name}': ingest-percentage must be in (0, 100], got {ingest}")
    bodies = prepare_bodies(documents, client=client, clients=task.clients, bulk_size=bulk_size,
                            ingest_percentage=ingest, gzip_bodies=gzip_bodies, default_index=default_index)
    path = BULK_PATH
    extra = {k: v for k, v in (p.get("request-params") or {}).items()}
    for key in ("pipeline", "refresh", "timeout"):
        if key in p:
            extra[key] = p[key]
    if extra:
        path += "&" + "&".join(f"{k}={v}" for k, v in extra.items())
    base = {k: v for k, v in p.items() if k == "cluster"}
    looped = bool(p.get("looped", False))
    if not bodies:
        return iter(())
    seq = itertools.cycle(bodies) if looped else iter(bodies)
    return ({**base, "body": b, "path": path} for b in seq)


def static_source(task: Task) -> Iterator[dict[str, Any]]:
    """Every request of a non-bulk task sends the operation's parameters unchanged."""
    params = dict(task.operation.params)
    return itertools.repeat(params)
