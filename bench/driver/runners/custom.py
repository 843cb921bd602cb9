"""Runners a track's ``track.py`` registers, run the way Rally runs them.

A Rally runner is ``async def runner(es, params)`` or an object with an async ``__call__(self, es, params)`` (and
optionally ``__aenter__``/``__aexit__``, entered around every call). ``es`` is the real elasticsearch-py
``AsyncElasticsearch`` of the default cluster, or -- for a runner with ``multi_cluster`` -- a dict of one client per
cluster name. What it returns becomes the request's sample:

- ``(weight, unit)``: that much work in that unit;
- a dict: ``weight`` (default 1), ``unit`` (default "ops"), ``success`` (default True, read for its truth as Rally
  does), ``error-type``, ``error-description``, ``http-status``; every other key goes into the sample's meta;
- anything else (``None``, a bool, a response object ...): one operation, successful -- Rally's
  ``execute_single`` counts it so (``stop_trained_model_deployment`` returns a bool).

A weight bench cannot count as whole units (negative, fractional, not a number) stops the race in one line rather
than being rounded into a different number.

What the client raises is a failed request, counted like bench's own: an HTTP error answer (``ApiError``) as
``http-<status>``, ``ConnectionTimeout`` as ``timeout``, ``ConnectionError`` as ``connection``, any other
``TransportError`` as ``transport``. A KeyError (a parameter the runner needs and the track lacks) or any other
exception out of the track's code stops the race with one line naming the runner -- a bug in track code is not a
failed request.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from bench.driver.param_types import ParamError
from bench.driver.runners.core import Context, Result, Runner
from bench.http.client import ClusterTarget, es_client, opensearch_client
from bench.track.plugins import RunnerRegistration

_KNOWN = ("weight", "unit", "success", "error-type", "error-description", "http-status")


class TrackCodeError(ParamError):
    """Track code failed in a way no request explains: the race stops at its first occurrence (as a bad operation
    parameter does), with one line naming the runner and the error."""


class EsClients:
    """One client per cluster for a worker's step -- elasticsearch-py's AsyncElasticsearch for a Rally track,
    opensearch-py's AsyncOpenSearch for an OpenSearch Benchmark workload (``opensearch``), as each tool hands its
    runners -- made in the step's event loop on first use (bench's own operations never need them) and closed when
    the step ends."""

    def __init__(self, targets: list[ClusterTarget], connections: int, *, opensearch: bool = False) -> None:
        self._targets = targets
        self._connections = connections
        self._make = opensearch_client if opensearch else es_client
        self._clients: dict[str, Any] | None = None

    def get(self) -> dict[str, Any]:
        if self._clients is None:
            self._clients = {t.name: self._make(t, connections=self._connections) for t in self._targets}
        return self._clients

    async def close(self) -> None:
        if self._clients:
            await asyncio.gather(*(c.close() for c in self._clients.values()), return_exceptions=True)
        self._clients = None


def _name(reg: RunnerRegistration) -> str:
    r = reg.runner
    return getattr(r, "__qualname__", None) or type(r).__qualname__


def _weight(value: Any, reg: RunnerRegistration) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise TrackCodeError(f"runner {_name(reg)} of operation type '{reg.operation_type}' returned weight "
                             f"{value!r}: it must be a number >= 0")
    if isinstance(value, float) and not value.is_integer():
        # Throughput is stored as whole units; rounding a fractional weight would change the number reported.
        raise TrackCodeError(f"runner {_name(reg)} of operation type '{reg.operation_type}' returned weight "
                             f"{value!r}: bench counts whole units (use a smaller unit)")
    return int(value)


def to_result(value: Any, reg: RunnerRegistration) -> Result:
    """A runner's return value as a bench Result (see the module docstring)."""
    if isinstance(value, tuple) and len(value) == 2:
        return Result(units=_weight(value[0], reg), unit=str(value[1]))
    if isinstance(value, dict):
        weight = _weight(value.get("weight", 1), reg)
        unit = str(value.get("unit", "ops"))
        success = bool(value.get("success", True))
        meta = {k: v for k, v in value.items() if k not in _KNOWN}
        status = value.get("http-status")
        res = Result(units=weight, unit=unit, success=success, meta=meta or None,
                     status=status if isinstance(status, int) and not isinstance(status, bool) else 0)
        if not success:
            res.error_type = str(value.get("error-type") or "error")
            res.detail = str(value.get("error-description") or res.error_type)
            res.failed_units = weight if unit == "docs" else 0
        return res
    return Result()


