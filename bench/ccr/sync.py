"""wait-for-followers-to-sync: how long followers take to catch up once indexing ends.

When the wait starts, the leader's per-shard checkpoints are taken as the targets (``GET <leader>/_stats
?level=shards``: each primary's global checkpoint and max seq no; without a connection to the leader, what the
follower last saw of it). Then the follower is polled until every followed shard has reached its target. A
follower that reports nothing (paused, stopped, vanished, "REPLICATION NOT IN PROGRESS", RUNNING without
checkpoints) is never in sync: the wait goes on and, at the timeout, fails naming what it last saw. A follower
paused with the pause API is the exception: it stays paused until someone resumes it, so the wait fails at once
(``FollowerPaused``) instead of waiting out its timeout.

OpenSearch reports checkpoints summed over shards only; there the summed targets are compared with the summed
follower checkpoint (an empty 2-shard index is -2 on both sides).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bench.ccr.engine import ELASTICSEARCH, CcrEngine, CcrError, FollowerPaused, FollowerProgress, NoStats
from bench.http.client import RawHttp
from bench.telemetry.ccr_models import primary_checkpoints
from bench.util.errors import ClusterError


@dataclass(frozen=True)
class ShardTarget:
    shard: int
    global_checkpoint: int
    max_seq_no: int | None = None

    @property
    def value(self) -> int:
        """Every operation the leader had when the wait started (its max seq no, else its global checkpoint)."""
        return max(self.global_checkpoint, self.max_seq_no if self.max_seq_no is not None else -1)

    def describe(self) -> str:
        mx = f" / max seq no {self.max_seq_no}" if self.max_seq_no is not None else ""
        return f"global checkpoint {self.global_checkpoint}{mx}"


@dataclass
class Followed:
    """One follower index being waited for."""

    index: str
    targets: dict[int, ShardTarget] | None = None  # per shard; None until known
    total_target: int | None = None  # OpenSearch fallback without a leader connection: summed leader checkpoint
    last: FollowerProgress | NoStats | None = None
    synced_after: float | None = None
    source: str = ""  # where the targets came from


def shard_targets(stats: Any, leader_index: str) -> dict[int, ShardTarget]:
    """The primaries' checkpoints from ``GET <index>/_stats?level=shards`` (same on both engines)."""
    try:
        primaries = primary_checkpoints(stats, leader_index)
    except ClusterError as e:
        raise CcrError(str(e)) from None
    return {s: ShardTarget(s, c.global_checkpoint, c.max_seq_no) for s, c in primaries.items()}


async def leader_targets(http: RawHttp, cluster: str, leader_index: str) -> dict[int, ShardTarget]:
    status, body = await http.request("GET", f"/{leader_index}/_stats", params={"level": "shards"})
    if status >= 400:
        raise CcrError(f"GET {leader_index}/_stats?level=shards on leader cluster {cluster} answered HTTP {status}: "
                       f"{str(body)[:200]}")
    return shard_targets(body, leader_index)


def targets_from_follower(p: FollowerProgress) -> tuple[dict[int, ShardTarget] | None, int | None]:
    """Targets from what the follower last saw of the leader (no connection to the leader)."""
    if p.shards:
        return {s.shard: ShardTarget(s.shard, s.leader_global_checkpoint if s.leader_global_checkpoint is not None
                                     else -1, s.leader_max_seq_no) for s in p.shards.values()}, None
    return None, p.leader_total


def lagging(f: Followed) -> list[str]:
    """What keeps this follower from being in sync; empty when it has reached every target."""
    p = f.last
    if p is None:
        return [f"{f.index}: not polled yet"]
    if isinstance(p, NoStats):
        return [f"{f.index}: no follower checkpoints ({p.reason})"]
    if f.targets is None and f.total_target is None:
        return [f"{f.index}: leader checkpoints unknown"]
    if p.shards and f.targets is not None:
        out = []
        for shard, t in sorted(f.targets.items()):
            s = p.shards.get(shard)
            if s is None:
                out.append(f"{f.index} shard {shard}: no follower checkpoint (leader {t.describe()})")
            elif s.follower_global_checkpoint < t.value:
                out.append(f"{f.index} shard {shard}: follower global checkpoint {s.follower_global_checkpoint}, "
                           f"leader {t.describe()}")
        return out
    # summed checkpoints (OpenSearch)
    total = sum(t.value for t in f.targets.values()) if f.targets is not None else f.total_target
    have = p.follower_total if p.follower_total is not None else sum(
        s.follower_global_checkpoint for s in p.shards.values())
    assert total is not None
    if have < total:
        per_shard = f" ({', '.join(f'shard {t.shard}: {t.describe()}' for t in f.targets.values())})" \
            if f.targets else ""
        return [f"{f.index}: follower checkpoint {have} (summed over shards), leader {total}{per_shard}"]
    return []


