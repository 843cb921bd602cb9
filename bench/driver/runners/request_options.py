"""Rally's generic operation parameters, honoured for every runner that sends through ``RawHttp``:
``headers``, ``opaque-id`` (sent as ``X-Opaque-Id``), ``response-compression-enabled`` (false: ``Accept-Encoding:
identity``), ``request-timeout`` (seconds, client side), ``assertions``
(checked against the answer; a failed one fails the request) and ``detailed-results`` (what the answer says goes
into the sample's meta).

The options of the request in flight live in ``bench.http.request_scope`` (a context variable the HTTP client
reads).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from typing import Any

from bench.driver.param_types import as_float, param_bool
from bench.driver.runners.core import Context, Result, Runner
from bench.http.request_scope import CURRENT, RequestOptions
from bench.util.errors import TrackError

_CONDITIONS: dict[str, Callable[[Any, Any], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "==": operator.eq}


def check_assertions(assertions: Any, where: str) -> list[dict[str, Any]]:
    """Rally's ``assertions``: a list of ``{property, condition, value}``; anything else is a TrackError."""
    if not isinstance(assertions, list):
        raise TrackError(f"{where}: assertions must be a list of {{property, condition, value}}, got {assertions!r}")
    for a in assertions:
        if not (isinstance(a, dict) and isinstance(a.get("property"), str) and a.get("condition") in _CONDITIONS
                and "value" in a):
            raise TrackError(f"{where}: assertion {a!r} needs 'property', 'condition' (one of "
                             f"{', '.join(_CONDITIONS)}) and 'value'")
    return assertions


def properties(op_type: str, res: Result, answer: Any) -> dict[str, Any]:
    """What assertions and detailed results read: the answer itself, with Rally's search keys (``hits`` the
    total hit count, ``hits_relation``, ``timed_out``, ``took``) for search-like answers, and weight/unit/success."""
    props: dict[str, Any] = dict(answer) if isinstance(answer, dict) else {}
    hits = props.get("hits")
    if isinstance(hits, dict) and "total" in hits:
        total = hits["total"]
        props["hits"] = total.get("value") if isinstance(total, dict) else total
        props["hits_relation"] = total.get("relation", "eq") if isinstance(total, dict) else "eq"
    props.update(weight=res.units, unit=res.unit, success=res.success)
    return props


def _lookup(props: Any, path: str) -> Any:
    """``a.b.c``; a number indexes a list (``tasks.0.headers``), which Rally's dict-only lookup cannot."""
    for part in path.split("."):
        if isinstance(props, list) and part.isdigit() and int(part) < len(props):
            props = props[int(part)]
        elif isinstance(props, dict) and part in props:
            props = props[part]
        else:
            raise KeyError(path)
    return props


def _failed_assertion(assertions: list[dict[str, Any]], props: dict[str, Any], name: str) -> str | None:
    for a in assertions:
        try:
            actual = _lookup(props, a["property"])
        except KeyError:
            return f"assertion on [{a['property']}] in [{name}]: the answer has no such property"
        try:
            ok = _CONDITIONS[a["condition"]](actual, a["value"])
        except TypeError:
            ok = False
        if not ok:
            return f"Expected [{a['property']}] in [{name}] to be {a['condition']} [{a['value']}] but was [{actual}]."
    return None


def with_request_options(runner: Runner, op_name: str, op_type: str, p: dict[str, Any]) -> Runner:
    """``runner`` sending with the operation's headers, opaque id and timeout, its answer checked against the
    assertions and, with detailed-results, summarised into ``Result.meta``. Unchanged when none is given."""
    headers = {str(k): str(v) for k, v in (p.get("headers") or {}).items()}
    if p.get("opaque-id") is not None:
        headers["X-Opaque-Id"] = str(p["opaque-id"])
    if not param_bool(p, "response-compression-enabled", True):
        # Rally's search parameter: ask for an uncompressed answer (the client asks for gzip otherwise)
        headers["Accept-Encoding"] = "identity"
    timeout = as_float(p["request-timeout"], "request-timeout") if p.get("request-timeout") is not None else None
    assertions = check_assertions(p["assertions"], f"operation '{op_name}'") if p.get("assertions") else []
    detailed = param_bool(p, "detailed-results", False)
    if not (headers or timeout is not None or assertions or detailed):
        return runner

    async def run(ctx: Context, params: dict[str, Any]) -> Result:
        opts = RequestOptions(headers, timeout, [] if (assertions or detailed) else None)
        token = CURRENT.set(opts)
        try:
            res = await runner(ctx, params)
        finally:
            CURRENT.reset(token)
        if not opts.responses:
            return res
        status, raw = opts.responses[-1]
        try:
            answer = json.loads(raw) if raw else None
        except ValueError:
            answer = None
        props = properties(op_type, res, answer)
        if detailed:
            res.meta = {**(res.meta or {}), **{k: props[k] for k in ("took", "hits", "hits_relation", "timed_out",
                                                                      "errors") if k in props}}
            res.meta["status"] = status
        if assertions and res.success:
            why = _failed_assertion(assertions, props, op_name)
            if why is not None:
                res.success, res.error_type, res.detail = False, "assertion", why
                res.failed_units = res.units if res.unit == "docs" else 0
        return res

    return run
