"""The ``loadgen-request`` operation: one rendered Loadgen request (see ``bench.loadgen.source``)."""

from __future__ import annotations

from typing import Any

from bench.driver.param_sources import register_param_source
from bench.driver.runners.core import Context, Result, bulk_result, raw_failure
from bench.driver.runners.registry import register_runner
from bench.loadgen.conditions import Response
from bench.loadgen.source import loadgen_request_source, template_bulk_source


async def loadgen_request(ctx: Context, p: dict[str, Any]) -> Result:
    """A rendered Loadgen request: any method/path/headers; HTTP >= 400 is an error."""
    r = p["request"]
    wire = p.get("wire", r.body)
    sent = len(wire or b"")  # what went on the wire: the gzipped size under --compress
    status, raw = await ctx.cluster(p).send(r.method, r.url, wire or None, headers=r.headers,
                                            gzipped=p.get("gzipped", False))
    units, unit = (r.docs, "docs") if r.docs else (1, "ops")
    if status >= 400:
        res = raw_failure(status, raw, bytes_sent=sent)
        res.units, res.unit = units, unit
        return res
    check = p.get("check")
    if check is not None and not check(Response(status, raw)):
        # Loadgen's "invalid": answered, but not as asserted
        return Result(units=units, unit=unit, bytes_sent=sent, bytes_received=len(raw), status=status,
                      success=False, error_type="assert-failed", failed_units=units if r.docs else 0,
                      detail=f"{r.method} {r.url.split('?')[0]}: the response failed its assert")
    if r.docs and b'"errors":true' in raw[:200]:
        return bulk_result(raw, status, docs=units, bytes_sent=sent)
    return Result(units=units, unit=unit, bytes_sent=sent, bytes_received=len(raw), status=status)


def register() -> None:
    """Loadgen's operation and parameter sources, registered with the driver from the extension's setup()."""
    register_runner("loadgen-request", loadgen_request, required=("config",))  # bench loadgen's, not for tracks
    register_param_source("loadgen-request", loadgen_request_source)
    register_param_source("bulk", template_bulk_source, if_param="template")
