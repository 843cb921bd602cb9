"""Cluster-wide index totals from ``GET _stats`` (``_all.primaries`` and ``_all.total``).

The summary shows the *cumulative* values read at the end of the race, as Rally does (so numbers
include work done before the race, e.g. by an earlier trial against the same benchmark-only cluster).
``delta(before, after)`` gives what happened during the race only, for callers that want it.
"""

from __future__ import annotations

import statistics
from typing import Any

from pydantic import BaseModel

from bench.util.errors import ClusterError

# Only the metric groups we read: keeps the answer small on clusters with many indices.
STATS_METRICS = "indexing,merge,refresh,flush,store,segments,docs,translog"
# The garbage collectors' counters of every node, read right before and right after the schedule (as Rally's
# always-on JVM stats do): only the collectors, so the answer stays a few hundred bytes per node.
JVM_GC_PATH = "/_nodes/stats/jvm?filter_path=nodes.*.jvm.gc.collectors"

# Rally's min/median/max across primary shards: per shard, only the cumulative times it reports (and whether the
# copy is a primary), so even thousands of shards make a small answer.
_SHARD_FIELDS = {
    "index_time_ms": ("indexing", "index_time_in_millis"),
    "index_throttle_time_ms": ("indexing", "throttle_time_in_millis"),
    "merge_time_ms": ("merges", "total_time_in_millis"),
    "merge_throttle_time_ms": ("merges", "total_throttled_time_in_millis"),
    "refresh_time_ms": ("refresh", "total_time_in_millis"),
    "flush_time_ms": ("flush", "total_time_in_millis"),
}
SHARD_STATS_PATH = ("/_stats/indexing,merge,refresh,flush?level=shards&filter_path=indices.*.shards.*.routing.primary,"
                    + ",".join(f"indices.*.shards.*.{g}.{f}" for g, f in _SHARD_FIELDS.values()))

# Gauges describe the state at a point in time; everything else is a monotonically growing counter.
GAUGES = frozenset({"store_size_bytes", "segment_count", "docs_count", "translog_size_bytes"})


class ShardTotals(BaseModel):
    """Sums over a set of shards (all primaries, or all copies)."""

    index_total: int = 0
    index_time_ms: int = 0
    index_throttle_time_ms: int = 0
    merge_total: int = 0
    merge_time_ms: int = 0
    merge_throttle_time_ms: int = 0
    refresh_total: int = 0
    refresh_time_ms: int = 0
    flush_total: int = 0
    flush_time_ms: int = 0
    store_size_bytes: int = 0
    segment_count: int = 0
    docs_count: int = 0
    translog_size_bytes: int | None = None  # None: not read (trials stored before bench read it)


class GcTotals(BaseModel):
    """Garbage collections summed over a cluster's nodes (young: G1 Young/ParNew/..., old: G1 Old/CMS/...)."""

    young_count: int = 0
    young_time_ms: int = 0
    old_count: int = 0
    old_time_ms: int = 0


class Spread(BaseModel):
    min: float
    median: float
    max: float


class ClusterTotals(BaseModel):
    cluster: str | None = None  # the race's name for the cluster (e.g. "default", "leader")
    primaries: ShardTotals = ShardTotals()
    total: ShardTotals = ShardTotals()
    gc: GcTotals | None = None  # during the schedule; None when it could not be read
    # ShardTotals field (e.g. "index_time_ms") -> min/median/max over the primary shards; empty when not read.
    per_shard: dict[str, Spread] = {}
    # Cluster name -> documents in the primaries after a refresh at the end of the race, every cluster of the race
    # (bench.race.doc_counts); empty in trials stored before it was read, whose Doc count is ``primaries``'.
    docs_after_refresh: dict[str, int] = {}


def _get(d: dict[str, Any], *path: str) -> int:
    for key in path:
        if not isinstance(d, dict):
            return 0
        d = d.get(key, {})
    return int(d) if isinstance(d, (int, float)) and not isinstance(d, bool) else 0


def shard_totals(section: dict[str, Any]) -> ShardTotals:
    """Parse one ``_all.primaries`` / ``_all.total`` section; a missing group counts as zero
    (a cluster without indices answers ``{}``)."""
    return ShardTotals(
        index_total=_get(section, "indexing", "index_total"),
        index_time_ms=_get(section, "indexing", "index_time_in_millis"),
        index_throttle_time_ms=_get(section, "indexing", "throttle_time_in_millis"),
        merge_total=_get(section, "merges", "total"),
        merge_time_ms=_get(section, "merges", "total_time_in_millis"),
        merge_throttle_time_ms=_get(section, "merges", "total_throttled_time_in_millis"),
        refresh_total=_get(section, "refresh", "total"),
        refresh_time_ms=_get(section, "refresh", "total_time_in_millis"),
        flush_total=_get(section, "flush", "total"),
        flush_time_ms=_get(section, "flush", "total_time_in_millis"),
        store_size_bytes=_get(section, "store", "size_in_bytes"),
        segment_count=_get(section, "segments", "count"),
        docs_count=_get(section, "docs", "count"),
        translog_size_bytes=_get(section, "translog", "size_in_bytes") if "translog" in section else None,
    )


