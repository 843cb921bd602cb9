"""Rally's search operations beyond ``search``: paginated (search_after) and scroll searches and composite
aggregations, whose weight is the number of pages fetched (unit ``pages``), point in time and async search
(which hand ids on inside a ``composite`` operation), field capabilities, ES|QL and SQL.

Targets are Rally's: ``index``, else ``data-stream``, else the track's only index or only data stream.
``results-per-page`` is the page size; ``pages`` the most pages to fetch (a number or ``all``). A search answer
with ``timed_out: true`` is a failed request, as for ``search``.
"""

from __future__ import annotations

import asyncio
import sys
import time
import weakref
from collections.abc import Callable
from typing import Any

from bench.driver.param_types import as_int, param_bool, param_float
from bench.driver.runners import composite_context
from bench.driver.runners.core import Context, Result
from bench.driver.runners.core import search as core_search
from bench.driver.runners.support import Call, failed, names, need_dict, problem
from bench.http.client import RawHttp
from bench.util.errors import TrackError

PIT_KEEP_ALIVE = "1m"


def target(ctx: Context, p: dict[str, Any]) -> str:
    t = p.get("index") or p.get("data-stream") or ctx.definitions.default_target()
    if not t:
        raise ValueError("'index' or 'data-stream' is mandatory: the track has no single index or data stream")
    return ",".join(names(t))


def _pages(p: dict[str, Any], default: Any = None) -> int:
    pages = p.get("pages", default)
    if pages is None:
        raise ValueError("the parameter 'pages' is mandatory (a number or 'all')")
    return sys.maxsize if pages == "all" else as_int(pages, "pages")


def _page_size(p: dict[str, Any]) -> int | None:
    return as_int(p["results-per-page"], "results-per-page") if p.get("results-per-page") else None


def _pit(p: dict[str, Any], body: dict[str, Any]) -> str | None:
    """With ``with-point-in-time-from``: the body searches that request's point in time (index, routing and
    preference are part of it and must not be sent again)."""
    pit_from = p.get("with-point-in-time-from")
    if pit_from:
        for key in ("index", "routing", "preference"):
            body.pop(key, None)
        body["pit"] = {"id": composite_context.get(pit_from), "keep_alive": PIT_KEEP_ALIVE}
    return pit_from


def _pages_result(pages: int, timed_out: bool) -> Result:
    if timed_out:
        return problem("search-timed-out", "search timed out", units=pages, unit="pages")
    return Result(units=pages, unit="pages")


async def paginated_search(ctx: Context, p: dict[str, Any]) -> Result:
    """search_after pages: the next page starts after the last hit's sort values while hits remain."""
    call = Call(ctx, p)
    body = dict(p.get("body") or {})
    size = _page_size(p) or 10
    body["size"] = size
    total_pages = _pages(p)
    pit_from = _pit(p, body)
    path = "/_search" if pit_from else f"/{target(ctx, p)}/_search"
    hits: int | None = None

    def advance(resp: dict[str, Any], page: int) -> bool:
        nonlocal hits
        if hits is None:
            total = resp.get("hits", {}).get("total", 0)
            hits = total.get("value", 0) if isinstance(total, dict) else int(total or 0)
        page_hits = resp.get("hits", {}).get("hits") or []
        if hits / size > page and page_hits and "sort" in page_hits[-1]:
            body["search_after"] = page_hits[-1]["sort"]
            return True
        return False

    return await _page_through(call, path, body, total_pages, pit_from, advance)


async def _page_through(call: Call, path: str, body: dict[str, Any], total_pages: int, pit_from: str | None,
                        advance: Callable[[dict[str, Any], int], bool]) -> Result:
    """Request page after page of ``body`` (with the newest point-in-time id when ``pit_from`` names one) until
    ``total_pages`` are read or ``advance(answer, page)`` -- which sets up the next page in ``body`` -- says no."""
    timed_out = False
    page = 0
    while page < total_pages:
        page += 1
        if pit_from:
            body["pit"]["id"] = composite_context.get(pit_from)
        status, resp = await call("POST", path, body=body)
        if status >= 400:
            return failed(status, resp, units=page, unit="pages")
        timed_out = timed_out or bool(resp.get("timed_out"))
        if pit_from and resp.get("pit_id"):
            composite_context.put(pit_from, resp["pit_id"])  # the newest id is the one to use
        if not advance(resp, page):
            break
    return _pages_result(page, timed_out)


