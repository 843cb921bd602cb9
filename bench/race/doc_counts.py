"""The documents each cluster of a race holds at its end, read after a refresh: ``_stats``' ``docs.count`` counts
only what a refresh has made visible, and a shard that gets no searches skips its scheduled refreshes (search
idle), so the count read without one lags what was indexed -- by a third and more after a long bulk."""

from __future__ import annotations

import logging
from typing import Any

from bench.http.client import ClusterTarget, RawHttp
from bench.util import redact

log = logging.getLogger(__name__)
DOCS_PATH = "/_stats/docs"


def primaries_docs(body: Any) -> int | None:
    """``_all.primaries.docs.count`` of a ``GET _stats/docs`` answer (0 for a cluster without indices)."""
    if not isinstance(body, dict) or not isinstance(body.get("_all"), dict):
        return None
    count = (body["_all"].get("primaries") or {}).get("docs", {}).get("count", 0)
    return int(count) if isinstance(count, (int, float)) and not isinstance(count, bool) else None


async def refreshed_doc_count(target: ClusterTarget) -> int | None:
    """The documents in the primaries of every index of the cluster after ``POST _refresh``; None (logged) when
    the refresh or the read failed: then no count is better than a stale one."""
    try:
        async with RawHttp(target, connections=1) as http:
            status, body = await http.request("POST", "/_refresh")
            if status >= 400:
                log.warning("POST /_refresh on %s answered %s: its doc count is not reported", target.name, status)
                return None
            status, body = await http.request("GET", DOCS_PATH)
    except Exception as e:  # noqa: BLE001 - a count is a nice-to-have, never a failure of the race
        log.warning("could not read the doc count of %s: %s", target.name, redact.redact_text(str(e)))
        return None
    return primaries_docs(body) if status < 400 else None


async def refreshed_doc_counts(targets: list[ClusterTarget]) -> dict[str, int]:
    """Cluster name -> its documents after a refresh, for every cluster whose count could be read."""
    out = {}
    for t in targets:
        n = await refreshed_doc_count(t)
        if n is not None:
            out[t.name] = n
    return out
