"""``esrally.driver.runner``: Rally's ``Runner`` base class, ``mandatory`` and the runners tracks import by name.

A track's runner receives bench's elasticsearch-py ``AsyncElasticsearch`` and the operation's params, as in Rally.
``BulkIndex`` is Rally's bulk runner as track code subclasses it (the elastic/logs and elastic/security tracks'
``raw-bulk``): the same parameters, the same returned meta-data (weight, unit, success and error counts, with
``detailed-results`` the per-operation counts and sizes), the same ``retries_on_429``.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from bench.compat.esrally import exceptions


class Runner:
    """Base of Rally's runners: an async context manager with an async ``__call__(es, params)``."""

    def __init__(self, *args: Any, config: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.logger = logging.getLogger(__name__)
        self.serverless_mode = False
        self.serverless_operator = False

    async def __aenter__(self) -> Runner:
        return self

    async def __call__(self, es: Any, params: dict[str, Any]) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement __call__(es, params)")

    async def __aexit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> bool:
        return False

    def _default_kw_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """The client keyword arguments Rally derives from an operation's params (None values dropped)."""
        keys = {"body": "body", "headers": "headers", "index": "index", "opaque_id": "opaque-id",
                "params": "request-params", "request_timeout": "request-timeout"}
        return {kw: params[p] for kw, p in keys.items() if params.get(p) is not None}

    @staticmethod
    def _transport_request_params(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any],
                                                                   dict[str, Any]]:
        """Split params into (params, request params, transport options, headers) the way Rally's runners do:
        ``request-timeout`` and ``ignore`` become client options, ``opaque-id`` the X-Opaque-Id header."""
        transport: dict[str, Any] = {}
        request_params = params.get("request-params", {})
        timeout = params.pop("request-timeout", None)
        if timeout:
            transport["request_timeout"] = timeout
        ignore = request_params.pop("ignore", None) or params.pop("ignore", None)
        if ignore:
            transport["ignore_status"] = ignore
        headers = params.pop("headers", None) or {}
        opaque_id = params.pop("opaque-id", None)
        if opaque_id:
            headers["x-opaque-id"] = opaque_id
        return params, request_params, transport, headers


def mandatory(params: dict[str, Any], key: str, op: Any) -> Any:
    try:
        return params[key]
    except KeyError:
        raise exceptions.DataError(f"Parameter source for operation '{op}' did not provide the mandatory "
                                   f"parameter '{key}'. Add it to your parameter source and try again.") from None


class PutSettings(Runner):
    """Rally's ``put-settings``: the cluster settings API with the operation's body."""

    async def __call__(self, es: Any, params: dict[str, Any]) -> None:
        await es.cluster.put_settings(body=mandatory(params, "body", repr(self)))

    def __repr__(self) -> str:
        return "put-settings"


_REFRESH = ("wait_for", "true", "false")


