"""ccr-stats: follower progress and replication lag, for Elasticsearch CCR and OpenSearch's replication plugin.

Rows (``node`` is the follower index, or ``index[shard]`` for shard rows):
``lag_ops``, ``lag_seconds`` (estimated from the leader checkpoint history, see ``CheckpointHistory``),
``leader_checkpoint``, ``follower_checkpoint``, ``lag_ops_follower_view``,
``failed_read_requests``, ``failed_write_requests``, ``read_exceptions``, ``operations_read``,
``operations_written``, ``time_since_last_read_millis`` and every other numeric field of a shard's stats.
A follower that is expected (named in ``ccr-stats-indices`` or seen earlier in the race) but absent from
the answer or not replicating gets a ``missing`` row and an error -- never a lag of 0; a paused one (OpenSearch's
``_status`` PAUSED, Elasticsearch's ``_ccr/info`` status paused) a ``paused`` row and no lag, which is a state
of the follower, not a failing sample.

The lag is measured against the truth: when the race has the follower's leader (the cluster named like the
follower's remote alias), each sample reads both clusters' ``<index>/_stats?level=shards`` at the same instant
and compares the primaries' global checkpoints. The follower's own view of the leader (``leader_global_checkpoint``
in Elasticsearch's stats, ``leader_checkpoint`` in OpenSearch's ``_status``) lags the leader by seconds while it
indexes, so it is kept only as ``lag_ops_follower_view``; without a leader connection it is all there is, and
``lag_ops`` comes from it as before.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeGuard

from bench.driver.samples import TelemetryRow
from bench.http.client import RawHttp
from bench.telemetry.ccr_models import (
    FOLLOWER_SETTING,
    NOT_IN_PROGRESS,
    CheckpointHistory,
    CheckpointLag,
    FollowIndexStats,
    TimeLag,
    checkpoint_lag,
    follower_indices,
    marked_followers,
    parse_autofollow_stats,
    parse_ccr_stats,
    parse_follow_info,
    parse_follower_stats,
    parse_index_ccr_stats,
    parse_leader_stats,
    parse_replication_status,
)
from bench.telemetry.device import ClusterDevice, Sampled, TelemetryContext, TelemetryError, flatten, rows_of
from bench.util.errors import BenchError

VIEW_CHECKPOINTS = {"leader_checkpoint", "follower_checkpoint"}
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
                  CheckpointHistory], device: str = "ccr-stats", truth: CheckpointLag | None = None
                  ) -> list[TelemetryRow]:
    """Rows for one Elasticsearch follower index: one set per shard (with the shard's whole document as raw),
    and index-level totals. With ``truth`` (both clusters' own checkpoints) the lag is measured against it."""
    rows: list[TelemetryRow] = []
    lag_seconds: list[float] = []
    for s in index.shards:
        if truth is not None and s.shard_id in truth.leader:
            leader, follower = truth.leader[s.shard_id], truth.follower.get(s.shard_id, -1)
            lag = float(truth.shard_lag(s.shard_id))
        else:
            leader, follower, lag = s.leader_global_checkpoint, s.follower_global_checkpoint, float(s.lag_ops)
        h = histories.setdefault((cluster, index.index, s.shard_id), CheckpointHistory())
        h.add(ts, leader)
        tl = h.time_lag(follower, ts)
        node = f"{index.index}[{s.shard_id}]"
        doc = s.model_dump(mode="json", exclude_unset=True)  # the shard document as answered
        values = {k: v for k, v in flatten({k: v for k, v in doc.items() if k not in SHARD_SKIP})}
        values["lag_ops"] = lag
        values["lag_ops_follower_view"] = float(s.lag_ops)
        values["read_exceptions"] = float(len(s.read_exceptions))
        if _known(tl):
            values["lag_seconds"] = tl.seconds
            lag_seconds.append(tl.seconds)
        rows.append(TelemetryRow(ts, cluster, node, device, "shard", float(s.shard_id), doc))
        rows += rows_of(ts, cluster, node, device, values)
    totals = {
        "lag_ops": float(truth.ops) if truth is not None else float(index.lag_ops),
        "lag_ops_follower_view": float(index.lag_ops),
        "read_exceptions": float(sum(len(s.read_exceptions) for s in index.shards)),
        "failed_read_requests": float(sum(s.failed_read_requests for s in index.shards)),
        "failed_write_requests": float(sum(s.failed_write_requests for s in index.shards)),
        "operations_read": float(sum(s.operations_read for s in index.shards)),
        "operations_written": float(sum(s.operations_written for s in index.shards)),
        "time_since_last_read_millis": float(max((s.time_since_last_read_millis for s in index.shards), default=0)),
        "fatal_exceptions": float(len(index.fatal_errors())),
    }
    if truth is not None:
        totals.update(leader_checkpoint=float(truth.leader_total), follower_checkpoint=float(truth.follower_total))
    if lag_seconds:
        totals["lag_seconds"] = max(lag_seconds)
    return rows + rows_of(ts, cluster, index.index, device, totals)


def truth_rows(ts: float, cluster: str, index: str, truth: CheckpointLag,
               histories: dict[tuple[str, str, int], CheckpointHistory], device: str = "ccr-stats"
               ) -> tuple[list[TelemetryRow], float | None]:
    """Per-shard lag rows from both clusters' checkpoints (OpenSearch's own answers only have sums), and the
    index's time lag: the slowest shard's."""
    rows: list[TelemetryRow] = []
    worst: float | None = None
    for shard, leader in sorted(truth.leader.items()):
        h = histories.setdefault((cluster, index, shard), CheckpointHistory())
        h.add(ts, leader)
        tl = h.time_lag(truth.follower.get(shard, -1), ts)
        values = {"lag_ops": float(truth.shard_lag(shard)), "leader_checkpoint": float(leader),
                  "follower_checkpoint": float(truth.follower.get(shard, -1))}
        if tl is not None and _known(tl):
            values["lag_seconds"] = tl.seconds
            worst = max(worst or 0.0, tl.seconds)
        rows += rows_of(ts, cluster, f"{index}[{shard}]", device, values)
    return rows, worst


def _known(tl: TimeLag | None) -> TypeGuard[TimeLag]:
    """A lag behind the oldest leader checkpoint seen is only a lower bound; at the very first sample that
    bound is 0 s, which would read as "no lag": leave it out."""
    return tl is not None and not (tl.lower_bound and tl.seconds == 0.0)


class CcrStats(ClusterDevice):
    name = "ccr-stats"

    def __init__(self, params: dict[str, Any], ctx: TelemetryContext) -> None:
        super().__init__(params, ctx)
        self._histories: dict[tuple[str, str, int], CheckpointHistory] = {}
        self._seen: dict[str, set[str]] = {}
        self._leaders: dict[str, RawHttp] = {}  # connections to leader clusters this device does not sample

    async def close(self) -> None:
        await super().close()
        for http in self._leaders.values():
            await http.__aexit__(None, None, None)
        self._leaders.clear()

    async def _connection(self, cluster: str) -> RawHttp:
        if cluster in self._http:
            return self._http[cluster]
        if cluster not in self._leaders:
            http = RawHttp(self.ctx.targets[cluster], connections=2)
            await http.__aenter__()
            self._leaders[cluster] = http
        return self._leaders[cluster]

    async def _shard_stats(self, cluster: str, index: str) -> Any:
        http = await self._connection(cluster)
        status, body = await http.request("GET", f"/{index}/_stats", params={"level": "shards"},
                                          timeout=self.request_timeout)
        if status >= 400:
            raise TelemetryError(f"GET {index}/_stats?level=shards on {cluster} answered HTTP {status}")
        return body

    async def _truth(self, cluster: str, follower_index: str, alias: str | None, leader_index: str | None,
                     errors: list[str]) -> CheckpointLag | None:
        """Both clusters' own checkpoints, read together; None without a connection to the leader (or when
        reading them failed, which goes to ``errors``: then no lag is reported for the follower)."""
        if not alias or alias == cluster or alias not in self.ctx.targets or not leader_index:
            return None
        try:
            leader, follower = await asyncio.gather(self._shard_stats(alias, leader_index),
                                                    self._shard_stats(cluster, follower_index))
            return checkpoint_lag(leader, leader_index, follower, follower_index)
        except (BenchError, OSError, asyncio.TimeoutError) as e:
            errors.append(f"follower {follower_index}: its lag behind leader {alias}/{leader_index} could not be "
                          f"read: {e}")
            return _UNREADABLE


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
        errors: list[str] = []
        truths: dict[str, CheckpointLag | None] = {}
        for name, index in found.items():
            first = index.shards[0] if index.shards else None
            truths[name] = await self._truth(cluster, name, first.remote_cluster if first else None,
                                             first.leader_index if first else None, errors)
        paused = await self._es_paused(cluster, configured, set(found))
        out = self._result(cluster, ts, {n: i for n, i in found.items() if truths[n] is not _UNREADABLE}, body,
                           lambda n, i: es_index_rows(ts, cluster, i, self._histories, truth=truths[n]),
                           also_found=set(found) | paused)
        # paused with the pause API: a state the row records (its lag is unknown), not a problem of the sample
        out.rows += [TelemetryRow(ts, cluster, name, self.name, "paused", 1.0) for name in sorted(paused)]
        out.errors = errors + out.errors
        return out

    async def _es_paused(self, cluster: str, configured: list[str] | None, found: set[str]) -> set[str]:
        """The paused followers: _ccr/stats drops them, _ccr/info still lists them (a deleted index: none)."""
        names = ",".join(configured) if configured else "_all"
        status, body = await self.get(cluster, f"/{names}/_ccr/info", ok=(400, 404, 405))
        if status >= 400:
            return set()
        return {f.follower_index for f in parse_follow_info(body).follower_indices
                if f.status == "paused" and f.follower_index not in found}

    def _result(self, cluster: str, ts: float, found: dict[str, Any], raw: Any, rows_for: Any,
                also_found: set[str] | None = None) -> Sampled:
        """``also_found``: followers present whose lag could not be read (no rows, but not "missing")."""
        out = Sampled(raw=raw if isinstance(raw, dict) else {"body": raw})
        for name, index in found.items():
            out.rows += rows_for(name, index)
            if isinstance(index, FollowIndexStats):
                out.errors += [f"fatal_exception on follower {e}" for e in index.fatal_errors()]
        for name in self._expected(cluster):
            if name not in found and name not in (also_found or set()):
                out.rows.append(TelemetryRow(ts, cluster, name, self.name, "missing", 1.0))
                out.errors.append(f"follower {name} is absent from the stats answer (paused, failed or "
                                  "deleted?): its lag is unknown, not zero")
        out.rows.append(TelemetryRow(ts, cluster, "", self.name, "followers",
                                     float(len(set(found) | (also_found or set())))))
        self._seen.setdefault(cluster, set()).update(found)
        self._seen[cluster].update(also_found or set())
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
        marked: set[str] = set()
        if not configured:  # follower_stats lists syncing followers only: the paused ones carry the setting
            _, settings = await self.get(cluster, f"/_all/_settings/{FOLLOWER_SETTING}", {"flat_settings": "true"},
                                         ok=(400, 404))
            marked = marked_followers(settings)
        names = list(dict.fromkeys([*(configured or follower.index_stats), *sorted(marked),
                                    *self._seen.get(cluster, set())]))
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
            if st.syncing_details is None and st.status != "PAUSED":  # paused: its row says so, no error
                errors.append(f"follower {name} is {st.status} without checkpoints: its lag is unknown")
        truths: dict[str, CheckpointLag | None] = {}
        for name, st in found.items():
            if st.syncing_details is not None and st.status != "PAUSED":
                truths[name] = await self._truth(cluster, name, st.leader_alias, st.leader_index, errors)
        rows: list[TelemetryRow] = []
        for name, istats in follower.index_stats.items():
            # its checkpoints are the follower's view (kept apart from the lag rows' leader_checkpoint)
            rows += rows_of(ts, cluster, name, self.name, {
                (f"follower_view.{k}" if k in VIEW_CHECKPOINTS else k): v
                for k, v in flatten(istats.model_dump(mode="json"))})
        rows += rows_of(ts, cluster, "", self.name, {
            **{f"follower.{k}": v for k, v in flatten(follower.model_dump(mode="json", exclude={"index_stats"}))},
            **{f"leader.{k}": v for k, v in flatten(leader.model_dump(mode="json", exclude={"index_stats"}))},
            **{f"autofollow.{k}": v for k, v in flatten(autofollow.model_dump(
                mode="json", exclude={"autofollow_stats", "failed_indices"}))},
            "autofollow.failed_indices": float(len(autofollow.failed_indices)),
        })
        for name, lstats in leader.index_stats.items():
            rows += rows_of(ts, cluster, name, self.name,
                            {f"leader.{k}": v for k, v in flatten(lstats.model_dump(mode="json"))})
        raw = {"follower_stats": fs_body, "leader_stats": ls_body, "autofollow_stats": af_body, "status": statuses}
        readable = {n: st for n, st in found.items() if truths.get(n) is not _UNREADABLE}
        out = self._result(cluster, ts, readable, raw,
                           lambda n, st: self._os_status_rows(cluster, ts, n, st, truths.get(n)),
                           also_found=set(found))
        out.rows = rows + out.rows
        out.errors = errors + out.errors
        return out

    def _os_status_rows(self, cluster: str, ts: float, name: str, st: Any,
                        truth: CheckpointLag | None = None) -> list[TelemetryRow]:
        values: dict[str, float] = {"paused": float(st.status == "PAUSED")}
        d = st.syncing_details
        rows: list[TelemetryRow] = []
        if d is not None and st.status != "PAUSED" and truth is not None:
            rows, worst = truth_rows(ts, cluster, name, truth, self._histories, self.name)
            values.update(lag_ops=float(truth.ops), leader_checkpoint=float(truth.leader_total),
                          follower_checkpoint=float(truth.follower_total), lag_ops_follower_view=float(st.lag_ops))
            if worst is not None:
                values["lag_seconds"] = worst
        elif d is not None and st.status != "PAUSED":
            # no leader connection: the follower's view, summed over shards (an estimate for multi-shard indices)
            h = self._histories.setdefault((cluster, name, -1), CheckpointHistory())
            h.add(ts, d.leader_checkpoint)
            tl = h.time_lag(d.follower_checkpoint, ts)
            values.update(lag_ops=float(st.lag_ops), leader_checkpoint=float(d.leader_checkpoint),
                          follower_checkpoint=float(d.follower_checkpoint), lag_ops_follower_view=float(st.lag_ops))
            if _known(tl):
                values["lag_seconds"] = tl.seconds
        return rows + rows_of(ts, cluster, name, self.name, values)


# A follower whose lag against its leader could not be read this sample (the error says why).
_UNREADABLE = CheckpointLag({}, {})
