"""ccr-stats: follower progress and replication lag, for Elasticsearch CCR and OpenSearch's replication plugin.

Rows (``node`` is the follower index, or ``index[shard]`` for Elasticsearch shard rows):
``lag_ops``, ``lag_seconds`` (estimated from the leader checkpoint history, see ``CheckpointHistory``),
``failed_read_requests``, ``failed_write_requests``, ``read_exceptions``, ``operations_read``,
``operations_written``, ``time_since_last_read_millis`` and every other numeric field of a shard's stats.
A follower that is expected (named in ``ccr-stats-indices`` or seen earlier in the race) but absent from
the answer, paused or not replicating gets a ``missing`` row and an error -- never a lag of 0.
"""

from __future__ import annotations

from typing import Any

from bench.telemetry.ccr_models import (
    NOT_IN_PROGRESS,
    CheckpointHistory,
    FollowIndexStats,
    TimeLag,
    follower_indices,
    parse_autofollow_stats,
    parse_ccr_stats,
    parse_follower_stats,
    parse_index_ccr_stats,
    parse_leader_stats,
    parse_replication_status,
)
from bench.telemetry.device import ClusterDevice, Sampled, TelemetryContext, flatten, rows_of
from bench.trials import TelemetryRow

SHARD_SKIP = {"shard_id", "follower_mapping_version", "follower_settings_version", "follower_aliases_version"}


def configured_indices(value: Any, cluster: str) -> list[str] | None:
    """``ccr-stats-indices``: a list for every cluster, or {cluster: [indices]}."""
    if value is None:
        return None
    if isinstance(value, dict):
        got = value.get(cluster)
        if got is None:
            return None
        return [got] if isinstance(got, str) else [str(i) for i in got]
    return [str(i) for i in value]


def es_index_rows(ts: float, cluster: str, index: FollowIndexStats, histories: dict[tuple[str, str, int],
                  CheckpointHistory], device: str = "ccr-stats") -> list[TelemetryRow]:
    """Rows for one Elasticsearch follower index: one set per shard (with the shard's whole document as raw),
    and index-level totals."""
    rows: list[TelemetryRow] = []
    lag_seconds: list[float] = []
    for s in index.shards:
        h = histories.setdefault((cluster, index.index, s.shard_id), CheckpointHistory())
        h.add(ts, s.leader_global_checkpoint)
        tl = h.time_lag(s.follower_global_checkpoint, ts)
        node = f"{index.index}[{s.shard_id}]"
        doc = s.model_dump(mode="json", exclude_unset=True)  # the shard document as answered
        values = {k: v for k, v in flatten({k: v for k, v in doc.items() if k not in SHARD_SKIP})}
        values["lag_ops"] = float(s.lag_ops)
        values["read_exceptions"] = float(len(s.read_exceptions))
        if _known(tl):
            values["lag_seconds"] = tl.seconds
            lag_seconds.append(tl.seconds)
        rows.append(TelemetryRow(ts, cluster, node, device, "shard", float(s.shard_id), doc))
        rows += rows_of(ts, cluster, node, device, values)
    totals = {
        "lag_ops": float(index.lag_ops),
        "read_exceptions": float(sum(len(s.read_exceptions) for s in index.shards)),
        "failed_read_requests": float(sum(s.failed_read_requests for s in index.shards)),
        "failed_write_requests": float(sum(s.failed_write_requests for s in index.shards)),
        "operations_read": float(sum(s.operations_read for s in index.shards)),
        "operations_written": float(sum(s.operations_written for s in index.shards)),
        "time_since_last_read_millis": float(max((s.time_since_last_read_millis for s in index.shards), default=0)),
        "fatal_exceptions": float(len(index.fatal_errors())),
    }
    if lag_seconds:
        totals["lag_seconds"] = max(lag_seconds)
    return rows + rows_of(ts, cluster, index.index, device, totals)


def _known(tl: TimeLag | None) -> bool:
    """A lag behind the oldest leader checkpoint seen is only a lower bound; at the very first sample that
    bound is 0 s, which would read as "no lag": leave it out."""
    return tl is not None and not (tl.lower_bound and tl.seconds == 0.0)


