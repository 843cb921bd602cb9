"""Cross-cluster replication answers as models, and the pure functions that read lag out of them.

Two APIs:

- Elasticsearch CCR: ``GET /_ccr/stats`` (``follow_stats.indices[].shards[]``) and ``GET <index>/_ccr/stats``
  (``indices[]``). Lag in operations per shard is ``leader_global_checkpoint - follower_global_checkpoint``;
  8.x also reports the index-level ``total_global_checkpoint_lag``. A paused follower has no shard-follow
  task, so it *vanishes* from the answer: an absent follower is "unknown", never "in sync".
- OpenSearch replication plugin: ``GET _plugins/_replication/<index>/_status`` (``syncing_details``
  checkpoints are *summed over shards*: an empty 2-shard index reports -2/-2), ``follower_stats``,
  ``leader_stats`` and ``autofollow_stats``. An unknown or stopped index answers 200 with
  ``{"status": "REPLICATION NOT IN PROGRESS"}``; right after a start the status may be RUNNING without
  ``syncing_details`` -- both are "unknown", not "in sync".

Used by the ccr-stats telemetry device and by ``wait-for-followers-to-sync`` style checks.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench.util.errors import ClusterError

# -- Elasticsearch CCR ---------------------------------------------------------------------------------


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class FollowShardStats(_Open):
    remote_cluster: str = ""
    leader_index: str = ""
    follower_index: str
    shard_id: int
    leader_global_checkpoint: int
    leader_max_seq_no: int = -1
    follower_global_checkpoint: int
    follower_max_seq_no: int = -1
    last_requested_seq_no: int = -1
    outstanding_read_requests: int = 0
    outstanding_write_requests: int = 0
    write_buffer_operation_count: int = 0
    total_read_time_millis: int = 0
    total_read_remote_exec_time_millis: int = 0
    successful_read_requests: int = 0
    failed_read_requests: int = 0
    operations_read: int = 0
    bytes_read: int = 0
    total_write_time_millis: int = 0
    write_buffer_size_in_bytes: int = 0
    successful_write_requests: int = 0
    failed_write_requests: int = 0
    operations_written: int = 0
    read_exceptions: list[dict[str, Any]] = []
    time_since_last_read_millis: int = 0
    fatal_exception: dict[str, Any] | None = None

    @property
    def lag_ops(self) -> int:
        return max(0, self.leader_global_checkpoint - self.follower_global_checkpoint)


class FollowIndexStats(_Open):
    index: str
    total_global_checkpoint_lag: int | None = None  # 8.x; absent in 7.x
    shards: list[FollowShardStats] = []
    fatal_exception: dict[str, Any] | None = None

    @property
    def lag_ops(self) -> int:
        if self.total_global_checkpoint_lag is not None:
            return max(0, self.total_global_checkpoint_lag)
        return sum(s.lag_ops for s in self.shards)

    def fatal_errors(self) -> list[str]:
        out = [f"{self.index}: {exception_text(self.fatal_exception)}"] if self.fatal_exception else []
        out += [f"{self.index}[{s.shard_id}]: {exception_text(s.fatal_exception)}"
                for s in self.shards if s.fatal_exception]
        return out


class FollowStats(_Open):
    indices: list[FollowIndexStats] = []


class CcrStats(_Open):
    """``GET /_ccr/stats``"""

    auto_follow_stats: dict[str, Any] = {}
    follow_stats: FollowStats = Field(default_factory=FollowStats)


class IndexCcrStats(_Open):
    """``GET /<index>/_ccr/stats``"""

    indices: list[FollowIndexStats] = []


class FollowerInfo(_Open):
    follower_index: str
    remote_cluster: str = ""
    leader_index: str = ""
    status: str = ""  # active | paused


class FollowInfo(_Open):
    """``GET <index>/_ccr/info``: every follower index, paused ones too (they vanish from ``_ccr/stats``)."""

    follower_indices: list[FollowerInfo] = []


def parse_follow_info(body: Any) -> FollowInfo:
    return _parse(FollowInfo, body, "GET <index>/_ccr/info")


def exception_text(e: dict[str, Any] | None) -> str:
    if not e:
        return ""
    inner = e.get("exception", e)
    return f"{inner.get('type', 'exception')}: {inner.get('reason', '')}".strip()


def _parse(model: type[BaseModel], body: Any, what: str) -> Any:
    if not isinstance(body, dict):
        raise ClusterError(f"{what}: expected a JSON object, got {type(body).__name__}")
    try:
        return model.model_validate(body)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise ClusterError(f"{what}: unexpected answer at '{loc}': {err['msg']}") from None


def parse_ccr_stats(body: Any) -> CcrStats:
    return _parse(CcrStats, body, "GET _ccr/stats")


def parse_index_ccr_stats(body: Any) -> IndexCcrStats:
    return _parse(IndexCcrStats, body, "GET <index>/_ccr/stats")


def follower_indices(stats: CcrStats | IndexCcrStats) -> dict[str, FollowIndexStats]:
    indices = stats.follow_stats.indices if isinstance(stats, CcrStats) else stats.indices
    return {i.index: i for i in indices}


# -- OpenSearch replication plugin ------------------------------------------------------------------------

NOT_IN_PROGRESS = "REPLICATION NOT IN PROGRESS"
# Set on every OpenSearch follower index while it replicates (paused too), cleared by _stop: how a paused
# follower, which follower_stats no longer lists, is still found.
FOLLOWER_SETTING = "index.plugins.replication.follower.leader_index"


def marked_followers(body: Any) -> set[str]:
    """The indices ``GET _all/_settings/<FOLLOWER_SETTING>?flat_settings=true`` marks as followers."""
    return {name for name, doc in (body.items() if isinstance(body, dict) else [])
            if isinstance(doc, dict) and (doc.get("settings") or {}).get(FOLLOWER_SETTING)}


class SyncingDetails(_Open):
    leader_checkpoint: int  # summed over shards
    follower_checkpoint: int  # summed over shards
    seq_no: int = 0


class ReplicationStatus(_Open):
    status: str
    reason: str | None = None
    leader_alias: str | None = None
    leader_index: str | None = None
    follower_index: str | None = None
    syncing_details: SyncingDetails | None = None

    @property
    def lag_ops(self) -> int | None:
        """Operations behind, or None when the answer cannot tell (not replicating, no details yet)."""
        if self.syncing_details is None:
            return None
        d = self.syncing_details
        return max(0, d.leader_checkpoint - d.follower_checkpoint)


class FollowerIndexStats(_Open):
    operations_written: int = 0
    operations_read: int = 0
    failed_read_requests: int = 0
    throttled_read_requests: int = 0
    failed_write_requests: int = 0
    throttled_write_requests: int = 0
    follower_checkpoint: int = -1
    leader_checkpoint: int = -1
    total_write_time_millis: int = 0


class FollowerStats(FollowerIndexStats):
    num_syncing_indices: int = 0
    num_bootstrapping_indices: int = 0
    num_paused_indices: int = 0
    num_failed_indices: int = 0
    num_shard_tasks: int = 0
    num_index_tasks: int = 0
    index_stats: dict[str, FollowerIndexStats] = {}


class LeaderIndexStats(_Open):
    operations_read: int = 0
    translog_size_bytes: int = 0
    operations_read_lucene: int = 0
    operations_read_translog: int = 0
    total_read_time_lucene_millis: int = 0
    total_read_time_translog_millis: int = 0
    bytes_read: int = 0


class LeaderStats(LeaderIndexStats):
    num_replicated_indices: int = 0
    index_stats: dict[str, LeaderIndexStats] = {}


class AutofollowRuleStats(_Open):
    name: str
    pattern: str = ""
    num_success_start_replication: int = 0
    num_failed_start_replication: int = 0
    num_failed_leader_calls: int = 0
    failed_indices: list[Any] = []
    last_execution_time: int | None = None


class AutofollowStats(_Open):
    num_success_start_replication: int = 0
    num_failed_start_replication: int = 0
    num_failed_leader_calls: int = 0
    failed_indices: list[Any] = []
    autofollow_stats: list[AutofollowRuleStats] = []


def parse_replication_status(body: Any) -> ReplicationStatus:
    return _parse(ReplicationStatus, body, "GET _plugins/_replication/<index>/_status")


def parse_follower_stats(body: Any) -> FollowerStats:
    return _parse(FollowerStats, body, "GET _plugins/_replication/follower_stats")


def parse_leader_stats(body: Any) -> LeaderStats:
    return _parse(LeaderStats, body, "GET _plugins/_replication/leader_stats")


def parse_autofollow_stats(body: Any) -> AutofollowStats:
    return _parse(AutofollowStats, body, "GET _plugins/_replication/autofollow_stats")


# -- sync checks and time lag ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SyncState:
    """Whether every expected follower is known to be caught up. ``missing`` followers (absent from the
    answer, paused, not replicating, no checkpoints yet) make ``in_sync`` False: absence is not sync."""

    in_sync: bool
    lag_ops: dict[str, int]
    missing: list[str]

    @property
    def reason(self) -> str:
        parts = [f"{i} is {n} operations behind" for i, n in sorted(self.lag_ops.items()) if n > 0]
        parts += [f"{i} reports no follower checkpoints (paused, stopped or not started?)" for i in self.missing]
        return "; ".join(parts) or "in sync"


def es_sync_state(stats: CcrStats | IndexCcrStats, expected: list[str] | None = None) -> SyncState:
    """Elasticsearch: lag per follower index; with no ``expected`` list, an answer without any follower
    is not in sync either."""
    found = follower_indices(stats)
    lag = {name: i.lag_ops for name, i in found.items()}
    missing = [i for i in (expected or []) if i not in found]
    if not expected and not found:
        missing = ["(no follower index)"]
    return SyncState(in_sync=not missing and all(v == 0 for v in lag.values()), lag_ops=lag, missing=missing)


def os_sync_state(statuses: dict[str, ReplicationStatus]) -> SyncState:
    """OpenSearch: ``statuses`` maps follower index -> its ``_status`` answer."""
    lag: dict[str, int] = {}
    missing: list[str] = []
    for index, st in statuses.items():
        ops = st.lag_ops
        if ops is None or st.status not in ("SYNCING", "RUNNING"):
            missing.append(index)
        else:
            lag[index] = ops
    if not statuses:
        missing = ["(no follower index)"]
    return SyncState(in_sync=not missing and all(v == 0 for v in lag.values()), lag_ops=lag, missing=missing)


@dataclass(frozen=True)
class TimeLag:
    seconds: float
    lower_bound: bool  # the history does not reach back far enough: the true lag is at least this


class CheckpointHistory:
    """The leader's checkpoint over time, to say how many seconds behind it a follower checkpoint is.

    The follower at checkpoint F is where the leader was until the leader moved past F: the time lag is
    ``now - t(F + 1)``, with t(F + 1) interpolated linearly between the two samples around it.
    """

    def __init__(self, max_points: int = 100_000) -> None:
        self.times: list[float] = []
        self.checkpoints: list[int] = []
        self.max_points = max_points

    def add(self, t: float, leader_checkpoint: int) -> None:
        # Checkpoints only grow; a smaller value (a restarted leader) starts the history afresh.
        if self.checkpoints and leader_checkpoint < self.checkpoints[-1]:
            self.times.clear()
            self.checkpoints.clear()
        self.times.append(t)
        self.checkpoints.append(leader_checkpoint)
        if len(self.times) > self.max_points:
            del self.times[: len(self.times) - self.max_points]
            del self.checkpoints[: len(self.checkpoints) - self.max_points]

    def time_lag(self, follower_checkpoint: int, now: float) -> TimeLag | None:
        if not self.checkpoints:
            return None
        if follower_checkpoint >= self.checkpoints[-1]:
            return TimeLag(0.0, False)
        # first sample whose leader checkpoint is beyond the follower
        i = bisect.bisect_right(self.checkpoints, follower_checkpoint)
        if i == 0:
            return TimeLag(max(0.0, now - self.times[0]), True)
        t0, c0 = self.times[i - 1], self.checkpoints[i - 1]
        t1, c1 = self.times[i], self.checkpoints[i]
        passed = t0 + (t1 - t0) * (follower_checkpoint + 1 - c0) / (c1 - c0)
        return TimeLag(max(0.0, now - passed), False)


# -- lag against the leader's own checkpoints -----------------------------------------------------------------


@dataclass(frozen=True)
class PrimaryCheckpoint:
    shard: int
    global_checkpoint: int
    max_seq_no: int | None = None


def primary_checkpoints(stats: Any, index: str, *, role: str = "leader") -> dict[int, PrimaryCheckpoint]:
    """Each primary's checkpoints from ``GET <index>/_stats?level=shards`` (the same on both engines)."""
    indices = stats.get("indices", {}) if isinstance(stats, dict) else {}
    if index not in indices:
        raise ClusterError(f"{role} index {index} is not in the {role}'s index stats "
                           f"(found: {', '.join(sorted(indices)) or 'none'})")
    out: dict[int, PrimaryCheckpoint] = {}
    for shard, copies in (indices[index].get("shards") or {}).items():
        for c in copies if isinstance(copies, list) else [copies]:
            if (c.get("routing") or {}).get("primary") and isinstance(c.get("seq_no"), dict):
                seq = c["seq_no"]
                out[int(shard)] = PrimaryCheckpoint(int(shard), int(seq.get("global_checkpoint", -1)),
                                                    int(seq["max_seq_no"]) if "max_seq_no" in seq else None)
    if not out:
        raise ClusterError(f"{role} index {index}: its shard stats report no primary with sequence numbers")
    return out


