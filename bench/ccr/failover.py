"""The failover drill: while the leader indexes, cut it off at a set point, promote the follower, and measure
how long until the follower accepts writes (RTO) and how many operations it lacked at the cut (RPO).

A challenge runs it as a parallel block: the indexing task(s) beside one ``ccr-failover`` task. The CCR race hook
drives that block itself (``drive_failover``): it runs the indexing through the coordinator and ends it at the
drill's point (``after-docs`` acknowledged documents or ``after-seconds``, whichever comes first; in-flight bulks
are answered and kept), so no request fails because of the planned cut. Then, in order:

1. the readings at the cut: the leader index's documents (after a refresh) and its primaries' max seq no, then the
   follower's checkpoints (what ``wait-for-followers-to-sync`` reads);
2. the cut: ``mode: kill`` SIGKILLs every node of the leader cluster (only clusters bench started: the health
   check then leaves them out), ``mode: cut-link`` points the follower's ``cluster.remote.<alias>.seeds`` at a
   closed local port (restored once the drill is over; the leader keeps running);
3. the promotion: OpenSearch ``POST _plugins/_replication/<index>/_stop``; Elasticsearch pause-follow, close,
   unfollow, open; retried until it succeeds or the timeout;
4. a probe document (a copy of one of the leader index's documents, read before the cut, so the mapping takes
   it) written to the follower index until it is accepted: RTO is from the cut to that answer; the probe is
   deleted afterwards.

A drill that does not get there (the indexing ended first, the promotion or the probe failed within ``timeout``)
is recorded as an error without RTO or RPO, and the race fails.

Parameters of ``ccr-failover``: ``mode`` (kill | cut-link, default cut-link), ``after-docs``, ``after-seconds``
(at least one), ``index`` (the follower index), ``leader-index`` (default: the same name), ``remote-cluster``
(default leader), ``leader-cluster`` (default: the remote alias), ``timeout`` (s, default 120).
"""

from __future__ import annotations

import asyncio
import socket
import time
from dataclasses import dataclass
from typing import Any

from bench.ccr.drill_figures import FailoverFigures, rpo_ops, rto_s
from bench.ccr.engine import ELASTICSEARCH, CcrEngine, CcrError, FollowerProgress, ccr_engine
from bench.ccr.operations import check_ccr_operation
from bench.ccr.runners import FOLLOWER, LEADER_ALIAS
from bench.ccr.sync import leader_targets
from bench.driver.coordinator import RunStep
from bench.driver.runners.core import Context, Result
from bench.driver.samples import RequestSample
from bench.http.client import ClusterTarget, RawHttp
from bench.race.pipeline import KillCluster
from bench.track.model import Parallel, Task
from bench.util.errors import ClusterError, TrackError

OPERATION = "ccr-failover"
MODES = ("kill", "cut-link")
PROBE_ID = "bench-failover-probe"
DEFAULT_TIMEOUT = 120.0


@dataclass(frozen=True)
class FailoverSpec:
    task: str
    mode: str
    after_docs: int | None
    after_seconds: float | None
    follower: str
    index: str
    leader_index: str
    remote: str
    leader: str
    timeout: float


def _positive(where: str, params: dict[str, Any], key: str) -> float | None:
    v = params.get(key)
    if v is None:
        return None
    if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
        raise TrackError(f"{where} has {key} {v!r}: use a positive number")
    return float(v)


def parse_spec(name: str, p: dict[str, Any], track_file: str = "the track") -> FailoverSpec:
    """The drill's parameters, or one TrackError line naming the bad one."""
    where = f"{track_file}: task '{name}' ({OPERATION})"
    mode = str(p.get("mode", "cut-link"))
    if mode not in MODES:
        raise TrackError(f"{where} has mode {mode!r}: use kill (stop the leader's nodes) or cut-link")
    docs, seconds = _positive(where, p, "after-docs"), _positive(where, p, "after-seconds")
    if docs is None and seconds is None:
        raise TrackError(f"{where} needs after-docs or after-seconds: the point at which the drill cuts the leader off")
    index = p.get("index") or p.get("follower-index")
    if not index:
        raise TrackError(f"{where} needs 'index' (the follower index to promote)")
    remote = str(p.get("remote-cluster") or LEADER_ALIAS)
    return FailoverSpec(name, mode, int(docs) if docs is not None else None, seconds,
                        str(p.get("cluster") or FOLLOWER), str(index), str(p.get("leader-index") or index), remote,
                        str(p.get("leader-cluster") or remote), _positive(where, p, "timeout") or DEFAULT_TIMEOUT)


