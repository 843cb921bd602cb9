"""``ccr-bootstrap``: start following an existing leader index and measure its remote recovery.

The follower copies the leader index's files before it replicates operations (OpenSearch: status BOOTSTRAPPING,
then SYNCING; Elasticsearch: the follow with ``wait_for_active_shards`` answers once the shards are restored, then
its shard-follow tasks start). Reported, in the sample's meta (and from there the CCR drills section):

- ``seconds_to_syncing``: from the follow call until the follower replicates (SYNCING / shard-follow tasks)
- ``recovered_bytes`` and ``mb_s``: the follower's ``_recovery`` (index.size.recovered_in_bytes) over that time
- ``leader_tx_bytes``: the leader's transport bytes out meanwhile (``_nodes/stats``), a cross-check
- ``leader_cpu_pct``: the leader's node processes' CPU meantime, in % of one core

Parameters: those of ``ccr-follow`` plus ``chunk-size`` (e.g. ``"1mb"``) and ``max-concurrent-file-chunks`` (1-10),
the follower cluster's recovery settings for the bootstrap (restored to their previous values afterwards), and
``leader-cluster`` (default: the race's cluster named like the remote alias) for the leader's readings.
"""

from __future__ import annotations

import time
from typing import Any

from bench.ccr.drill_figures import BootstrapFigures, cpu_percent, node_totals, rate_mb_s, recovered_bytes
from bench.ccr.engine import ELASTICSEARCH, CcrEngine, CcrError
from bench.ccr.runners import (
    DEFAULT_ACTIVE_TIMEOUT,
    _failed,
    _remote,
    engine_of,
    follow_extra,
    follow_indices,
    follow_parameters,
)
from bench.driver.param_types import param_float
from bench.driver.runners.core import Context, Result
from bench.http.client import RawHttp

# parameter -> the follower's cluster setting, per engine
RECOVERY_SETTINGS: dict[str, dict[str, str]] = {
    "opensearch": {"chunk-size": "plugins.replication.follower.index.recovery.chunk_size",
                   "max-concurrent-file-chunks":
                   "plugins.replication.follower.index.recovery.max_concurrent_file_chunks"},
    ELASTICSEARCH: {"chunk-size": "ccr.indices.recovery.chunk_size",
                    "max-concurrent-file-chunks": "ccr.indices.recovery.max_concurrent_file_chunks"},
}
NODE_STATS = "/_nodes/stats/process,transport"


def recovery_settings(engine: str, p: dict[str, Any]) -> dict[str, Any]:
    """The follower cluster settings the operation asks for (empty: the cluster's own)."""
    names = RECOVERY_SETTINGS[engine]
    return {names[k]: p[k] for k in names if p.get(k) is not None}


async def _put_settings(engine: CcrEngine, settings: dict[str, Any]) -> dict[str, Any]:
    """Set persistent cluster settings; returns what they were before (None: unset)."""
    _, now = await engine.call("GET", "/_cluster/settings", params={"flat_settings": "true"})
    before = {k: ((now or {}).get("persistent") or {}).get(k) for k in settings}
    await engine.call("PUT", "/_cluster/settings", {"persistent": settings})
    return before


async def _leader_reading(http: RawHttp | None) -> tuple[int, int] | None:
    if http is None:
        return None
    status, body = await http.request("GET", NODE_STATS)
    if status >= 400:
        return None
    try:
        return node_totals(body)
    except ValueError:
        return None


def _leader_http(ctx: Context, p: dict[str, Any], follower: str) -> tuple[str | None, RawHttp | None]:
    name = str(p.get("leader-cluster") or _remote(p))
    if name in ctx.http and name != follower:
        return name, ctx.http[name]
    return None, None


async def ccr_bootstrap(ctx: Context, p: dict[str, Any]) -> Result:
    try:
        engine = await engine_of(ctx, p)
        leader_index, follower_index = follow_indices(ctx, p, "ccr-bootstrap")
        settings = recovery_settings(engine.engine, p)
        before = await _put_settings(engine, settings) if settings else {}
        try:
            figures = await _bootstrap(ctx, p, engine, leader_index, follower_index)
        finally:
            if before:
                await engine.call("PUT", "/_cluster/settings", {"persistent": before})
    except CcrError as e:
        return _failed(e)
    figures.settings = settings
    return Result(meta={"bootstrap": figures.model_dump(mode="json")})


async def _bootstrap(ctx: Context, p: dict[str, Any], engine: CcrEngine, leader_index: str,
                     follower_index: str) -> BootstrapFigures:
    leader_name, leader = _leader_http(ctx, p, engine.cluster)
    start_reading = await _leader_reading(leader)
    t0 = time.monotonic()
    await engine.follow(follower_index, remote=_remote(p), leader_index=leader_index,
                        parameters=follow_parameters(p), settings=p.get("settings"), extra=follow_extra(p))
    await engine.wait_active(follower_index, param_float(p, "wait-timeout", DEFAULT_ACTIVE_TIMEOUT), poll=0.1)
    seconds = time.monotonic() - t0
    end_reading = await _leader_reading(leader)
    figures = BootstrapFigures(task=str(p.get("_task", "")), cluster=engine.cluster, index=follower_index,
                               leader_cluster=leader_name, leader_index=leader_index, seconds_to_syncing=seconds)
    _, recovery = await engine.call("GET", f"/{follower_index}/_recovery")
    try:
        figures.recovered_bytes = recovered_bytes(recovery, follower_index)
        figures.mb_s = rate_mb_s(figures.recovered_bytes, seconds)
    except ValueError as e:
        figures.notes.append(f"no bytes transferred: {e}")
    if start_reading is not None and end_reading is not None:
        figures.leader_cpu_pct = cpu_percent(start_reading[0], end_reading[0], seconds)
        tx = end_reading[1] - start_reading[1]
        figures.leader_tx_bytes = tx if tx >= 0 else None
    elif leader_name is None:
        figures.notes.append("no leader readings: the race has no connection to the leader cluster")
    else:
        figures.notes.append(f"no leader readings: GET {NODE_STATS} on {leader_name} failed")
    return figures