async def scroll_search(ctx: Context, p: dict[str, Any]) -> Result:
    """A scroll sorted by _doc, 10 s keep-alive, page after page until no hits are left or ``pages`` are read;
    the scroll is cleared at the end."""
    call = Call(ctx, p)
    size = _page_size(p)
    total_pages = _pages(p)
    first: dict[str, Any] = {"sort": "_doc", "scroll": "10s"}
    if size:
        first["size"] = size
    scroll_id = None
    pages = 0
    timed_out = False
    try:
        status, resp = await call("POST", f"/{target(ctx, p)}/_search", body=dict(p.get("body") or {}), params=first)
        if status >= 400:
            return failed(status, resp, unit="pages")
        pages = 1
        scroll_id = resp.get("_scroll_id")
        total = resp.get("hits", {}).get("total", 0)
        hits = total.get("value", 0) if isinstance(total, dict) else int(total or 0)
        timed_out = bool(resp.get("timed_out"))
        done = (size is not None and hits < size) or hits == 0
        while not done and pages < total_pages:
            status, resp = await call("POST", "/_search/scroll", body={"scroll_id": scroll_id, "scroll": "10s"},
                                      own_params=False)
            if status >= 400:
                return failed(status, resp, units=pages, unit="pages")
            pages += 1
            scroll_id = resp.get("_scroll_id", scroll_id)
            timed_out = timed_out or bool(resp.get("timed_out"))
            done = not resp.get("hits", {}).get("hits")
    finally:
        if scroll_id:
            await call("DELETE", "/_search/scroll", body={"scroll_id": [scroll_id]}, own_params=False)
    return _pages_result(pages, timed_out)


async def search(ctx: Context, p: dict[str, Any]) -> Result:
    """``search`` with ``pages`` is Rally's older form of a scroll search; without, the core search."""
    if "pages" in p:
        return await scroll_search(ctx, p)
    return await core_search(ctx, p)


def _aggs(obj: Any) -> Any:
    return (obj.get("aggs") or obj.get("aggregations")) if isinstance(obj, dict) else None


def composite_paths(obj: Any, parent: list[str]) -> list[list[str]]:
    """Paths (aggregation names) to every composite aggregation in a search body."""
    out: list[list[str]] = []
    aggs = _aggs(obj)
    if isinstance(aggs, dict):
        for key, sub in aggs.items():
            if isinstance(sub, dict) and isinstance(sub.get("composite"), dict):
                out.append(parent + [key])
            out.extend(composite_paths(sub, parent + [key]))
    return out


def _composite_at(body: dict[str, Any], path: list[str]) -> dict[str, Any]:
    node: Any = body
    for key in path:
        node = _aggs(node)[key]
    return node["composite"]


async def composite_agg(ctx: Context, p: dict[str, Any]) -> Result:
    """Pages of the body's one composite aggregation, following ``after_key`` (``pages`` defaults to all)."""
    import copy

    call = Call(ctx, p)
    body = copy.deepcopy(p.get("body") or {})
    paths = composite_paths(body, [])
    if len(paths) != 1:
        raise ValueError(f"composite-agg needs exactly one composite aggregation in its body, found {len(paths)}")
    agg = _composite_at(body, paths[0])
    size = _page_size(p)
    if size:
        agg["size"] = size
    total_pages = _pages(p, "all")
    pit_from = _pit(p, body)
    path = "/_search" if pit_from else f"/{target(ctx, p)}/_search"

    def advance(resp: dict[str, Any], page: int) -> bool:
        node: Any = resp.get("aggregations", {})
        for key in paths[0]:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        after = node.get("after_key") if isinstance(node, dict) else None
        if isinstance(after, dict):
            agg["after"] = after
            return True
        return False

    return await _page_through(call, path, body, total_pages, pit_from, advance)


