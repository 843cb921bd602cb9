"""The CCR operation runners; ``register()`` (called from the ccr extension's setup) adds them to the driver.

Every CCR operation runs against the follower cluster: ``cluster`` (default: the race's cluster named
``follower`` if there is one, else the default cluster). ``remote-cluster`` is the follower's alias of the
leader (default ``leader``). Engine differences are in ``bench.ccr.engine``; ``prepare`` tells each operation its
cluster's engine (``_engine``) before the race starts, otherwise it is detected once per connection.

Parameters (Rally-style hyphenated names; Elasticsearch's follow parameters may be written either way):

- ``ccr-follow``: ``index`` / ``follower-index`` (default: the leader index), ``leader-index`` (default: the
  track's only index), ``settings`` (follower index settings), ``follow-parameters`` (a dict) or any of
  ``max_read_request_size``, ``max_outstanding_read_requests``, ... directly, ``use-roles`` (OpenSearch with
  security), ``wait-timeout`` (s, default 300: until the follower is active).
- ``ccr-pause``, ``ccr-resume`` (+ follow parameters), ``ccr-unfollow``: ``index`` (the follower index).
- ``ccr-auto-follow``: ``auto-follow-name``, ``leader-index-patterns`` (list or string), ``follow-index-pattern`` (default
  ``{{leader_index}}``; write ``{% raw %}{{leader_index}}{% endraw %}`` in a track, which Jinja2 renders).
- ``ccr-delete-auto-follow``: ``auto-follow-name``.
- ``wait-for-followers-to-sync``: ``indices`` (default: every follower of the cluster), ``leader-cluster``
  (default: the cluster named like the remote alias, if the race has it), ``timeout`` (s, default 600 -- long
  enough for OpenSearch's idle back-off), ``poll-interval`` (s, default 0.2). Its service time is the wait.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

import aiohttp

from bench.ccr.engine import (
    FOLLOW_PARAMETERS,
    PAUSED_ERROR,
    CcrEngine,
    CcrError,
    FollowerPaused,
    FollowerProgress,
    NoCcrSupport,
    NoStats,
    ccr_engine,
    detect_engine,
)
from bench.ccr.operations import DRILL_TYPES, REQUIRED, check_ccr_operation
from bench.ccr.sync import ShardTarget, leader_targets, wait_for_sync
from bench.driver.param_types import param_float
from bench.driver.runners.core import Context, Result
from bench.driver.runners.registry import register_runner
from bench.http.client import RawHttp
from bench.util.errors import ClusterError

FOLLOWER = "follower"
LEADER_ALIAS = "leader"
DEFAULT_SYNC_TIMEOUT = 600.0
DEFAULT_ACTIVE_TIMEOUT = 300.0

_ENGINES: weakref.WeakKeyDictionary[RawHttp, str] = weakref.WeakKeyDictionary()


def follower_cluster(ctx_clusters: list[str] | dict[str, Any], default: str, p: dict[str, Any]) -> str:
    """The cluster a CCR operation runs against."""
    if p.get("cluster"):
        return str(p["cluster"])
    return FOLLOWER if FOLLOWER in ctx_clusters else default


def follow_parameters(p: dict[str, Any]) -> dict[str, Any]:
    """Elasticsearch follow parameters from an operation: ``follow-parameters`` plus any top-level ones."""
    out: dict[str, Any] = {}
    for k, v in dict(p.get("follow-parameters") or {}).items():
        out[str(k).replace("-", "_")] = v
    for k, v in p.items():
        key = k.replace("-", "_")
        if key in FOLLOW_PARAMETERS:
            out[key] = v
    return out


def _remote(p: dict[str, Any]) -> str:
    return str(p.get("remote-cluster") or p.get("remote_cluster") or LEADER_ALIAS)


async def engine_of(ctx: Context, p: dict[str, Any]) -> CcrEngine:
    name = follower_cluster(ctx.http, ctx.default_cluster, p)
    if name not in ctx.http:
        raise CcrError(f"CCR operation names cluster {name!r} but the race's clusters are {', '.join(ctx.http)}")
    http = ctx.http[name]
    engine = p.get("_engine") or _ENGINES.get(http)
    if engine is None:
        engine = _ENGINES[http] = await detect_engine(http)
    timeout = param_float(p, "request-timeout", 0.0) if p.get("request-timeout") is not None else None
    return ccr_engine(str(engine), http, name, timeout=timeout)


def _index(p: dict[str, Any], ctx: Context, what: str) -> str:
    name = p.get("index") or p.get("follower-index")
    if not name:
        if len(ctx.indices) == 1:
            return next(iter(ctx.indices))
        raise CcrError(f"{what} needs 'index' (the follower index)")
    return str(name)


def _failed(e: CcrError) -> Result:
    kind = "no-ccr-support" if isinstance(e, NoCcrSupport) else PAUSED_ERROR if isinstance(e, FollowerPaused) \
        else "ccr"
    return Result(success=False, error_type=kind, detail=str(e), status=e.status)


def follow_indices(ctx: Context, p: dict[str, Any], operation: str) -> tuple[str, str]:
    """(leader index, follower index) of a task that starts following: ``leader-index`` (the track's only index
    when it has one) and ``index`` / ``follower-index`` (the leader's name by default)."""
    leader_index = p.get("leader-index") or (next(iter(ctx.indices)) if len(ctx.indices) == 1 else None)
    if not leader_index:
        raise CcrError(f"{operation} needs 'leader-index'")
    return str(leader_index), str(p.get("index") or p.get("follower-index") or leader_index)


def follow_extra(p: dict[str, Any]) -> dict[str, Any] | None:
    """The follow request's extra body: OpenSearch's ``use_roles`` when the task (or bench's security set-up) names
    them."""
    return {"use_roles": p["use-roles"]} if p.get("use-roles") else None


async def ccr_follow(ctx: Context, p: dict[str, Any]) -> Result:
    try:
        engine = await engine_of(ctx, p)
        leader_index, follower_index = follow_indices(ctx, p, "ccr-follow")
        await engine.follow(follower_index, remote=_remote(p), leader_index=leader_index,
                            parameters=follow_parameters(p), settings=p.get("settings"), extra=follow_extra(p))
        await engine.wait_active(follower_index, param_float(p, "wait-timeout", DEFAULT_ACTIVE_TIMEOUT))
    except CcrError as e:
        return _failed(e)
    return Result()


async def ccr_pause(ctx: Context, p: dict[str, Any]) -> Result:
    try:
        await (await engine_of(ctx, p)).pause(_index(p, ctx, "ccr-pause"))
    except CcrError as e:
        return _failed(e)
    return Result()


async def ccr_resume(ctx: Context, p: dict[str, Any]) -> Result:
    try:
        await (await engine_of(ctx, p)).resume(_index(p, ctx, "ccr-resume"), follow_parameters(p))
    except CcrError as e:
        return _failed(e)
    return Result()


async def ccr_unfollow(ctx: Context, p: dict[str, Any]) -> Result:
    try:
        await (await engine_of(ctx, p)).unfollow(_index(p, ctx, "ccr-unfollow"))
    except CcrError as e:
        return _failed(e)
    return Result()


def _patterns(p: dict[str, Any]) -> list[str]:
    raw = p.get("leader-index-patterns") or p.get("leader_index_patterns")
    patterns = [raw] if isinstance(raw, str) else list(raw or [])
    if not patterns:
        raise CcrError("ccr-auto-follow needs 'leader-index-patterns'")
    return [str(x) for x in patterns]


async def ccr_auto_follow(ctx: Context, p: dict[str, Any]) -> Result:
    try:
        engine = await engine_of(ctx, p)
        await engine.auto_follow(str(p["auto-follow-name"]), remote=_remote(p), patterns=_patterns(p),
                                 follow_pattern=str(p.get("follow-index-pattern", "{{leader_index}}")),
                                 parameters=follow_parameters(p), extra=follow_extra(p))
    except CcrError as e:
        return _failed(e)
    return Result()


async def ccr_delete_auto_follow(ctx: Context, p: dict[str, Any]) -> Result:
    try:
        await (await engine_of(ctx, p)).delete_auto_follow(str(p["auto-follow-name"]), remote=_remote(p))
    except CcrError as e:
        return _failed(e)
    return Result()


def _sync_indices(p: dict[str, Any]) -> list[str] | None:
    raw = p.get("indices", p.get("index"))
    if raw is None:
        return None
    return [raw] if isinstance(raw, str) else [str(i) for i in raw]


async def wait_for_followers_to_sync(ctx: Context, p: dict[str, Any]) -> Result:
    try:
        engine = await engine_of(ctx, p)
        indices = _sync_indices(p) or await engine.follower_indices()

        async def leader(progress: FollowerProgress | NoStats | None, index: str) -> dict[int, ShardTarget] | None:
            alias = progress.remote if isinstance(progress, FollowerProgress) and progress.remote else _remote(p)
            # the race's cluster named like the follower's remote alias, else like the operation's remote-cluster
            name = str(p.get("leader-cluster") or (alias if alias in ctx.http else _remote(p)))
            if name not in ctx.http or name == engine.cluster:
                return None  # no connection to the leader: the follower's view of it
            leader_index = (progress.leader_index if isinstance(progress, FollowerProgress) else None) \
                or p.get("leader-index") or index
            return await leader_targets(ctx.http[name], name, str(leader_index))

        try:
            outcome = await wait_for_sync(engine, indices, leader=leader,
                                          timeout=param_float(p, "timeout", DEFAULT_SYNC_TIMEOUT),
                                          poll_interval=param_float(p, "poll-interval", 0.2))
        except CcrError:
            raise
        except (ClusterError, OSError, asyncio.TimeoutError, aiohttp.ClientError) as e:
            # an unanswered or unreadable poll still fails the sync of these followers, and says so
            why = "a request timed out" if isinstance(e, asyncio.TimeoutError) else str(e) or type(e).__name__
            raise CcrError(f"wait-for-followers-to-sync: followers {', '.join(indices)} on cluster {engine.cluster} "
                           f"did not sync: {why}") from None
    except CcrError as e:
        return _failed(e)
    return Result(units=len(outcome.followers), unit="ops")


RUNNERS = {
    "ccr-follow": ccr_follow,
    "ccr-pause": ccr_pause,
    "ccr-resume": ccr_resume,
    "ccr-unfollow": ccr_unfollow,
    "ccr-auto-follow": ccr_auto_follow,
    "ccr-delete-auto-follow": ccr_delete_auto_follow,
    "wait-for-followers-to-sync": wait_for_followers_to_sync,
}
CCR_OPERATION_TYPES = frozenset(RUNNERS) | DRILL_TYPES


def register() -> None:
    for op_type, runner in RUNNERS.items():
        register_runner(op_type, runner, required=REQUIRED[op_type], check=check_ccr_operation)