class CcrStats(ClusterDevice):
    name = "ccr-stats"

    def __init__(self, params: dict[str, Any], ctx: TelemetryContext) -> None:
        super().__init__(params, ctx)
        self._histories: dict[tuple[str, str, int], CheckpointHistory] = {}
        self._seen: dict[str, set[str]] = {}

    def _expected(self, cluster: str) -> list[str]:
        configured = configured_indices(self.params.get("ccr-stats-indices"), cluster) or []
        return list(dict.fromkeys([*configured, *sorted(self._seen.get(cluster, set()))]))

    async def sample(self, scope: str, ts: float) -> Sampled:
        if self.ctx.engine(scope) == "opensearch":
            return await self._sample_opensearch(scope, ts)
        return await self._sample_elasticsearch(scope, ts)

    # -- Elasticsearch ----------------------------------------------------------------------------------
    async def _sample_elasticsearch(self, cluster: str, ts: float) -> Sampled:
        configured = configured_indices(self.params.get("ccr-stats-indices"), cluster)
        if configured:
            # ignore_unavailable: a deleted follower must show up as missing, not fail the whole sample
            _, body = await self.get(cluster, f"/{','.join(configured)}/_ccr/stats",
                                     {"ignore_unavailable": "true"})
            stats: Any = parse_index_ccr_stats(body)
        else:
            _, body = await self.get(cluster, "/_ccr/stats")
            stats = parse_ccr_stats(body)
        found = follower_indices(stats)
        return self._result(cluster, ts, found, body, lambda _, i: es_index_rows(ts, cluster, i, self._histories))

    def _result(self, cluster: str, ts: float, found: dict[str, Any], raw: Any, rows_for: Any) -> Sampled:
        out = Sampled(raw=raw if isinstance(raw, dict) else {"body": raw})
        for name, index in found.items():
            out.rows += rows_for(name, index)
            if isinstance(index, FollowIndexStats):
                out.errors += [f"fatal_exception on follower {e}" for e in index.fatal_errors()]
        for name in self._expected(cluster):
            if name not in found:
                out.rows.append(TelemetryRow(ts, cluster, name, self.name, "missing", 1.0))
                out.errors.append(f"follower {name} is absent from the stats answer (paused, failed or "
                                  "deleted?): its lag is unknown, not zero")
        out.rows.append(TelemetryRow(ts, cluster, "", self.name, "followers", float(len(found))))
        self._seen.setdefault(cluster, set()).update(found)
        return out

    # -- OpenSearch ---------------------------------------------------------------------------------------
    async def _sample_opensearch(self, cluster: str, ts: float) -> Sampled:
        base = "/_plugins/_replication"
        _, fs_body = await self.get(cluster, f"{base}/follower_stats")
        follower = parse_follower_stats(fs_body)
        _, ls_body = await self.get(cluster, f"{base}/leader_stats")
        leader = parse_leader_stats(ls_body)
        _, af_body = await self.get(cluster, f"{base}/autofollow_stats")
        autofollow = parse_autofollow_stats(af_body)
        configured = configured_indices(self.params.get("ccr-stats-indices"), cluster)
        names = list(dict.fromkeys([*(configured or follower.index_stats), *self._seen.get(cluster, set())]))
        statuses: dict[str, Any] = {}
        found: dict[str, Any] = {}
        errors: list[str] = []
        for name in names:
            _, st_body = await self.get(cluster, f"{base}/{name}/_status")
            st = parse_replication_status(st_body)
            statuses[name] = st_body
            if st.status == NOT_IN_PROGRESS:
                continue  # counted as missing below
            found[name] = st
            if st.syncing_details is None:
                errors.append(f"follower {name} is {st.status} without checkpoints: its lag is unknown")
        rows: list[TelemetryRow] = []
        for name, istats in follower.index_stats.items():
            rows += rows_of(ts, cluster, name, self.name, flatten(istats.model_dump(mode="json")))
        rows += rows_of(ts, cluster, "", self.name, {
            **{f"follower.{k}": v for k, v in flatten(follower.model_dump(mode="json", exclude={"index_stats"}))},
            **{f"leader.{k}": v for k, v in flatten(leader.model_dump(mode="json", exclude={"index_stats"}))},
            **{f"autofollow.{k}": v for k, v in flatten(autofollow.model_dump(
                mode="json", exclude={"autofollow_stats", "failed_indices"}))},
            "autofollow.failed_indices": float(len(autofollow.failed_indices)),
        })
        for name, istats in leader.index_stats.items():
            rows += rows_of(ts, cluster, name, self.name,
                            {f"leader.{k}": v for k, v in flatten(istats.model_dump(mode="json"))})
        raw = {"follower_stats": fs_body, "leader_stats": ls_body, "autofollow_stats": af_body, "status": statuses}
        out = self._result(cluster, ts, found, raw, lambda n, st: self._os_status_rows(cluster, ts, n, st))
        out.rows = rows + out.rows
        out.errors = errors + out.errors
        return out

    def _os_status_rows(self, cluster: str, ts: float, name: str, st: Any) -> list[TelemetryRow]:
        values: dict[str, float] = {"paused": float(st.status == "PAUSED")}
        d = st.syncing_details
        if d is not None and st.status != "PAUSED":
            # checkpoints are summed over shards: the time lag compares sums, an estimate for multi-shard indices
            h = self._histories.setdefault((cluster, name, -1), CheckpointHistory())
            h.add(ts, d.leader_checkpoint)
            tl = h.time_lag(d.follower_checkpoint, ts)
            values.update(lag_ops=float(st.lag_ops), leader_checkpoint=float(d.leader_checkpoint),
                          follower_checkpoint=float(d.follower_checkpoint))
            if _known(tl):
                values["lag_seconds"] = tl.seconds
        return rows_of(ts, cluster, name, self.name, values)