class BulkIndex(Runner):
    """Rally's ``bulk`` runner (``esrally.driver.runner.BulkIndex``), for track code that subclasses it."""

    async def __call__(self, es: Any, params: dict[str, Any]) -> dict[str, Any]:
        detailed = bool(params.get("detailed-results", False))
        bulk_params: dict[str, Any] = {k: params[k] for k in ("timeout", "pipeline") if k in params}
        if "refresh" in params:
            if params["refresh"] not in _REFRESH:
                raise exceptions.RallyAssertionError(f"Unsupported bulk refresh value: {params['refresh']}. Use one "
                                                     f"of [{', '.join(_REFRESH)}].")
            bulk_params["refresh"] = params["refresh"]
        with_action_metadata = mandatory(params, "action-metadata-present", self)
        bulk_size = mandatory(params, "bulk-size", self)
        unit = mandatory(params, "unit", self)
        retries_on_429 = int(params.get("retries_on_429", 0))
        body = params["body"]
        index = None if with_action_metadata else params.get("index")
        client = _with_options(es, params)
        query = {**(params.get("request-params") or {}), **bulk_params}
        response = await client.bulk(body=body, index=index, **query)
        stats = self._stats(params, body, bulk_size, unit, response, detailed)
        for _ in range(retries_on_429):
            if not stats["error-429"]:
                break
            lines = _lines(body)
            body = [line for i in stats["error-429"] for line in (lines[i * 2], lines[i * 2 + 1])]
            response = await client.bulk(body=body, index=index, **query)
            again = self._stats(params, body, len(body) // 2, unit, response, detailed)
            _accumulate(stats, again)
            if _status(response) not in (200, 201, 429):
                break
        meta: dict[str, Any] = {"index": params.get("index"), "weight": params.get("bulk-size"), "unit": unit}
        failed_429 = stats.pop("error-429")
        if stats.get("retry-count"):
            stats["success"] = not failed_429
        if not stats["success"]:
            stats["error-type"] = "bulk"
        meta.update({k: v for k, v in stats.items() if v is not None or k == "took"})
        return meta

    def _stats(self, params: dict[str, Any], body: Any, bulk_size: Any, unit: str, response: Any,
               detailed: bool) -> dict[str, Any]:
        data = response.body if hasattr(response, "body") else response
        status = _status(response)
        errors: set[tuple[int, str | None]] = set()
        error_429: list[int] = []
        ok = bulk_size if unit == "docs" else None
        failed = 0
        max_doc_status = -1
        ops: dict[str, Counter[str]] = {}
        shards: dict[str, dict[str, Any]] = {}
        if detailed or data.get("errors", False):
            ok = 0
            for i, item in enumerate(data.get("items", [])):
                op, doc = next(iter(item.items()))
                if detailed:
                    counts = ops.setdefault(op, Counter())
                    counts["item-count"] += 1
                    if "result" in doc:
                        counts[doc["result"]] += 1
                    if "_shards" in doc:
                        s = doc["_shards"]
                        key = f"{s['total']}-{s['successful']}-{s['failed']}"
                        shards.setdefault(key, {"item-count": 0, "shards": s})["item-count"] += 1
                if doc["status"] > 299 or ("_shards" in doc and doc["_shards"]["failed"] > 0):
                    failed += 1
                    max_doc_status = max(max_doc_status, doc["status"])
                    err = doc.get("error", {})
                    errors.add((doc["status"], (err.get("reason") if isinstance(err, dict) else str(err)) or None))
                    if doc["status"] == 429:
                        error_429.append(i)
                else:
                    ok += 1
        out: dict[str, Any] = {"took": data.get("took"), "success": failed == 0, "success-count": ok,
                               "error-count": failed, "request-status": status,
                               "max-doc-status": max_doc_status if max_doc_status > 0 else status,
                               "error-429": error_429}
        if failed:
            out["error-description"] = _error_description(errors)
        if detailed:
            lines = _lines(body)
            sizes = [len(x if isinstance(x, bytes) else str(x).encode()) for x in lines]
            with_meta = mandatory(params, "action-metadata-present", self)
            out["ops"] = {k: dict(v) for k, v in ops.items()}
            out["shards_histogram"] = list(shards.values())
            out["bulk-request-size-bytes"] = sum(sizes)
            out["total-document-size-bytes"] = sum(sz for i, sz in enumerate(sizes) if not with_meta or i % 2 == 1)
        if data.get("ingest_took") is not None:
            out["ingest_took"] = data["ingest_took"]
        return out

    def __repr__(self) -> str:
        return "bulk-index"


def _with_options(es: Any, params: dict[str, Any]) -> Any:
    headers = dict(params.get("headers") or {})
    if params.get("opaque-id"):
        headers["x-opaque-id"] = params["opaque-id"]
    options: dict[str, Any] = {}
    if headers:
        options["headers"] = headers
    if params.get("request-timeout") is not None:
        options["request_timeout"] = params["request-timeout"]
    return es.options(**options) if options and hasattr(es, "options") else es


def _status(response: Any) -> int:
    meta = getattr(response, "meta", None)
    return int(getattr(meta, "status", 200))


def _lines(body: Any) -> list[Any]:
    if isinstance(body, bytes):
        return list(body.split(b"\n"))
    if isinstance(body, str):
        return list(body.split("\n"))
    if isinstance(body, list):
        return body
    raise exceptions.DataError("bulk body is not of type bytes, string, or list")


def _accumulate(total: dict[str, Any], other: dict[str, Any]) -> None:
    """Rally's BulkStats.accumulate: counts add up, the last attempt's statuses and 429s stand."""
    for key in ("success-count", "error-count", "took"):
        total[key] = (total.get(key) or 0) + (other.get(key) or 0)
    for key in ("bulk-request-size-bytes", "total-document-size-bytes"):
        if key in total:
            total[key] += other.get(key, 0)
    if "ops" in total:
        total["ops"], total["shards_histogram"] = {}, []
    total["retry-count"] = total.get("retry-count", 0) + 1
    total["retried"] = True
    total["error-429"] = other["error-429"]
    total["request-status"], total["max-doc-status"] = other["request-status"], other["max-doc-status"]
    total.pop("error-description", None)
    total.pop("ingest_took", None)


def _error_description(errors: set[tuple[int, str | None]]) -> str:
    """Rally's: at most five distinct (status, reason) pairs, then a count per status."""
    ordered = sorted(errors, key=lambda e: (e[0], e[1] or ""))
    parts = [f"HTTP status: {st}, message: {reason}" if reason else f"HTTP status: {st}" for st, reason in ordered[:5]]
    text = " | ".join(parts)
    if len(ordered) > 5:
        counts = Counter(st for st, _ in ordered)
        text += " | TRUNCATED " + ", ".join(f"{counts[st]}x{st}" for st in sorted(counts))
    return text


# Rally's built-in runners that track code can call here with an elasticsearch-py client (bench runs its own
# runners for these types; these classes are Rally's, for code that looks them up or wraps them).
_RALLY_RUNNERS: dict[str, type[Runner]] = {"bulk": BulkIndex, "put-settings": PutSettings}


def runner_for(operation_type: str) -> Any:
    """Rally's ``runner_for``: the runner of an operation type, called as ``await runner(es, params)``. The track's
    own registrations come first (as in Rally, where they replace the defaults); a Rally type bench runs only through
    its own runners (which track code cannot call with a client) is Rally's RallyError, naming it."""
    from bench.track.plugins import registered_runner

    own = registered_runner(operation_type)
    if own is not None:
        return own
    if operation_type in _RALLY_RUNNERS:
        return _RALLY_RUNNERS[operation_type]()
    raise exceptions.RallyError(f"No runner available for operation-type: [{operation_type}] (bench runs this "
                                f"operation type only with its own runner, which track code cannot call; track code "
                                f"can call {', '.join(sorted(_RALLY_RUNNERS))} and the runners the track registers)")


def unwrap(runner: Any) -> Any:
    """Rally's ``unwrap``: the innermost runner of a chain of delegators (objects with a ``delegate``)."""
    delegate = getattr(runner, "delegate", None)
    return unwrap(delegate) if delegate else runner
