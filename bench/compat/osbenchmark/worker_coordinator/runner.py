"""``osbenchmark.worker_coordinator.runner``: OSB's ``Runner`` base class (Rally's), ``Retry`` and ``mandatory``.

A workload's runner receives opensearch-py's ``AsyncOpenSearch``, the client OSB hands it, and the operation's
params, as in OSB.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from typing import Any

from bench.compat.esrally.driver.runner import BulkIndex, PutSettings, Runner, mandatory

__all__ = ["BulkIndex", "Delegator", "PutSettings", "Retry", "Runner", "mandatory"]


class Delegator:
    """Mixin of a runner that wraps another (``delegate``)."""

    def __init__(self, delegate: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.delegate = delegate


class Retry(Runner, Delegator):
    """OSB's retrying wrapper: ``retries``, ``retry-until-success``, ``retry-wait-period`` (0.5 s),
    ``retry-on-timeout`` (true) and ``retry-on-error`` (false) as OSB reads them."""

    def __init__(self, delegate: Any, retry_until_success: bool = False) -> None:
        super().__init__(delegate=delegate)
        self.retry_until_success = retry_until_success

    async def __aenter__(self) -> Retry:
        await self.delegate.__aenter__()
        return self

    async def __call__(self, es: Any, params: dict[str, Any]) -> Any:
        import opensearchpy

        until_success = params.get("retry-until-success", self.retry_until_success)
        attempts = sys.maxsize if until_success else params.get("retries", 0) + 1
        on_error = True if until_success else params.get("retry-on-error", False)
        wait = params.get("retry-wait-period", 0.5)
        on_timeout = params.get("retry-on-timeout", True)
        for attempt in range(attempts):
            last = attempt + 1 == attempts
            try:
                value = await self.delegate(es, params)
                if last or not on_error or not isinstance(value, dict) or value.get("success", True):
                    return value
                await asyncio.sleep(wait)
            except (socket.timeout, opensearchpy.ConnectionError, opensearchpy.ConnectionTimeout):
                if last or not on_timeout:
                    raise
                await asyncio.sleep(wait)
            except opensearchpy.TransportError as e:
                if last or not on_timeout or e.status_code != 408:
                    raise
                await asyncio.sleep(wait)
        return None

    async def __aexit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> bool:
        return bool(await self.delegate.__aexit__(exc_type, exc_val, exc_tb))

    def __repr__(self) -> str:
        return f"retryable {self.delegate!r}"