def _failure(e: Exception) -> Result | None:
    """A failed request for what elasticsearch-py or opensearch-py raises; None for anything else."""
    import elasticsearch

    failed = _opensearch_failure(e)
    if failed is not None:
        return failed
    if isinstance(e, elasticsearch.UnsupportedProductError):
        # Not a failed request: every request would fail the same way (elasticsearch-py checks the product).
        raise TrackCodeError(f"the elasticsearch-py client of a track's runner refuses this cluster: {e.message} "
                             f"(track runners need Elasticsearch)") from None
    if isinstance(e, elasticsearch.ApiError):
        status = e.meta.status if e.meta is not None else 0
        reason = e.message
        body = e.body
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            reason = f"{body['error'].get('type')}: {body['error'].get('reason')}"
        return Result(success=False, error_type=f"http-{status}", detail=f"HTTP {status}: {reason}", status=status)
    if isinstance(e, elasticsearch.ConnectionTimeout):
        return Result(success=False, error_type="timeout", detail="request timed out")
    if isinstance(e, elasticsearch.ConnectionError):
        return Result(success=False, error_type="connection", detail=f"connection error: {e.message}")
    if isinstance(e, elasticsearch.TransportError):
        return Result(success=False, error_type="transport", detail=f"{type(e).__name__}: {e.message}")
    return None


def _opensearch_failure(e: Exception) -> Result | None:
    """opensearch-py's exceptions: a TransportError carries the HTTP status, or "N/A" when no answer came."""
    import opensearchpy

    if isinstance(e, opensearchpy.ConnectionTimeout):
        return Result(success=False, error_type="timeout", detail="request timed out")
    if isinstance(e, opensearchpy.ConnectionError):
        return Result(success=False, error_type="connection", detail=f"connection error: {e.error}")
    if isinstance(e, opensearchpy.TransportError):
        status = e.status_code if isinstance(e.status_code, int) else 0
        info = e.info
        reason = e.error
        if isinstance(info, dict) and isinstance(info.get("error"), dict):
            reason = f"{info['error'].get('type')}: {info['error'].get('reason')}"
        if not status:
            return Result(success=False, error_type="transport", detail=f"{type(e).__name__}: {reason}")
        return Result(success=False, error_type=f"http-{status}", detail=f"HTTP {status}: {reason}", status=status)
    return None


def adapt_runner(reg: RunnerRegistration, clients: EsClients, default_cluster: str) -> Runner:
    """A bench Runner that calls the track's runner with the elasticsearch-py client(s)."""
    runner = reg.runner
    enter = reg.context_manager

    async def run(ctx: Context, params: dict[str, Any]) -> Result:
        es_all = clients.get()
        es = es_all if reg.multi_cluster else es_all[default_cluster]
        # bench's own prepared search body (bench.driver.param_sources) is not a track parameter
        p = {k: v for k, v in params.items() if k != "_body_bytes"}
        p.setdefault("operation-type", reg.operation_type)
        try:
            if enter:
                async with runner:
                    value = await runner(es, p)
            else:
                value = await runner(es, p)
        except (asyncio.CancelledError, TrackCodeError, MemoryError):
            raise
        except (asyncio.TimeoutError, TimeoutError, ConnectionError):
            raise  # bench's own counting (client_loop) of timeouts and connection failures
        except KeyError as e:
            raise TrackCodeError(f"runner {_name(reg)} of operation type '{reg.operation_type}' needs the "
                                 f"parameter {e} (it got {', '.join(sorted(p))})") from None
        except Exception as e:  # noqa: BLE001 - sorted into failed requests and bugs in track code
            failed = _failure(e)
            if failed is None:
                raise TrackCodeError(f"runner {_name(reg)} of operation type '{reg.operation_type}' failed: "
                                     f"{type(e).__name__}: {e}") from None
            return failed
        return to_result(value, reg)

    return run