def paused_by_user(engine: CcrEngine, p: NoStats) -> FollowerPaused:
    """The one line for a follower that was paused with the pause API: why the wait ends and what to do."""
    resume = (f"POST {p.index}/_ccr/resume_follow" if engine.engine == ELASTICSEARCH
              else f"POST _plugins/_replication/{p.index}/_resume")
    return FollowerPaused(f"wait-for-followers-to-sync: follower {p.index} on cluster {engine.cluster} was paused by "
                          f"a user ({p.reason}), so it cannot catch up: resume it ({resume}, or a ccr-resume task "
                          f"before the wait), or leave it out of the wait's 'indices'", status=200)


@dataclass
class SyncOutcome:
    seconds: float
    polls: int
    followers: list[Followed] = field(default_factory=list)


LeaderLookup = Callable[[FollowerProgress | NoStats | None, str], Awaitable[dict[int, ShardTarget] | None]]


async def wait_for_sync(engine: CcrEngine, indices: list[str], *, leader: LeaderLookup | None = None,
                        timeout: float = 600.0, poll_interval: float = 0.2) -> SyncOutcome:
    """Wait until every follower in ``indices`` has reached the leader's checkpoints as of now.

    ``leader(progress, follower_index)`` returns the leader's per-shard targets (None: no leader connection,
    use what the follower saw). Raises CcrError on timeout or a follower's fatal error."""
    if not indices:
        raise CcrError(f"wait-for-followers-to-sync: cluster {engine.cluster} has no follower index to wait for "
                       f"(name them with the 'indices' parameter)")
    start = time.monotonic()
    deadline = start + timeout
    followers = [Followed(i) for i in indices]
    # The targets first, all at the start of the wait: catching up is measured against what was indexed by now.
    for f in followers:
        f.last = await engine.progress(f.index)
        got = await leader(f.last, f.index) if leader is not None else None
        if got is not None:
            f.targets, f.source = got, "leader"
        elif isinstance(f.last, FollowerProgress):
            f.targets, f.total_target = targets_from_follower(f.last)
            f.source = "follower"
    polls = 1
    while True:
        pending = []
        for f in followers:
            if f.synced_after is not None:
                continue
            if polls > 1:
                f.last = await engine.progress(f.index)
            p = f.last
            if isinstance(p, FollowerProgress) and p.fatal:
                raise CcrError(f"wait-for-followers-to-sync: follower {f.index} on cluster {engine.cluster} failed: "
                               f"{p.fatal}", status=200)
            if isinstance(p, NoStats) and p.paused:
                raise paused_by_user(engine, p)
            if f.targets is None and f.total_target is None and isinstance(p, FollowerProgress):
                # No leader connection and no stats at the start: the first stats the follower gives.
                f.targets, f.total_target = targets_from_follower(p)
                f.source = "follower"
            problems = lagging(f)
            if problems:
                pending.append(problems)
            else:
                f.synced_after = time.monotonic() - start
        if not pending:
            return SyncOutcome(time.monotonic() - start, polls, followers)
        if time.monotonic() >= deadline:
            detail = "; ".join(p for ps in pending for p in ps[:3])
            # status 200: the follower answered every poll; what it said is the failure
            raise CcrError(f"wait-for-followers-to-sync: followers on cluster {engine.cluster} did not catch up "
                           f"within {timeout:g} s: {detail}", status=200)
        await asyncio.sleep(min(poll_interval, max(0.0, deadline - time.monotonic())))
        polls += 1
