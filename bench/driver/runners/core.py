"""What each core operation type does against a cluster. One async function per type, listed in
CORE_RUNNERS (bench.driver.runners.registry serves them with the ones extensions register); each returns a Result (how much work, success, error type) and never raises for an HTTP
error — the client loop turns transport exceptions into failed Results itself.

Parameter names are Rally's (``request-params``, ``retry-until-success``, ``only-if-exists`` ...).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bench.driver.bulk.bodies import BulkBody
from bench.driver.item_errors import error_reason, item_failures, item_failures_text
from bench.driver.missing_feature import ONE_NODE_REPLICAS
from bench.driver.param_types import ParamError, as_float, as_int, param_bool, param_float, param_int
from bench.driver.runners.track_defs import TrackDefinitions
from bench.http.client import RawHttp


@dataclass(slots=True)
class Result:
    units: int = 1
    unit: str = "ops"
    bytes_sent: int = 0
    success: bool = True
    error_type: str | None = None
    failed_units: int = 0
    detail: str | None = None  # why it failed, for --on-error=abort and logs
    bytes_received: int = 0  # response body bytes (k6's data_received, Loadgen's transfer)
    status: int = 0  # HTTP status of the (last) response, 0 when none
    meta: dict[str, Any] | None = None  # what a track's runner returned besides weight/unit/success (sample meta)
    # Seconds the runner spent after the answer had arrived (a vector search's recall): not the request's time,
    # as OSB's request_context_holder leaves it out.
    after_response: float = 0.0


@dataclass
class Context:
    """What a client's runners can reach: one RawHttp per cluster, the track's index bodies, and its other
    declarations (templates, data streams) for the admin operations that default to them."""

    http: dict[str, RawHttp]
    default_cluster: str
    indices: dict[str, dict[str, Any] | None] = field(default_factory=dict)  # name -> body
    definitions: TrackDefinitions = field(default_factory=TrackDefinitions)

    def cluster(self, params: dict[str, Any]) -> RawHttp:
        return self.http[params.get("cluster", self.default_cluster)]

    def default_index(self) -> str:
        return ",".join(self.indices) if self.indices else "_all"


Runner = Callable[[Context, dict[str, Any]], Awaitable[Result]]


def failed_result(status: int, body: Any, *, units: int = 1, unit: str = "ops", bytes_sent: int = 0) -> Result:
    reason = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        reason = error_reason(body["error"])
    elif body:
        reason = str(body)[:300]
    return Result(units=units, unit=unit, bytes_sent=bytes_sent, success=False, error_type=f"http-{status}",
                  failed_units=units if unit == "docs" else 0, detail=f"HTTP {status}: {reason}", status=status)


def _req_params(p: dict[str, Any]) -> dict[str, Any]:
    return dict(p.get("request-params") or {})


async def bulk(ctx: Context, p: dict[str, Any]) -> Result:
    b: BulkBody = p["body"]
    # filter_path keeps a successful answer to {"errors":false,...} and lists only failed items.
    status, raw = await ctx.cluster(p).post(p["path"], b.body, gzipped=b.gzipped, node=p.get("node"))
    if status >= 400:
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw[:300].decode(errors="replace")
        return failed_result(status, body, units=b.docs, unit="docs", bytes_sent=b.size)
    if b'"errors":false' in raw[:128]:
        res = Result(units=b.docs, unit="docs", bytes_sent=b.size, bytes_received=len(raw), status=status)
    else:
        res = bulk_result(raw, status, docs=b.docs, bytes_sent=b.size)
    if "node" in p:  # a shard-aware bulk: which node it went to is part of the record
        res.meta = {"node": p["node"]}
    return res


def bulk_result(raw: bytes, status: int, *, docs: int, bytes_sent: int) -> Result:
    """A 2xx bulk answer: success, or the count of failed items (the answer lists only those, see
    filter_path), grouped by kind with a count each (``item_failures``)."""
    data = json.loads(raw)
    ok = Result(units=docs, unit="docs", bytes_sent=bytes_sent, bytes_received=len(raw), status=status)
    if not data.get("errors"):
        return ok
    failed, kinds = item_failures(data.get("items") or [])
    ok.success, ok.error_type, ok.failed_units = False, "bulk-item-failures", failed or docs
    ok.detail = item_failures_text(failed, docs, kinds)
    return ok


def request_docs(params: dict[str, Any]) -> int:
    """The documents a request carries (a bulk body's), 0 for others: what a request that failed without an answer
    (connection refused or reset, timeout) failed to index."""
    body = params.get("body")
    return body.docs if isinstance(body, BulkBody) else 0


def raw_failure(status: int, raw: bytes, *, bytes_sent: int) -> Result:
    try:
        body: Any = json.loads(raw)
    except ValueError:
        body = raw[:300].decode(errors="replace")
    res = failed_result(status, body, bytes_sent=bytes_sent)
    res.bytes_received, res.status = len(raw), status
    return res


def search_body(p: dict[str, Any]) -> bytes:
    """A search's body as sent: ``body`` with ``results-per-page`` as its size. The param sources serialise a
    constant body once (``_body_bytes``), so a search sends prepared bytes."""
    doc = p.get("body") or {}
    if p.get("results-per-page"):
        doc = {**doc, "size": as_int(p["results-per-page"], "results-per-page")}
    return json.dumps(doc).encode()


async def search(ctx: Context, p: dict[str, Any]) -> Result:
    # Rally's targets: index, else data-stream, else the track's only index or data stream (bench: all indices)
    index = p.get("index") or p.get("data-stream") or ctx.definitions.default_target() or ctx.default_index()
    if isinstance(index, list):
        index = ",".join(index)
    params = p.get("request-params")
    if "cache" in p:
        params = {**(params or {}), "request_cache": param_bool(p, "cache", False)}
    body = p.get("_body_bytes")
    if body is None:
        body = search_body(p)
    status, raw = await ctx.cluster(p).send("POST", f"/{index}/_search", body, params=params, idempotent=True)
    if status >= 400:
        return raw_failure(status, raw, bytes_sent=len(body))
    # The answer starts {"took":N,"timed_out":...}: no need to parse the hits to know.
    if b'"timed_out":true' in raw[:100]:
        return Result(success=False, error_type="search-timed-out", detail="search timed out",
                      bytes_sent=len(body), bytes_received=len(raw), status=status)
    return Result(bytes_sent=len(body), bytes_received=len(raw), status=status)


def _indices_for(ctx: Context, p: dict[str, Any]) -> list[str]:
    if p.get("index"):
        return [p["index"]] if isinstance(p["index"], str) else list(p["index"])
    return list(ctx.indices)


async def create_index(ctx: Context, p: dict[str, Any]) -> Result:
    http = ctx.cluster(p)
    names = _indices_for(ctx, p)
    extra_settings = p.get("settings") or {}
    for name in names:
        body = json.loads(json.dumps(ctx.indices.get(name) or p.get("body") or {}))
        if extra_settings:
            body.setdefault("settings", {}).update(extra_settings)
        status, resp = await http.request("PUT", f"/{name}", params=_req_params(p), body=body)
        if status >= 400:
            return failed_result(status, resp)
    return Result(units=len(names))


async def delete_index(ctx: Context, p: dict[str, Any]) -> Result:
    http = ctx.cluster(p)
    only_if_exists = param_bool(p, "only-if-exists", True)
    names = _indices_for(ctx, p)
    for name in names:
        params = _req_params(p)
        if only_if_exists:
            params.setdefault("ignore_unavailable", True)
            params.setdefault("allow_no_indices", True)
        status, resp = await http.request("DELETE", f"/{name}", params=params)
        if status == 404 and only_if_exists:
            continue
        if status >= 400:
            return failed_result(status, resp)
    return Result(units=len(names))


_HEALTH_ORDER = {"red": 0, "yellow": 1, "green": 2}


async def cluster_health(ctx: Context, p: dict[str, Any]) -> Result:
    """Rally's semantics: success when the status is at least ``wait_for_status`` (any status when not given:
    Elasticsearch does not wait then) and, with ``wait_for_no_relocating_shards``, no shard relocates. The
    answer's ``timed_out`` is not judged on its own: a wait that timed out shows in the status it returns."""
    params = _req_params(p)
    # Read before sending: a bad value is bench's error naming the parameter, not a 400 from the cluster.
    no_relocating = param_bool(params, "wait_for_no_relocating_shards", False)
    index = p.get("index")
    path = f"/_cluster/health/{index}" if index else "/_cluster/health"
    status, body = await ctx.cluster(p).request("GET", path, params=params)
    if status >= 400 and status != 408:  # 408: wait_for_* timed out, judged below
        return failed_result(status, body)
    expected = params.get("wait_for_status")
    got = body.get("status") if isinstance(body, dict) else None
    if expected is not None and _HEALTH_ORDER.get(str(got), -1) < _HEALTH_ORDER.get(str(expected).lower(), 3):
        if index and not await _index_exists(ctx, p, str(index)):
            return missing_index(str(index), status)
        return Result(success=False, error_type="cluster-health", status=status,
                      detail=f"cluster health is {got}, expected {expected}{_unplaceable_replicas(body)}")
    relocating = body.get("relocating_shards", 0) if isinstance(body, dict) else 0
    if no_relocating and relocating:
        return Result(success=False, error_type="cluster-health", status=status,
                      detail=f"{relocating} shards are still relocating")
    return Result(status=status)