# ------------------------------------------------------------------ point in time, async search


# Which point-in-time API a cluster answers: Elasticsearch's /_pit, or OpenSearch's /_search/point_in_time (learnt
# from the first open, so measured requests never probe).
_OPENSEARCH_PIT: weakref.WeakKeyDictionary[RawHttp, bool] = weakref.WeakKeyDictionary()


def _no_such_api(status: int, resp: Any) -> bool:
    text = str(resp)
    return status in (400, 405) and ("no handler found" in text or "Incorrect HTTP method" in text)


async def open_point_in_time(ctx: Context, p: dict[str, Any]) -> Result:
    name = str(p.get("name"))
    composite_context.has(name)  # fail before sending when not inside a composite operation
    call = Call(ctx, p)
    params = {"keep_alive": p.get("keep-alive") or PIT_KEEP_ALIVE}
    index = target(ctx, p)
    if not _OPENSEARCH_PIT.get(call.http):
        status, resp = await call("POST", f"/{index}/_pit", params=params)
        if status < 400:
            composite_context.put(name, resp["id"])
            return Result()
        if not _no_such_api(status, resp):
            return failed(status, resp)
    status, resp = await call("POST", f"/{index}/_search/point_in_time", params=params)
    if status >= 400:
        return failed(status, resp)
    _OPENSEARCH_PIT[call.http] = True
    composite_context.put(name, resp["pit_id"])
    return Result()


async def close_point_in_time(ctx: Context, p: dict[str, Any]) -> Result:
    pit_from = p["with-point-in-time-from"]
    call = Call(ctx, p)
    pit_id = composite_context.get(pit_from)
    if _OPENSEARCH_PIT.get(call.http):
        status, resp = await call("DELETE", "/_search/point_in_time", body={"pit_id": [pit_id]})
    else:
        status, resp = await call("DELETE", "/_pit", body={"id": pit_id})
    composite_context.remove(pit_from)
    return failed(status, resp) if status >= 400 else Result()


async def submit_async_search(ctx: Context, p: dict[str, Any]) -> Result:
    name = str(p.get("name"))
    composite_context.has(name)
    params = dict(p.get("request-params") or {})
    params.setdefault("wait_for_completion_timeout", 0)  # Rally's default: never answer synchronously
    index = p.get("index")
    path = f"/{','.join(names(index))}/_async_search" if index else "/_async_search"
    status, resp = await Call(ctx, p)("POST", path, body=p["body"], params=params, own_params=False)
    if status >= 400:
        return failed(status, resp)
    composite_context.put(name, resp.get("id"))
    return Result()


async def get_async_search(ctx: Context, p: dict[str, Any]) -> Result:
    """Polls the named searches until none is running (Rally retries this operation until it succeeds); weight =
    the searches that completed."""
    call = Call(ctx, p)
    wanted = names(p["retrieve-results-for"])
    for n in wanted:
        composite_context.get(n)  # a name no earlier request of the composite used is an error, as in Rally
    deadline = time.monotonic() + param_float(p, "retry-max-duration", 600.0)
    while True:
        completed = 0
        for n in wanted:
            status, resp = await call("GET", f"/_async_search/{composite_context.get(n)}")
            if status >= 400:
                return failed(status, resp)
            if not resp.get("is_running"):
                completed += 1
        if completed == len(wanted):
            return Result(units=completed)
        if time.monotonic() > deadline:
            return problem("async-search", f"{len(wanted) - completed} async searches still running",
                           units=completed)
        await asyncio.sleep(param_float(p, "retry-wait-period", 0.5))


async def delete_async_search(ctx: Context, p: dict[str, Any]) -> Result:
    call = Call(ctx, p)
    for n in names(p["delete-results-for"]):
        status, resp = await call("DELETE", f"/_async_search/{composite_context.get(n)}", own_params=False)
        composite_context.remove(n)
        if status >= 400:
            return failed(status, resp)
    return Result()


# ------------------------------------------------------------------ field caps, ES|QL, SQL


