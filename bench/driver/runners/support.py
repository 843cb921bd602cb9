"""What the runners of Rally's admin, search and snapshot operations share: request options read as Rally reads
them (``request-params``, ``headers``, ``opaque-id``, ``request-timeout``), failed Results from HTTP answers, and
the load-time check helpers of their parameters."""

from __future__ import annotations

from typing import Any

from bench.driver.param_types import as_float
from bench.driver.runners.core import Context, Result, failed_result
from bench.http.client import RawHttp
from bench.util.errors import TrackError


class Call:
    """One operation's request options, bound to its cluster: every request of the operation sends them."""

    def __init__(self, ctx: Context, p: dict[str, Any]) -> None:
        self.http: RawHttp = ctx.cluster(p)
        self.params: dict[str, Any] = dict(p.get("request-params") or {})
        headers = dict(p.get("headers") or {})
        if p.get("opaque-id"):
            headers["x-opaque-id"] = str(p["opaque-id"])
        self.headers = headers or None
        self.timeout = as_float(p["request-timeout"], "request-timeout") if p.get("request-timeout") else None

    async def __call__(self, method: str, path: str, *, body: Any = None, params: dict[str, Any] | None = None,
                       own_params: bool = True) -> tuple[int, Any]:
        """``own_params``: send the operation's request-params too (not to follow-up calls that reject them)."""
        merged = {**(self.params if own_params else {}), **(params or {})}
        return await self.http.request(method, path, params=merged or None, body=body, headers=self.headers,
                                       timeout=self.timeout)


def failed(status: int, body: Any, *, units: int = 1, unit: str = "ops") -> Result:
    return failed_result(status, body, units=units, unit=unit)


def problem(kind: str, detail: str, *, units: int = 1, unit: str = "ops", status: int = 0) -> Result:
    """A failure found in a 2xx answer (a snapshot that failed, a search still running): counted like an HTTP one."""
    return Result(units=units, unit=unit, success=False, error_type=kind, detail=detail, status=status)


def names(value: Any) -> list[str]:
    """Rally takes one name or a list of names wherever several are allowed."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def need_dict(name: str, op_type: str, params: dict[str, Any], key: str, *, track_file: str) -> None:
    if key in params and not isinstance(params[key], dict):
        raise TrackError(f"{track_file}: operation '{name}' ({op_type}) has {key} {params[key]!r}: use a JSON object")