def _unplaceable_replicas(body: Any) -> str:
    """Why a one-node cluster stays yellow, in the health answer's own counts: a replica never shares a node with
    its primary, so its replicas stay unassigned (OSB's workloads default to one replica)."""
    if not isinstance(body, dict) or body.get("status") != "yellow" or body.get("number_of_data_nodes") != 1:
        return ""
    unassigned = body.get("unassigned_shards")
    if not isinstance(unassigned, int) or unassigned <= 0:
        return ""
    return f": {unassigned} {ONE_NODE_REPLICAS}"


# A wait on an index that does not exist cannot succeed by waiting: retrying it would only hold the race until its
# bound (a create-index that failed before a cluster-health with retry-until-success waited 231 s).
INDEX_MISSING = "index-missing"


def missing_index(index: str, status: int = 404) -> Result:
    return Result(success=False, error_type=INDEX_MISSING, status=status,
                  detail=f"index {index} does not exist, so waiting for it cannot succeed: the step that creates it "
                         f"failed or did not run (not retried)")


async def _index_exists(ctx: Context, p: dict[str, Any], index: str) -> bool:
    # allow_no_indices=false: a pattern matching nothing is missing too
    status, _ = await ctx.cluster(p).request("HEAD", f"/{index}", params={"allow_no_indices": "false"})
    return status != 404