@dataclass(frozen=True)
class CheckpointLag:
    """A follower against its leader, both read from the clusters themselves at one instant (not from the
    follower's cached view of the leader, which goes stale for seconds while the leader keeps indexing).
    Per shard: leader global checkpoint - follower global checkpoint (never below 0)."""

    leader: dict[int, int]
    follower: dict[int, int]

    def shard_lag(self, shard: int) -> int:
        return max(0, self.leader[shard] - self.follower.get(shard, -1))

    @property
    def ops(self) -> int:
        return sum(self.shard_lag(s) for s in self.leader)

    @property
    def leader_total(self) -> int:
        return sum(self.leader.values())

    @property
    def follower_total(self) -> int:
        """The follower's checkpoints summed like the leader's (a shard it lacks counts as -1)."""
        return sum(self.follower.get(s, -1) for s in self.leader)


def checkpoint_lag(leader_stats: Any, leader_index: str, follower_stats: Any, follower_index: str) -> CheckpointLag:
    """The lag of ``follower_index`` behind ``leader_index`` from both clusters' ``_stats?level=shards``."""
    leader = primary_checkpoints(leader_stats, leader_index, role="leader")
    follower = primary_checkpoints(follower_stats, follower_index, role="follower")
    return CheckpointLag({s: c.global_checkpoint for s, c in leader.items()},
                         {s: c.global_checkpoint for s, c in follower.items()})
