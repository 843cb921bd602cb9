"""The options of the request a client is sending (the operation's headers, opaque id, timeout), read by the
HTTP client. A context variable: each client is its own asyncio task, so one client's options never reach
another's requests, and runners need no extra argument. ``bench.driver.runners.request_options`` sets them."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class RequestOptions:
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    # (status, raw answer) of the requests sent, kept only when assertions or detailed results need them.
    responses: list[tuple[int, bytes]] | None = None


CURRENT: ContextVar[RequestOptions | None] = ContextVar("bench_request_options", default=None)


def current() -> RequestOptions | None:
    """The options of the request being sent by this client (None: plain)."""
    return CURRENT.get()