def _not_found_index(res: Result) -> bool:
    return res.error_type == INDEX_MISSING or (res.status == 404 and "index_not_found_exception" in (res.detail or ""))


async def refresh(ctx: Context, p: dict[str, Any]) -> Result:
    index = p.get("index", "_all")
    status, body = await ctx.cluster(p).request("POST", f"/{index}/_refresh", params=_req_params(p))
    return failed_result(status, body) if status >= 400 else Result()


async def force_merge(ctx: Context, p: dict[str, Any]) -> Result:
    index = p.get("index") or ctx.default_index()
    params = _req_params(p)
    if "max-num-segments" in p:
        params["max_num_segments"] = p["max-num-segments"]
    mode = p.get("mode", "blocking")
    if mode not in ("blocking", "polling"):
        raise ParamError(f"force-merge: mode must be 'blocking' or 'polling', got {mode!r}")
    if mode == "polling":
        return await _force_merge_polling(ctx, p, index, params)
    # A force merge may take far longer than a normal request: it is bounded by request-timeout only.
    timeout = param_float(p, "request-timeout", 7200.0)
    status, body = await ctx.cluster(p).request("POST", f"/{index}/_forcemerge", params=params, timeout=timeout)
    return failed_result(status, body) if status >= 400 else Result()


async def _force_merge_polling(ctx: Context, p: dict[str, Any], index: str, params: dict[str, Any]) -> Result:
    """Rally's ``mode: polling``: start the merge as a task (``wait_for_completion=false``), then check every
    ``poll-period`` (Rally's default 10 s) until it completed; where the engine returns no task, until no
    force-merge task runs. Bounded by ``retry-max-duration`` like bench's other waits."""
    period = param_float(p, "poll-period", 10.0)
    deadline = time.monotonic() + param_float(p, "retry-max-duration", 600.0)
    http = ctx.cluster(p)
    status, body = await http.request("POST", f"/{index}/_forcemerge",
                                      params={**params, "wait_for_completion": "false"})
    if status >= 400:
        return failed_result(status, body)
    task = body.get("task") if isinstance(body, dict) else None
    while True:
        if time.monotonic() > deadline:
            return Result(success=False, error_type="force-merge",
                          detail=f"force-merge of {index} not complete in time (retry-max-duration)")
        await asyncio.sleep(period)
        if task:
            status, body = await http.request("GET", f"/_tasks/{task}")
            if status >= 400:
                return failed_result(status, body)
            if isinstance(body, dict) and body.get("completed"):
                err = body.get("error")
                return Result(success=False, error_type="force-merge", detail=f"force-merge failed: {err}") \
                    if err else Result()
        else:
            status, body = await http.request("GET", "/_tasks", params={"actions": "indices:admin/forcemerge"})
            if status >= 400:
                return failed_result(status, body)
            if not (body or {}).get("nodes"):
                return Result()


