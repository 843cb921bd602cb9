"""A small synchronous JSON client for the metrics store: the same calls on Elasticsearch and OpenSearch
(elasticsearch-py refuses OpenSearch), used from the pusher's thread and from read commands.

Every failure becomes ``StoreUnavailable`` (cannot reach or answer: the caller may retry later) or ``StoreError``
(the store answered no: credentials, a mapping conflict), each one line naming the store, never a password.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

import urllib3

from bench.http.client import tls_context
from bench.trials.metrics_store.config import ENV_PASSWORD, StoreConfig, describe
from bench.util import redact
from bench.util.errors import StoreError

log = logging.getLogger(__name__)


class StoreUnavailable(StoreError):
    """The store cannot be reached or did not answer in time: what is not pushed stays in the local store."""


class StoreRefused(StoreError):
    """The store answered a request with an error of its own (not credentials): e.g. a conflicting template."""


class StoreHttp:
    def __init__(self, config: StoreConfig, *, timeout: float | None = None) -> None:
        self.config = config
        self.name = describe(config)
        t = timeout if timeout is not None else min(config.options.timeout or 30.0, 30.0)
        kw: dict[str, Any] = {"timeout": urllib3.Timeout(connect=min(t, 5.0), read=t), "retries": False, "maxsize": 2}
        if config.tls:
            kw["ssl_context"] = tls_context(config.options)
        self._pool = urllib3.PoolManager(**kw)
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        auth = config.options.auth_header()
        if auth:
            self._headers["Authorization"] = auth

    def close(self) -> None:
        self._pool.clear()

    def request(self, method: str, path: str, body: Any = None, *, ndjson: bytes | None = None,
                ok: tuple[int, ...] = ()) -> tuple[int, Any]:
        """(status, parsed JSON). Statuses >= 400 other than ``ok`` raise."""
        data: bytes | None
        headers = dict(self._headers)
        if ndjson is not None:
            data, headers["Content-Type"] = ndjson, "application/x-ndjson"
        else:
            data = json.dumps(body).encode() if body is not None else None
        try:
            r = self._pool.request(method, self.config.url + path, body=data, headers=headers)
        except urllib3.exceptions.SSLError as e:
            raise StoreError(f"metrics store {self.name}: TLS verification failed ({_short(e)}): pass "
                             "ca_certs:/path/ca.pem in --metrics-store-options, or verify_certs:false") from None
        except urllib3.exceptions.HTTPError as e:
            raise StoreUnavailable(f"metrics store {self.name} cannot be reached: {_short(e)}") from None
        try:
            parsed = json.loads(r.data) if r.data else None
        except ValueError:
            parsed = None
        if r.status >= 400 and r.status not in ok:
            if r.status == 401:
                raise StoreError(f"metrics store {self.name}: authentication failed (HTTP 401): check the user and "
                                 "basic_auth_password/api_key of --metrics-store-options")
            if r.status == 403:
                raise StoreError(f"metrics store {self.name}: the user may not {method} {path} (HTTP 403): grant it "
                                 f"write and read on {self.config.prefix}-* and manage_index_templates")
            if r.status in (429, 502, 503, 504):
                raise StoreUnavailable(f"metrics store {self.name} is overloaded or unavailable (HTTP {r.status})")
            raise StoreRefused(f"metrics store {self.name}: {method} {path.split('?')[0]} failed: HTTP {r.status}: "
                             f"{_reason(parsed, r.data)}")
        return r.status, parsed

    def bulk(self, actions: Iterable[tuple[dict[str, Any], dict[str, Any]]], *, refresh: bool = False) -> int:
        """Index (action, document) pairs; a refused item (e.g. a mapping conflict) raises in one line."""
        lines: list[bytes] = []
        for action, doc in actions:
            lines.append(json.dumps(action).encode())
            lines.append(json.dumps(doc, default=str).encode())
        if not lines:
            return 0
        _, res = self.request("POST", "/_bulk" + ("?refresh=true" if refresh else ""), ndjson=b"\n".join(lines) + b"\n")
        if res and res.get("errors"):
            for item in res.get("items", []):
                op = next(iter(item.values()))
                if op.get("error"):
                    err = op["error"]
                    if op.get("status") == 429:
                        raise StoreUnavailable(f"metrics store {self.name} rejected writes (HTTP 429)")
                    raise StoreError(f"metrics store {self.name}: index {op.get('_index')} refused a document: "
                                     f"{err.get('type')}: {redact.redact_text(str(err.get('reason')))} (a mapping "
                                     f"conflict: another index template covers {self.config.prefix}-*, or use "
                                     "index_prefix in --metrics-store-options)")
        return len(lines) // 2


def check_access(config: StoreConfig) -> None:
    """Before a race starts anything: StoreError (one line) when the store refuses bench's credentials or its TLS
    certificate cannot be verified, which no retry cures. A store that is down or busy only delays pushing (its
    rows wait in the local store), and one whose privileges lack ``GET /`` may still take writes: both pass."""
    http = StoreHttp(config, timeout=10.0)
    try:
        # Any answer but 401 means the credentials were accepted (or are not needed).
        http.request("GET", "/", ok=(400, 403, 404, 405))
    except (StoreUnavailable, StoreRefused) as e:
        log.warning("%s: checked before the race; its rows are pushed when it answers", e)
    except StoreError as e:
        raise StoreError(f"{e} (or {ENV_PASSWORD}, or bench.ini's [reporting] datastore.user/datastore.password); "
                         "checked before the race: nothing was started or measured") from None
    finally:
        http.close()


def _short(e: BaseException) -> str:
    text = redact.redact_text(str(getattr(e, "reason", None) or e))
    return text.splitlines()[0][:200] if text else type(e).__name__


def _reason(parsed: Any, raw: bytes) -> str:
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
        err = parsed["error"]
        return redact.redact_text(f"{err.get('type')}: {err.get('reason')}")
    return redact.redact_text(raw[:200].decode(errors="replace"))
