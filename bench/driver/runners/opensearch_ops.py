"""OpenSearch Benchmark's operation types for OpenSearch's own APIs (osbenchmark/worker_coordinator/runner.py):
point in time (``create-point-in-time``, ``delete-point-in-time``, ``list-all-point-in-time``, on OpenSearch's
``/_search/point_in_time`` API) and ``update-concurrent-segment-search-settings``.

As in OSB, a point in time's id lives in the composite operation that created it, under the creating request's
``name``, and ``paginated-search`` with ``with-point-in-time-from`` searches it.
"""

from __future__ import annotations

from typing import Any

from bench.driver.runners import composite_context
from bench.driver.runners.core import Context, Result
from bench.driver.runners.support import Call, failed, names
from bench.util.errors import TrackError


async def create_point_in_time(ctx: Context, p: dict[str, Any]) -> Result:
    name = str(p["name"])
    composite_context.has(name)  # fail before sending when not inside a composite operation
    call = Call(ctx, p)
    status, resp = await call("POST", f"/{','.join(names(p['index']))}/_search/point_in_time",
                              params={"keep_alive": p.get("keep-alive") or "1m"})
    if status >= 400:
        return failed(status, resp)
    composite_context.put(name, resp["pit_id"])
    return Result()


async def delete_point_in_time(ctx: Context, p: dict[str, Any]) -> Result:
    """The point in time ``with-point-in-time-from`` names, or without it every point in time (OSB's ``all``)."""
    call = Call(ctx, p)
    pit_from = p.get("with-point-in-time-from")
    if pit_from is None:
        status, resp = await call("DELETE", "/_search/point_in_time/_all")
    else:
        pit_id = composite_context.get(str(pit_from))
        status, resp = await call("DELETE", "/_search/point_in_time", body={"pit_id": [pit_id]})
        composite_context.remove(str(pit_from))
    return failed(status, resp) if status >= 400 else Result()


async def list_all_point_in_time(ctx: Context, p: dict[str, Any]) -> Result:
    status, resp = await Call(ctx, p)("GET", "/_search/point_in_time/_all")
    return failed(status, resp) if status >= 400 else Result()


async def update_concurrent_segment_search_settings(ctx: Context, p: dict[str, Any]) -> Result:
    """OSB: ``enable`` (default "false") and, when given, ``max_slice_count``, as persistent cluster settings."""
    persistent: dict[str, Any] = {"search.concurrent_segment_search.enabled": p.get("enable", "false")}
    if p.get("max_slice_count") is not None:
        persistent["search.concurrent.max_slice_count"] = p["max_slice_count"]
    status, resp = await Call(ctx, p)("PUT", "/_cluster/settings", body={"persistent": persistent})
    return failed(status, resp) if status >= 400 else Result()


def check_opensearch_ops(name: str, op_type: str, params: dict[str, Any], *, track_file: str) -> None:
    if op_type == "create-point-in-time" and not params.get("index"):
        raise TrackError(f"{track_file}: operation '{name}' (create-point-in-time) needs 'index'")


RUNNERS: dict[str, tuple[Any, tuple[str, ...]]] = {
    # "name" (the id's key) is written on the composite's request, as for open-point-in-time
    "create-point-in-time": (create_point_in_time, ()),
    "delete-point-in-time": (delete_point_in_time, ()),
    "list-all-point-in-time": (list_all_point_in_time, ()),
    "update-concurrent-segment-search-settings": (update_concurrent_segment_search_settings, ()),
}
