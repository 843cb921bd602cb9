"""The figures of the CCR drills (bootstrap and failover), computed from readings: pure functions and the
models the summary stores. A figure whose readings are missing or do not add up is None with a reason, never a
guess."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

MB = 1024 * 1024


def node_totals(nodes_stats: Any) -> tuple[int, int]:
    """(process CPU milliseconds, transport bytes sent) summed over the nodes of ``GET _nodes/stats/process,
    transport``; raises ValueError when a node lacks either."""
    nodes = (nodes_stats or {}).get("nodes") if isinstance(nodes_stats, dict) else None
    if not isinstance(nodes, dict) or not nodes:
        raise ValueError("the answer lists no nodes")
    cpu = tx = 0
    for name, n in nodes.items():
        try:
            cpu += int(n["process"]["cpu"]["total_in_millis"])
            tx += int(n["transport"]["tx_size_in_bytes"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"node {name} reports no process.cpu.total_in_millis or transport.tx_size_in_bytes") \
                from None
    return cpu, tx


def recovered_bytes(recovery: Any, index: str) -> int:
    """Bytes the follower's shards recovered (``GET <index>/_recovery``: index.size.recovered_in_bytes summed
    over the shards); raises ValueError when the index or a shard's size is missing."""
    shards = ((recovery or {}).get(index) or {}).get("shards") if isinstance(recovery, dict) else None
    if not isinstance(shards, list) or not shards:
        raise ValueError(f"the _recovery answer has no shards of {index}")
    total = 0
    for s in shards:
        try:
            total += int(s["index"]["size"]["recovered_in_bytes"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"a shard of {index} reports no index.size.recovered_in_bytes") from None
    return total


def rate_mb_s(nbytes: int, seconds: float) -> float | None:
    """MB/s (MiB) of ``nbytes`` in ``seconds``; None without a positive duration."""
    return nbytes / MB / seconds if seconds > 0 else None


def cpu_percent(cpu_ms_before: int, cpu_ms_after: int, seconds: float) -> float | None:
    """The CPU a cluster's node processes used over ``seconds``, in % of one core (200 % = two cores busy);
    None when the counter went back (a node restarted) or without a positive duration."""
    if seconds <= 0 or cpu_ms_after < cpu_ms_before:
        return None
    return (cpu_ms_after - cpu_ms_before) / (seconds * 1000.0) * 100.0


def rpo_ops(leader_ops: int, follower_ops: int) -> int:
    """Operations the follower lacked: the leader's sequence numbers (max seq no summed over its primaries) minus
    the follower's checkpoints summed over the same shards; never negative (the follower was read after the
    leader, so it may have caught up a little meanwhile)."""
    return max(0, leader_ops - follower_ops)


def rto_s(cut: float, accepted: float) -> float:
    """Seconds from the cut until the follower accepted a write (monotonic clock readings)."""
    if accepted < cut:
        raise ValueError("the follower's write cannot precede the cut")
    return accepted - cut


class BootstrapFigures(BaseModel):
    """One measured bootstrap: ``ccr-bootstrap``'s sample meta, then the summary's rows."""

    task: str
    cluster: str
    index: str
    leader_cluster: str | None = None
    leader_index: str
    seconds_to_syncing: float
    recovered_bytes: int | None = None
    mb_s: float | None = None
    leader_tx_bytes: int | None = None  # the leader's transport bytes out during the bootstrap
    leader_cpu_pct: float | None = None  # % of one core, the leader's node processes together
    settings: dict[str, Any] = {}  # the recovery settings it ran with
    notes: list[str] = []


class FailoverFigures(BaseModel):
    """One failover drill; ``error`` set means no RTO and no RPO: the drill failed."""

    task: str
    mode: str  # kill | cut-link
    cluster: str
    index: str
    leader_cluster: str
    leader_index: str
    cut_after_docs: int = 0  # documents the leader had acknowledged when the drill cut
    cut_after_s: float = 0.0  # seconds of indexing before the cut
    rto_s: float | None = None
    promote_s: float | None = None  # of the RTO, the promotion calls
    rpo_ops: int | None = None
    leader_ops: int | None = None
    follower_ops: int | None = None
    leader_docs_at_cut: int | None = None
    follower_docs_after: int | None = None  # the promoted follower's documents (the probe left out)
    error: str | None = None
