"""``esrally.driver.runner``: Rally's ``Runner`` base class, ``mandatory`` and the runners tracks import by name.

A track's runner receives bench's elasticsearch-py ``AsyncElasticsearch`` and the operation's params, as in Rally.
"""

from __future__ import annotations

import logging
from typing import Any

from bench.track.esrally_compat import exceptions


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