def drill_of(step: Task | Parallel) -> tuple[Task, Parallel] | None:
    """(the ccr-failover task, the rest of the block) when ``step`` is a drill's parallel block."""
    if not isinstance(step, Parallel):
        return None
    drills = [t for t in step.tasks if t.operation.operation_type == OPERATION]
    if not drills:
        return None
    rest = [t for t in step.tasks if t.operation.operation_type != OPERATION]
    if len(drills) > 1 or not rest:
        raise TrackError(f"a parallel block with {OPERATION} needs exactly one {OPERATION} task and the indexing "
                         f"task(s) beside it (it has {len(drills)} drill(s), {len(rest)} other task(s))")
    completed_by = step.completed_by if step.completed_by in (None, "any") or \
        step.completed_by in {t.name for t in rest} else None
    return drills[0], Parallel(tasks=rest, completed_by=completed_by)


class DrillPoint:
    """The sample watch that ends the indexing at the drill's point."""

    def __init__(self, spec: FailoverSpec, tasks: set[str]) -> None:
        self.spec, self.tasks = spec, tasks
        self.docs, self.start, self.reached = 0, time.monotonic(), False

    def __call__(self, batch: list[RequestSample]) -> bool:
        self.docs += sum(s.units - s.failed_units for s in batch if s.task in self.tasks and s.success
                         and s.unit == "docs")
        s = self.spec
        if (s.after_docs is not None and self.docs >= s.after_docs) or \
                (s.after_seconds is not None and time.monotonic() - self.start >= s.after_seconds):
            self.reached = True
        return self.reached


async def drive_failover(spec: FailoverSpec, rest: Parallel, run: RunStep, *, targets: dict[str, ClusterTarget],
                         engines: dict[str, str], kill: KillCluster | None) -> FailoverFigures:
    """The whole drill; its failures are in the figures' ``error``, never raised (the race then fails)."""
    figures = FailoverFigures(task=spec.task, mode=spec.mode, cluster=spec.follower, index=spec.index,
                              leader_cluster=spec.leader, leader_index=spec.leader_index)
    for name in (spec.follower, spec.leader):
        if name not in targets:
            figures.error = f"cluster {name!r} is not part of this race (clusters: {', '.join(targets)})"
            return figures
    if spec.mode == "kill" and kill is None:
        figures.error = ("mode kill stops the leader's nodes, which only works for clusters bench started on this "
                         "machine: use mode cut-link")
        return figures
    point = DrillPoint(spec, {t.name for t in rest.tasks})
    await run(rest, point)
    figures.cut_after_docs, figures.cut_after_s = point.docs, time.monotonic() - point.start
    if not point.reached:
        figures.error = (f"the indexing ended after {point.docs:,} documents, before the drill's point: lower "
                         f"after-docs / after-seconds or index more")
        return figures
    async with RawHttp(targets[spec.follower], connections=2) as fh, \
            RawHttp(targets[spec.leader], connections=1) as lh:
        engine = ccr_engine(engines.get(spec.follower, "opensearch"), fh, spec.follower,
                            timeout=min(spec.timeout, 30.0))
        try:
            await _drill(spec, engine, lh, kill, figures)
        except (ClusterError, OSError, asyncio.TimeoutError) as e:
            figures.error = str(e) or type(e).__name__
    return figures


async def _probe_source(leader: RawHttp, spec: FailoverSpec) -> dict[str, Any]:
    """One of the leader index's documents (the follower has its mapping; it may lag too far to have any)."""
    status, body = await leader.request("GET", f"/{spec.leader_index}/_search", params={"size": 1})
    hits = ((body or {}).get("hits") or {}).get("hits") or [] if status < 400 and isinstance(body, dict) else []
    if not hits or not isinstance(hits[0].get("_source"), dict):
        raise CcrError(f"leader index {spec.leader_index} on cluster {spec.leader} has no document (with _source) "
                       f"to copy as the failover probe (GET _search answered HTTP {status})")
    return dict(hits[0]["_source"])


async def _readings(spec: FailoverSpec, engine: CcrEngine, leader: RawHttp, figures: FailoverFigures) -> None:
    """The leader's documents and operations, then the follower's checkpoints, right before the cut."""
    await leader.request("POST", f"/{spec.leader_index}/_refresh")
    status, body = await leader.request("GET", f"/{spec.leader_index}/_count")
    if status < 400 and isinstance(body, dict):
        figures.leader_docs_at_cut = int(body.get("count", 0))
    shard_targets = await leader_targets(leader, spec.leader, spec.leader_index)
    progress = await engine.progress(spec.index)
    if not isinstance(progress, FollowerProgress):
        raise CcrError(f"follower {spec.index} reported no checkpoints at the cut ({progress.reason})")
    figures.leader_ops = sum(t.value for t in shard_targets.values())
    figures.follower_ops = progress.follower_total if progress.follower_total is not None else sum(
        s.follower_global_checkpoint for s in progress.shards.values())
    if figures.follower_ops > figures.leader_ops:
        raise CcrError(f"follower {spec.index} has more operations ({figures.follower_ops}, summed over shards) than "
                       f"leader index {spec.leader_index} ({figures.leader_ops}): it does not follow this leader "
                       f"index (a follower left from an earlier run?)")
    figures.rpo_ops = rpo_ops(figures.leader_ops, figures.follower_ops)