def cluster_totals(stats_json: dict[str, Any], cluster: str | None = None) -> ClusterTotals:
    """Parse a ``GET _stats`` answer. Raises ClusterError when it has no ``_all`` section."""
    all_ = stats_json.get("_all") if isinstance(stats_json, dict) else None
    if not isinstance(all_, dict):
        keys = sorted(stats_json)[:5] if isinstance(stats_json, dict) else type(stats_json).__name__
        raise ClusterError(f"cluster {cluster or '?'}: GET _stats answered without an '_all' section "
                           f"(got {keys}); is this an Elasticsearch/OpenSearch cluster?")
    return ClusterTotals(cluster=cluster, primaries=shard_totals(all_.get("primaries") or {}),
                         total=shard_totals(all_.get("total") or {}))


async def fetch_cluster_totals(client: Any, cluster: str | None = None) -> ClusterTotals:
    """Read the totals from a cluster (elasticsearch-py AsyncElasticsearch)."""
    from elasticsearch import ApiError, TransportError

    try:
        resp = await client.indices.stats(metric=STATS_METRICS)
    except (ApiError, TransportError) as e:
        raise ClusterError(f"cluster {cluster or '?'}: GET _stats/{STATS_METRICS} failed: {e}: "
                           "check that the cluster is up and reachable") from e
    body = resp.body if hasattr(resp, "body") else resp
    return cluster_totals(dict(body), cluster)


def primary_shard_spread(shard_stats: dict[str, Any]) -> dict[str, Spread]:
    """Min/median/max of each cumulative time over the primary shards of a ``SHARD_STATS_PATH`` answer."""
    values: dict[str, list[int]] = {name: [] for name in _SHARD_FIELDS}
    indices = shard_stats.get("indices") if isinstance(shard_stats, dict) else None
    for index in (indices or {}).values():
        for copies in ((index or {}).get("shards") or {}).values():
            for copy in copies if isinstance(copies, list) else []:
                if not (isinstance(copy, dict) and copy.get("routing", {}).get("primary")):
                    continue
                for name, path in _SHARD_FIELDS.items():
                    values[name].append(_get(copy, *path))
    return {name: Spread(min=min(v), median=float(statistics.median(v)), max=max(v))
            for name, v in values.items() if v}


def gc_totals(nodes_stats: dict[str, Any]) -> GcTotals:
    """Sum a ``GET _nodes/stats/jvm`` answer's collectors over the nodes ("young" and "old", as Elasticsearch and
    OpenSearch name them whatever the JVM's collector)."""
    out = GcTotals()
    nodes = nodes_stats.get("nodes") if isinstance(nodes_stats, dict) else None
    for node in (nodes or {}).values():
        collectors = node.get("jvm", {}).get("gc", {}).get("collectors", {}) if isinstance(node, dict) else {}
        for gen in ("young", "old"):
            c = collectors.get(gen) or {}
            setattr(out, f"{gen}_count", getattr(out, f"{gen}_count") + _get(c, "collection_count"))
            setattr(out, f"{gen}_time_ms", getattr(out, f"{gen}_time_ms") + _get(c, "collection_time_in_millis"))
    return out


def gc_delta(before: GcTotals, after: GcTotals) -> GcTotals:
    """Collections between two readings; a counter that went down (a node restarted) counts from zero."""
    return GcTotals(**{name: (a - b if a >= b else a) for name in GcTotals.model_fields
                       for a, b in [(getattr(after, name), getattr(before, name))]})


def _delta_totals(before: ShardTotals, after: ShardTotals) -> ShardTotals:
    values: dict[str, int | None] = {}
    for name in ShardTotals.model_fields:
        a, b = getattr(after, name), getattr(before, name)
        if name in GAUGES:
            values[name] = a
        else:
            # A counter that went down was reset (an index deleted and recreated during the race):
            # everything counted since then is ``after``, a lower bound of the work done.
            values[name] = a - b if a >= b else a
    return ShardTotals.model_validate(values)


def delta(before: ClusterTotals, after: ClusterTotals) -> ClusterTotals:
    """What happened between two readings: counters (totals, times) are subtracted; gauges
    (store size, segment count, docs count) are the ``after`` values."""
    return ClusterTotals(cluster=after.cluster or before.cluster,
                         primaries=_delta_totals(before.primaries, after.primaries),
                         total=_delta_totals(before.total, after.total), gc=after.gc, per_shard=after.per_shard)
