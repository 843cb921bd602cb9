"""Rally's ``composite`` operation: a tree of requests measured as one operation (weight 1, ``ops``).

``requests`` is a list; each item is either a request (``operation-type`` + its parameters, and a ``name`` that
later requests refer to) or ``{"stream": [...]}``, a list run concurrently with the streams next to it. A request
first waits for the streams before it; ``max-connections`` bounds the requests in flight. Only the request types
Rally allows there are accepted. The first failed request fails the whole operation with its message, as an
exception inside Rally's composite would.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any, Protocol

from bench.driver.param_types import param_int
from bench.driver.runners import composite_context
from bench.driver.runners.core import Context, Result, Runner
from bench.util.errors import TrackError

ALLOWED = ("open-point-in-time", "close-point-in-time", "search", "paginated-search", "composite-agg",
           "raw-request", "sleep", "submit-async-search", "get-async-search", "delete-async-search", "field-caps",
           # OpenSearch Benchmark's, on OpenSearch's point-in-time API
           "create-point-in-time", "delete-point-in-time", "list-all-point-in-time")

NAMED = ("open-point-in-time", "submit-async-search", "create-point-in-time")  # requests whose id later ones refer to by name


class _Failed(Exception):
    def __init__(self, result: Result) -> None:
        super().__init__(result.detail)
        self.result = result


class Spec(Protocol):
    """What the composite needs of a registered operation type (the registry's RunnerSpec)."""

    @property
    def runner(self) -> Runner: ...
    @property
    def required(self) -> tuple[str, ...]: ...
    @property
    def check(self) -> Any: ...


SpecOf = Callable[[str], "Spec | None"]


async def _run_stream(ctx: Context, items: list[dict[str, Any]], limit: asyncio.Semaphore, spec_of: SpecOf) -> None:
    streams: list[asyncio.Task[None]] = []
    try:
        for item in items:
            if "stream" in item:
                streams.append(asyncio.create_task(_run_stream(ctx, item["stream"], limit, spec_of)))
                continue
            if streams:
                await asyncio.gather(*streams)
                streams = []
            spec = spec_of(item["operation-type"])
            assert spec is not None  # the load-time check refused unknown types
            async with limit:
                res = await spec.runner(ctx, item)
            if not res.success:
                res.detail = f"{item.get('name') or item['operation-type']}: {res.detail}"
                raise _Failed(res)
        if streams:
            await asyncio.gather(*streams)
            streams = []
    finally:
        for s in streams:
            s.cancel()


def operation(spec_of: SpecOf) -> tuple[Runner, Any]:
    """The composite runner and its load-time check, given how to find a request type's registered spec (the
    registry passes its own lookup: it lists this operation, so this module cannot import it)."""

    async def composite(ctx: Context, p: dict[str, Any]) -> Result:
        limit = asyncio.Semaphore(param_int(p, "max-connections", sys.maxsize) if "max-connections" in p
                                  else sys.maxsize)
        with composite_context.scope():
            try:
                await _run_stream(ctx, p["requests"], limit, spec_of)
            except _Failed as f:
                r = f.result
                return Result(success=False, error_type=r.error_type, detail=r.detail, status=r.status)
        return Result()

    def check_composite(name: str, op_type: str, params: dict[str, Any], *, track_file: str) -> None:
        _check(spec_of, name, params, track_file)

    return composite, check_composite


def _check(runner_spec: SpecOf, name: str, params: dict[str, Any], track_file: str) -> None:
    where = f"{track_file}: operation '{name}' (composite)"

    def walk(items: Any, path: str) -> None:
        if not isinstance(items, list):
            raise TrackError(f"{where}: {path} must be a list of requests and streams")
        for i, item in enumerate(items):
            at = f"{path}[{i}]"
            if not isinstance(item, dict):
                raise TrackError(f"{where}: {at} must be an object")
            if "stream" in item:
                walk(item["stream"], f"{at}.stream")
                continue
            sub = item.get("operation-type")
            if sub is None:
                raise TrackError(f"{where}: {at} needs 'stream' or 'operation-type'")
            if sub not in ALLOWED:
                raise TrackError(f"{where}: {at} has operation-type '{sub}', which a composite cannot run: use one "
                                 f"of {', '.join(ALLOWED)}")
            spec = runner_spec(sub)
            sub_name = f"{name} {at} ({item.get('name', sub)})"
            for key in spec.required if spec else ():
                if key not in item:
                    raise TrackError(f"{track_file}: operation '{sub_name}' ({sub}) needs the parameter '{key}'")
            if spec is not None and spec.check is not None:
                spec.check(sub_name, sub, item, track_file=track_file)
            if sub in NAMED and "name" not in item:
                raise TrackError(f"{track_file}: operation '{sub_name}' ({sub}) needs the parameter 'name': later "
                                 f"requests find its id by it")
            if sub == "search" and "index" not in item:
                # Rally sends a composite's requests as written, without the track's defaults.
                raise TrackError(f"{track_file}: operation '{sub_name}' (search) needs the parameter 'index'")

    walk(params.get("requests"), "requests")