async def _drill(spec: FailoverSpec, engine: CcrEngine, leader: RawHttp, kill: KillCluster | None,
                 figures: FailoverFigures) -> None:
    await _readings(spec, engine, leader, figures)
    probe = await _probe_source(leader, spec)
    restore: dict[str, Any] | None = None
    closed = socket.socket()  # bound, never listening: the cut link's seed refuses every connection
    try:
        cut = time.monotonic()
        if spec.mode == "kill":
            assert kill is not None
            await asyncio.to_thread(kill, spec.leader)
        else:
            closed.bind(("127.0.0.1", 0))
            restore = await _cut_link(engine, spec.remote, f"127.0.0.1:{closed.getsockname()[1]}")
        deadline = cut + spec.timeout
        await _retry(lambda: promote(engine, spec.index), deadline, "promoting the follower")
        figures.promote_s = time.monotonic() - cut
        await _retry(lambda: _probe(engine, spec.index, probe), deadline, "writing a probe document to the follower",
                     final=(400,))
        figures.rto_s = rto_s(cut, time.monotonic())
        figures.follower_docs_after = await _count_without_probe(engine, spec.index)
    finally:
        if restore is not None:
            await engine.call("PUT", "/_cluster/settings", {"persistent": restore})
        closed.close()


async def _cut_link(engine: CcrEngine, alias: str, dead: str) -> dict[str, Any]:
    """Point the remote alias at a closed port; returns the settings that restore it."""
    key = f"cluster.remote.{alias}.seeds"
    _, now = await engine.call("GET", "/_cluster/settings", params={"flat_settings": "true"})
    persistent = (now or {}).get("persistent") or {}
    before = persistent.get(key)
    if before is None:  # flat settings list a list setting by position
        listed = [v for k, v in sorted(persistent.items()) if k.startswith(f"{key}.")]
        before = listed or None
    await engine.call("PUT", "/_cluster/settings", {"persistent": {key: [dead]}})
    return {key: before}


async def promote(engine: CcrEngine, index: str) -> None:
    """Make a follower index a writable index: OpenSearch stops replication; Elasticsearch pauses, closes,
    unfollows (``unfollow`` does those three) and opens it."""
    await engine.unfollow(index)
    if engine.engine == ELASTICSEARCH:
        await engine.call("POST", f"/{index}/_open", params={"wait_for_active_shards": 1})


async def _probe(engine: CcrEngine, index: str, source: dict[str, Any]) -> None:
    await engine.call("PUT", f"/{index}/_doc/{PROBE_ID}", source)


async def _count_without_probe(engine: CcrEngine, index: str) -> int:
    await engine.call("DELETE", f"/{index}/_doc/{PROBE_ID}", params={"refresh": "true"})
    _, body = await engine.call("GET", f"/{index}/_count")
    return int((body or {}).get("count", 0))


def check_failover(name: str, op_type: str, params: dict[str, Any], *, track_file: str) -> None:
    """Load-time check of a ccr-failover task's parameters."""
    check_ccr_operation(name, op_type, params, track_file=track_file)
    parse_spec(name, params, track_file)


async def outside_a_drill(ctx: Context, p: dict[str, Any]) -> Result:
    """ccr-failover run by anything but the race's drill step: it cannot cut or promote from a load worker."""
    return Result(success=False, error_type="ccr", detail=f"{OPERATION} runs only in `bench race`, in a parallel "
                  f"block beside the indexing task(s) of the leader (the race drives that block)")


async def _retry(call: Any, deadline: float, what: str, final: tuple[int, ...] = ()) -> None:
    """Call until it succeeds; a CcrError with a status in ``final`` (e.g. a document the mapping refuses) ends
    the retries at once, waiting cannot change its answer."""
    last = ""
    while True:
        try:
            await call()
            return
        except CcrError as e:
            if e.status in final:
                raise CcrError(f"failover drill: {what} failed: {e}") from None
            last = str(e)
        except (ClusterError, OSError, asyncio.TimeoutError) as e:
            last = str(e) or type(e).__name__
        if time.monotonic() >= deadline:
            raise CcrError(f"failover drill: {what} did not succeed within the drill's timeout: {last}")
        await asyncio.sleep(0.2)
