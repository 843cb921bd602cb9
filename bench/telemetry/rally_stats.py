"""recovery-stats, shard-stats and segment-stats, as in Rally.

- recovery-stats: ``GET <indices>/_recovery?active_only=true`` every interval; per shard recovery
  (``node`` = ``index[shard]``) the recovered bytes/files/operations and times; the answer is kept as raw.
- shard-stats: ``GET <indices>/_stats/docs,store,segments?level=shards`` every interval; per shard copy
  (``node`` = ``index[shard]/p|r@node-id``) docs count, store size and segment count.
- segment-stats: ``GET _cat/segments?format=json`` once at the end of the race; per index the segment
  count and size, the full list kept as raw.
None of these requests makes the cluster refresh or do other work.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from bench.driver.samples import TelemetryRow
from bench.telemetry.device import ClusterDevice, Sampled, flatten, rows_of


class RecoveryStats(ClusterDevice):
    name = "recovery-stats"

    async def sample(self, scope: str, ts: float) -> Sampled:
        indices = self.params.get("recovery-stats-indices") or "_all"
        _, body = await self.get(scope, f"/{indices}/_recovery", {"active_only": "true"})
        rows: list[TelemetryRow] = []
        active = 0
        for index, data in (body or {}).items():
            for shard in (data or {}).get("shards", []):
                active += 1
                node = f"{index}[{shard.get('id')}]"
                keep = {k: shard.get(k) for k in ("index", "translog", "verify_index", "total_time_in_millis")}
                rows += rows_of(ts, scope, node, self.name,
                                {k: v for k, v in flatten(keep) if not k.endswith("_percent")})
        rows.append(TelemetryRow(ts, scope, "", self.name, "active_recoveries", float(active)))
        return Sampled(rows=rows, raw=body if active else None)


class ShardStats(ClusterDevice):
    name = "shard-stats"

    async def sample(self, scope: str, ts: float) -> Sampled:
        indices = self.params.get("shard-stats-indices") or "_all"
        _, body = await self.get(scope, f"/{indices}/_stats/docs,store,segments",
                                 {"level": "shards", "filter_path": "indices.*.shards.*.routing,"
                                  "indices.*.shards.*.docs.count,indices.*.shards.*.store.size_in_bytes,"
                                  "indices.*.shards.*.segments.count"})
        rows: list[TelemetryRow] = []
        for index, data in ((body or {}).get("indices") or {}).items():
            for shard_id, copies in (data.get("shards") or {}).items():
                for copy in copies:
                    routing = copy.get("routing") or {}
                    node = f"{index}[{shard_id}]/{'p' if routing.get('primary') else 'r'}@{routing.get('node', '?')}"
                    rows += rows_of(ts, scope, node, self.name, {
                        "docs": (copy.get("docs") or {}).get("count", 0),
                        "store_bytes": (copy.get("store") or {}).get("size_in_bytes", 0),
                        "segments": (copy.get("segments") or {}).get("count", 0)})
        return Sampled(rows=rows)


class SegmentStats(ClusterDevice):
    name = "segment-stats"
    end_only = True

    async def sample(self, scope: str, ts: float) -> Sampled:
        indices = self.params.get("segment-stats-indices") or "_all"
        _, body = await self.get(scope, f"/_cat/segments/{indices}", {"format": "json", "bytes": "b"})
        per_index: dict[str, dict[str, float]] = defaultdict(lambda: {"segments": 0.0, "size_bytes": 0.0,
                                                                      "docs": 0.0})
        for seg in body if isinstance(body, list) else []:
            agg = per_index[str(seg.get("index"))]
            agg["segments"] += 1
            agg["size_bytes"] += _num(seg.get("size"))
            agg["docs"] += _num(seg.get("docs.count"))
        rows: list[TelemetryRow] = []
        for index, values in per_index.items():
            rows += rows_of(ts, scope, index, self.name, values)
        return Sampled(rows=rows, raw={"segments": body} if isinstance(body, list) else None)


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0
