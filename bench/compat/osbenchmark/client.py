"""``osbenchmark.client``: ``RequestContextHolder``, through which OSB's runners mark when their request started and
ended.

bench times a workload runner's whole call itself (its service time starts before the call and ends after it), so
these marks do not change bench's numbers; they are kept per request context, as OSB keeps them, for runner code
that reads them back.
"""

from __future__ import annotations

import contextvars
import time
from typing import Any


class RequestContextHolder:
    request_context: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("bench_osb_request_context")

    @classmethod
    def _meta(cls) -> dict[str, Any]:
        try:
            return cls.request_context.get()
        except LookupError:
            meta: dict[str, Any] = {}
            cls.request_context.set(meta)
            return meta

    @classmethod
    def init_request_context(cls) -> tuple[dict[str, Any], contextvars.Token[dict[str, Any]]]:
        ctx: dict[str, Any] = {}
        return ctx, cls.request_context.set(ctx)

    @classmethod
    def restore_context(cls, token: contextvars.Token[dict[str, Any]]) -> None:
        cls.request_context.reset(token)

    @classmethod
    def on_client_request_start(cls) -> None:
        cls._meta().setdefault("client_request_start", time.perf_counter())

    @classmethod
    def on_client_request_end(cls) -> None:
        cls._meta()["client_request_end"] = time.perf_counter()

    @classmethod
    def on_request_start(cls) -> None:
        meta = cls._meta()
        if "request_start" not in meta and "client_request_start" in meta:
            meta["request_start"] = time.perf_counter()

    @classmethod
    def on_request_end(cls) -> None:
        cls._meta().setdefault("request_end_list", []).append(time.perf_counter())