async def put_settings(ctx: Context, p: dict[str, Any]) -> Result:
    status, body = await ctx.cluster(p).request("PUT", "/_cluster/settings", params=_req_params(p), body=p["body"])
    return failed_result(status, body) if status >= 400 else Result()


def _path_get(doc: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return None
        doc = doc[part]
    return doc


async def index_stats(ctx: Context, p: dict[str, Any]) -> Result:
    index = p.get("index", "_all")
    status, body = await ctx.cluster(p).request("GET", f"/{index}/_stats", params=_req_params(p))
    if status >= 400:
        return failed_result(status, body)
    cond = p.get("condition")
    if cond:
        actual = _path_get(body, cond["path"])
        if str(actual) != str(cond["expected-value"]):
            return Result(success=False, error_type="condition", status=status,
                          detail=f"{cond['path']} is {actual}, expected {cond['expected-value']}")
    return Result()


async def raw_request(ctx: Context, p: dict[str, Any]) -> Result:
    method = p.get("method", "GET")
    status, body = await ctx.cluster(p).request(method, p["path"], params=_req_params(p), body=p.get("body"),
                                                headers=p.get("headers"))
    ignore = p.get("ignore") or []
    ignore = [as_int(i, "ignore") for i in ([ignore] if isinstance(ignore, int | str) else ignore)]
    if status >= 400 and status not in ignore:
        return failed_result(status, body)
    return Result()


async def sleep(ctx: Context, p: dict[str, Any]) -> Result:
    await asyncio.sleep(as_float(p.get("duration"), "duration"))
    return Result()


# type -> (runner, the parameters a track must give it: Rally's "mandatory parameters"). Extensions add
# theirs through bench.driver.runners.registry.register_runner.
CORE_RUNNERS: dict[str, tuple[Runner, tuple[str, ...]]] = {
    "bulk": (bulk, ("bulk-size",)),
    "search": (search, ()),
    "create-index": (create_index, ()),
    "delete-index": (delete_index, ()),
    "cluster-health": (cluster_health, ()),
    "refresh": (refresh, ()),
    "force-merge": (force_merge, ()),
    "put-settings": (put_settings, ("body",)),
    "index-stats": (index_stats, ()),
    "raw-request": (raw_request, ("path",)),
    "sleep": (sleep, ("duration",)),
}


def with_retries(runner: Runner, p: dict[str, Any]) -> Runner:
    """Rally's retry parameters: retries, retry-wait-period, retry-on-error, retry-on-timeout,
    retry-until-success. The whole retried sequence is one request: its service time includes the waits. A missing
    index ends it at once (waiting cannot create it); ``retry-max-duration`` bounds the rest (test mode: 30 s)."""
    until_success = param_bool(p, "retry-until-success", False)
    retries = param_int(p, "retries", 0)
    on_error = param_bool(p, "retry-on-error", False) or until_success
    on_timeout = param_bool(p, "retry-on-timeout", False) or until_success
    wait = param_float(p, "retry-wait-period", 0.5)
    # bench's bound on retry-until-success so a broken cluster cannot hang a race forever.
    max_wait = param_float(p, "retry-max-duration", 600.0)
    if not (until_success or retries):
        return runner

    async def retrying(ctx: Context, params: dict[str, Any]) -> Result:
        deadline = time.monotonic() + max_wait
        attempt = 0
        while True:
            try:
                res = await runner(ctx, params)
            except (asyncio.TimeoutError, TimeoutError):
                if not on_timeout or time.monotonic() > deadline:
                    raise
                res = None
            if res is not None and (res.success or not on_error or _not_found_index(res)):
                return res
            attempt += 1
            if (not until_success and attempt > retries) or time.monotonic() > deadline:
                if res is None:
                    raise asyncio.TimeoutError()
                return res
            await asyncio.sleep(wait)

    return retrying