async def field_caps(ctx: Context, p: dict[str, Any]) -> Result:
    body = dict(p.get("body") or {})
    if p.get("index_filter"):
        body["index_filter"] = p["index_filter"]
    fields = p.get("fields", "*")
    status, resp = await Call(ctx, p)("POST", f"/{','.join(names(p.get('index') or '_all'))}/_field_caps",
                                      body=body, params={"fields": fields})
    return failed(status, resp) if status >= 400 else Result()


async def esql(ctx: Context, p: dict[str, Any]) -> Result:
    """ES|QL (``esql-profile``: with ``profile: true``); partial results are a failed request, as in Rally."""
    body = dict(p.get("body") or {})
    body["query"] = p["query"]
    if p.get("_profile"):
        body["profile"] = True
    if p.get("filter"):
        body["filter"] = p["filter"]
    status, resp = await Call(ctx, p)("POST", "/_query", body=body)
    if status >= 400:
        return failed(status, resp)
    if isinstance(resp, dict) and resp.get("is_partial"):
        return problem("esql", "ES|QL query returned partial results", status=status)
    return Result()


async def esql_profile(ctx: Context, p: dict[str, Any]) -> Result:
    return await esql(ctx, {**p, "_profile": True})


async def sql(ctx: Context, p: dict[str, Any]) -> Result:
    """SQL with ``pages``: follow the cursor that many times; an exhausted cursor before then fails."""
    call = Call(ctx, p)
    pages = as_int(p.get("pages", 1), "pages")
    status, resp = await call("POST", "/_sql", body=p["body"], own_params=False)
    done = 1
    while status < 400 and done < pages:
        cursor = resp.get("cursor") if isinstance(resp, dict) else None
        if not cursor:
            return problem("sql", f"result set exhausted with {pages - done} page(s) left to fetch", units=done)
        status, resp = await call("POST", "/_sql", body={"cursor": cursor}, own_params=False)
        done += 1
    return failed(status, resp, units=done) if status >= 400 else Result(units=done)


# ------------------------------------------------------------------ load-time checks


def check_search(name: str, op_type: str, params: dict[str, Any], *, track_file: str) -> None:
    need_dict(name, op_type, params, "body", track_file=track_file)
    for key in ("pages", "results-per-page"):
        value = params.get(key)
        if value is None or (key == "pages" and value == "all"):
            continue
        try:
            ok = as_int(value, key) >= 1
        except Exception:  # noqa: BLE001 - the message below names the parameter
            ok = False
        if not ok:
            raise TrackError(f"{track_file}: operation '{name}' ({op_type}) has {key} {value!r}: use a positive "
                             f"integer" + (" or 'all'" if key == "pages" else ""))
    if op_type == "composite-agg" and isinstance(params.get("body"), dict):
        found = len(composite_paths(params["body"], []))
        if found != 1:
            raise TrackError(f"{track_file}: operation '{name}' (composite-agg) needs exactly one composite "
                             f"aggregation in its body, found {found}")
    if op_type == "sql" and not (isinstance(params.get("body"), dict) and params["body"].get("query")):
        raise TrackError(f"{track_file}: operation '{name}' (sql) needs body.query")
    if "detailed-results" in params:
        try:
            param_bool(params, "detailed-results", False)
        except TrackError as e:
            raise TrackError(f"{track_file}: operation '{name}' ({op_type}): {e}") from None


RUNNERS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "search": (search, ()),
    "paginated-search": (paginated_search, ("pages",)),
    "scroll-search": (scroll_search, ("pages",)),
    "composite-agg": (composite_agg, ("body",)),
    # "name" (the id's key) is written on the composite's request; a task's operation has no such parameter
    "open-point-in-time": (open_point_in_time, ()),
    "close-point-in-time": (close_point_in_time, ("with-point-in-time-from",)),
    "submit-async-search": (submit_async_search, ("body",)),
    "get-async-search": (get_async_search, ("retrieve-results-for",)),
    "delete-async-search": (delete_async_search, ("delete-results-for",)),
    "field-caps": (field_caps, ()),
    "esql": (esql, ("query",)),
    "esql-profile": (esql_profile, ("query",)),
    "sql": (sql, ("body",)),
}
