"""One small interface over the two cross-cluster replication APIs.

Elasticsearch CCR (x-pack ``ccr`` module: ``<index>/_ccr/*``, ``_ccr/auto_follow``) and the OpenSearch
cross-cluster replication plugin (``_plugins/_replication/*``) do the same things with different calls;
``CcrEngine`` hides that so tracks stay engine-neutral. An engine is bound to one cluster connection (the
follower's, for every call but the probe of a leader).

A cluster without CCR answers "no handler found" (HTTP 400) or "Incorrect HTTP method" (405) to these
calls: that becomes ``NoCcrSupport``, one line saying so, instead of a puzzling HTTP error.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from bench.http.client import RawHttp
from bench.telemetry.ccr_models import (
    FOLLOWER_SETTING,
    NOT_IN_PROGRESS,
    exception_text,
    marked_followers,
    parse_follow_info,
    parse_follower_stats,
    parse_index_ccr_stats,
    parse_replication_status,
)
from bench.util import redact
from bench.util.errors import ClusterError

ELASTICSEARCH, OPENSEARCH = "elasticsearch", "opensearch"
NO_CCR = "this cluster has no CCR support (x-pack ccr / opensearch replication plugin missing)"

# Elasticsearch's follow API parameters (PUT <follower>/_ccr/follow, resume_follow, auto_follow).
FOLLOW_PARAMETERS = frozenset({
    "max_read_request_operation_count", "max_outstanding_read_requests", "max_read_request_size",
    "max_write_request_operation_count", "max_write_request_size", "max_outstanding_write_requests",
    "max_write_buffer_count", "max_write_buffer_size", "max_retry_delay", "read_poll_timeout",
})


class CcrError(ClusterError):
    """A CCR call failed (bad request, missing leader index, license, timeout).

    ``status``: the HTTP status the cluster answered with (200 when the answer itself reports the failure),
    0 when no request was answered, so the summary can tell the cluster's answers from bench-side failures."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class NoCcrSupport(CcrError):
    """The cluster has no CCR module / replication plugin."""


class FollowerPaused(CcrError):
    """A follower was paused with the pause API: it replicates nothing until someone resumes it."""


# The error type of an operation that failed on a follower paused by a user (the CCR section names the reason).
PAUSED_ERROR = "ccr-follower-paused"


@dataclass(frozen=True)
class ShardProgress:
    shard: int
    follower_global_checkpoint: int
    leader_global_checkpoint: int | None = None  # as the follower last saw the leader (Elasticsearch)
    leader_max_seq_no: int | None = None


@dataclass(frozen=True)
class FollowerProgress:
    """Where a follower index stands. Elasticsearch reports per shard; OpenSearch only sums over shards."""

    index: str
    status: str
    shards: dict[int, ShardProgress] = field(default_factory=dict)
    leader_index: str | None = None
    remote: str | None = None
    follower_total: int | None = None  # OpenSearch: follower checkpoint summed over shards
    leader_total: int | None = None  # OpenSearch: leader checkpoint summed over shards
    read_exceptions: int = 0
    fatal: str | None = None

    def describe(self) -> str:
        if self.shards:
            return ", ".join(f"shard {s.shard}: follower global checkpoint {s.follower_global_checkpoint}"
                             for s in sorted(self.shards.values(), key=lambda s: s.shard))
        return f"follower checkpoint (summed over shards) {self.follower_total}"


@dataclass(frozen=True)
class NoStats:
    """The follower reports no checkpoints (paused, stopped, vanished, not started yet): never 'in sync'.

    ``paused``: paused with the pause API (OpenSearch: PAUSED, "User initiated"; Elasticsearch: ``_ccr/info``
    status paused). Such a follower never resumes by itself, so nothing it waits for can come."""

    index: str
    reason: str
    paused: bool = False


def _text(body: Any) -> str:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        return f"{err.get('type')}: {err.get('reason')}"
    if isinstance(body, dict) and "error" in body:
        return str(body["error"])
    return " ".join(str(body).split())


def is_no_handler(status: int, body: Any) -> bool:
    """The answers of a cluster lacking the API: 400 "no handler found", 405 "Incorrect HTTP method"."""
    text = _text(body).lower()
    return status == 405 or (status in (400, 404) and "no handler found" in text)


class CcrEngine(ABC):
    """CCR calls against one cluster (``cluster`` names it in messages)."""

    engine: str = ""

    def __init__(self, http: RawHttp, cluster: str, *, timeout: float | None = None) -> None:
        self.http = http
        self.cluster = cluster
        self.timeout = timeout

    async def call(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None,
                   ok: tuple[int, ...] = ()) -> tuple[int, Any]:
        status, answer = await self.http.request(method, path, params=params, body=body, timeout=self.timeout)
        if status < 400 or status in ok:
            return status, answer
        where = f"{method} {path} on cluster {self.cluster}"
        text = redact.redact_text(_text(answer)[:300])
        if is_no_handler(status, answer):
            raise NoCcrSupport(f"cluster {self.cluster} ({self.engine}): {NO_CCR}: {where} answered HTTP {status} "
                               f"{text}", status=status)
        if status == 403 and "non-compliant" in text:
            raise CcrError(f"{where}: HTTP 403 {text}: CCR needs a platinum or trial license on both clusters; "
                           f"add the trial-license car mixin or POST _license/start_trial?acknowledge=true",
                           status=status)
        if status == 403 and ("no permissions for" in text or "No mapping for User" in text):
            raise CcrError(f"{where}: HTTP 403 {text}: the user lacks a replication permission or role; map it to the "
                           f"replication roles (cross_cluster_replication_follower_full_access on the follower, "
                           f"..._leader_full_access on the leader) and name them in use-roles, or leave use-roles "
                           f"out so bench maps them", status=status)
        raise CcrError(f"{where} answered HTTP {status}: {text}", status=status)

    # -- the interface ---------------------------------------------------------------------------------------
    @abstractmethod
    async def probe(self) -> None:
        """Raise NoCcrSupport when the cluster lacks CCR (a read-only call)."""

    @abstractmethod
    async def follow(self, follower_index: str, *, remote: str, leader_index: str,
                     parameters: dict[str, Any], settings: dict[str, Any] | None = None,
                     extra: dict[str, Any] | None = None) -> Any: ...

    @abstractmethod
    async def pause(self, follower_index: str) -> Any: ...

    @abstractmethod
    async def resume(self, follower_index: str, parameters: dict[str, Any]) -> Any: ...

    @abstractmethod
    async def unfollow(self, follower_index: str) -> Any: ...

    @abstractmethod
    async def auto_follow(self, name: str, *, remote: str, patterns: list[str], follow_pattern: str,
                          parameters: dict[str, Any], extra: dict[str, Any] | None = None) -> Any: ...

    @abstractmethod
    async def delete_auto_follow(self, name: str, *, remote: str) -> Any: ...

    @abstractmethod
    async def stats(self) -> Any:
        """The engine's raw follower statistics answer."""

    @abstractmethod
    async def follower_indices(self) -> list[str]:
        """The follower indices this cluster's stats know of."""

    @abstractmethod
    async def progress(self, follower_index: str) -> FollowerProgress | NoStats:
        """Checkpoints of a follower index, or NoStats when it reports none."""

    @abstractmethod
    def is_active(self, p: FollowerProgress) -> bool: ...

    async def wait_active(self, follower_index: str, timeout: float, poll: float = 0.5) -> FollowerProgress:
        """Poll until the follower reports checkpoints (it is following); CcrError naming the last state."""
        deadline = time.monotonic() + timeout
        while True:
            p = await self.progress(follower_index)
            if isinstance(p, FollowerProgress) and p.fatal:
                raise CcrError(f"follower {follower_index} on cluster {self.cluster} failed: {p.fatal}", status=200)
            if isinstance(p, FollowerProgress) and self.is_active(p):
                return p
            if time.monotonic() >= deadline:
                state = p.reason if isinstance(p, NoStats) else f"status {p.status}"
                raise CcrError(f"follower {follower_index} on cluster {self.cluster} did not become active within "
                               f"{timeout:g} s ({state})", status=200)
            await asyncio.sleep(poll)


def _follow_body(parameters: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(parameters) - FOLLOW_PARAMETERS)
    if unknown:
        raise CcrError(f"unknown follow parameter(s) {', '.join(unknown)}: use {', '.join(sorted(FOLLOW_PARAMETERS))}")
    return dict(parameters)


class ElasticsearchCcr(CcrEngine):
    engine = ELASTICSEARCH

    async def probe(self) -> None:
        await self.call("GET", "/_ccr/stats")

    async def follow(self, follower_index: str, *, remote: str, leader_index: str,
                     parameters: dict[str, Any], settings: dict[str, Any] | None = None,
                     extra: dict[str, Any] | None = None) -> Any:
        body: dict[str, Any] = {"remote_cluster": remote, "leader_index": leader_index, **_follow_body(parameters)}
        if settings:
            body["settings"] = settings
        body.update(extra or {})
        _, answer = await self.call("PUT", f"/{follower_index}/_ccr/follow", body,
                                    {"wait_for_active_shards": 1})
        return answer

    async def pause(self, follower_index: str) -> Any:
        return (await self.call("POST", f"/{follower_index}/_ccr/pause_follow"))[1]

    async def resume(self, follower_index: str, parameters: dict[str, Any]) -> Any:
        body = _follow_body(parameters) or None
        return (await self.call("POST", f"/{follower_index}/_ccr/resume_follow", body))[1]

    async def unfollow(self, follower_index: str) -> Any:
        # Elasticsearch's order: pause, close, unfollow. A follower that is already paused answers 400 to the
        # pause; that is fine, anything else surfaces at the unfollow.
        try:
            await self.pause(follower_index)
        except NoCcrSupport:
            raise
        except CcrError:
            pass
        await self.call("POST", f"/{follower_index}/_close")
        return (await self.call("POST", f"/{follower_index}/_ccr/unfollow"))[1]

    async def auto_follow(self, name: str, *, remote: str, patterns: list[str], follow_pattern: str,
                          parameters: dict[str, Any], extra: dict[str, Any] | None = None) -> Any:
        body = {"remote_cluster": remote, "leader_index_patterns": patterns,
                "follow_index_pattern": follow_pattern, **_follow_body(parameters), **(extra or {})}
        return (await self.call("PUT", f"/_ccr/auto_follow/{name}", body))[1]

    async def delete_auto_follow(self, name: str, *, remote: str) -> Any:
        return (await self.call("DELETE", f"/_ccr/auto_follow/{name}"))[1]

    async def stats(self) -> Any:
        return (await self.call("GET", "/_ccr/stats"))[1]

    async def follower_indices(self) -> list[str]:
        # _ccr/info, not _ccr/stats: a paused follower has no stats but is still a follower to wait for
        _, body = await self.call("GET", "/_all/_ccr/info")
        return sorted({f.follower_index for f in parse_follow_info(body).follower_indices})

    async def progress(self, follower_index: str) -> FollowerProgress | NoStats:
        status, body = await self.call("GET", f"/{follower_index}/_ccr/stats", ok=(400, 404))
        if status >= 400:
            return NoStats(follower_index, f"GET {follower_index}/_ccr/stats answered HTTP {status}: "
                                           f"{_text(body)[:200]}")
        found = {i.index: i for i in parse_index_ccr_stats(body).indices}
        index = found.get(follower_index)
        if index is None or not index.shards:
            # A paused follower has no shard-follow tasks: it vanishes from the stats; _ccr/info still knows it.
            if await self._paused(follower_index):
                return NoStats(follower_index, "paused (its _ccr/info status is paused)", paused=True)
            return NoStats(follower_index, "absent from _ccr/stats (unfollowed or not following)")
        fatal = "; ".join(index.fatal_errors()) or None
        return FollowerProgress(
            index=follower_index, status="active", leader_index=index.shards[0].leader_index or None,
            remote=index.shards[0].remote_cluster or None,
            shards={s.shard_id: ShardProgress(s.shard_id, s.follower_global_checkpoint, s.leader_global_checkpoint,
                                              s.leader_max_seq_no) for s in index.shards},
            read_exceptions=sum(len(s.read_exceptions) for s in index.shards), fatal=fatal)

    async def _paused(self, follower_index: str) -> bool:
        status, body = await self.call("GET", f"/{follower_index}/_ccr/info", ok=(400, 404))
        if status >= 400:
            return False
        return any(f.follower_index == follower_index and f.status == "paused"
                   for f in parse_follow_info(body).follower_indices)

    def is_active(self, p: FollowerProgress) -> bool:
        return bool(p.shards)


# The reason the OpenSearch plugin gives for a follower paused with its _pause API.
USER_PAUSED = "User initiated"



class OpenSearchReplication(CcrEngine):
    engine = OPENSEARCH
    base = "/_plugins/_replication"

    def __init__(self, http: RawHttp, cluster: str, *, timeout: float | None = None) -> None:
        super().__init__(http, cluster, timeout=timeout)

    async def probe(self) -> None:
        await self.call("GET", f"{self.base}/follower_stats")

    @staticmethod
    def _no_parameters(parameters: dict[str, Any], what: str) -> None:
        if parameters:
            raise CcrError(f"{what}: {', '.join(sorted(parameters))} are Elasticsearch follow parameters; the "
                           f"OpenSearch replication plugin takes plugins.replication.follower.* cluster settings "
                           f"instead (put them in a car's settings)")

    async def follow(self, follower_index: str, *, remote: str, leader_index: str,
                     parameters: dict[str, Any], settings: dict[str, Any] | None = None,
                     extra: dict[str, Any] | None = None) -> Any:
        self._no_parameters(parameters, f"follow {follower_index}")
        body: dict[str, Any] = {"leader_alias": remote, "leader_index": leader_index}
        if settings:
            body["settings"] = settings
        body.update(extra or {})  # e.g. use_roles, needed with the security plugin
        return (await self.call("PUT", f"{self.base}/{follower_index}/_start", body,
                                {"wait_for_restore": "true"}))[1]

    async def pause(self, follower_index: str) -> Any:
        return (await self.call("POST", f"{self.base}/{follower_index}/_pause", {}))[1]

    async def resume(self, follower_index: str, parameters: dict[str, Any]) -> Any:
        self._no_parameters(parameters, f"resume {follower_index}")
        return (await self.call("POST", f"{self.base}/{follower_index}/_resume", {}))[1]

    async def unfollow(self, follower_index: str) -> Any:
        return (await self.call("POST", f"{self.base}/{follower_index}/_stop", {}))[1]

    async def auto_follow(self, name: str, *, remote: str, patterns: list[str], follow_pattern: str,
                          parameters: dict[str, Any], extra: dict[str, Any] | None = None) -> Any:
        self._no_parameters(parameters, f"auto-follow {name}")
        if follow_pattern.replace(" ", "") != "{{leader_index}}":
            raise CcrError(f"auto-follow {name}: the OpenSearch replication plugin names followers like their "
                           f"leaders; follow_index_pattern {follow_pattern!r} must be '{{{{leader_index}}}}'")
        answers = []
        for i, pattern in enumerate(patterns):  # one rule per pattern: the plugin takes one pattern per rule
            rule = name if len(patterns) == 1 else f"{name}-{i}"
            body = {"leader_alias": remote, "name": rule, "pattern": pattern, **(extra or {})}
            answers.append((await self.call("POST", f"{self.base}/_autofollow", body))[1])
        return answers[0] if len(answers) == 1 else answers

    async def delete_auto_follow(self, name: str, *, remote: str) -> Any:
        return (await self.call("DELETE", f"{self.base}/_autofollow", {"leader_alias": remote, "name": name}))[1]

    async def stats(self) -> Any:
        return (await self.call("GET", f"{self.base}/follower_stats"))[1]

    async def follower_indices(self) -> list[str]:
        # follower_stats lists syncing followers only; a paused one still carries the plugin's index setting
        syncing = set(parse_follower_stats(await self.stats()).index_stats)
        _, body = await self.call("GET", f"/_all/_settings/{FOLLOWER_SETTING}", params={"flat_settings": "true"})
        return sorted(syncing | marked_followers(body))

    async def progress(self, follower_index: str) -> FollowerProgress | NoStats:
        _, body = await self.call("GET", f"{self.base}/{follower_index}/_status")
        st = parse_replication_status(body)
        if st.status == NOT_IN_PROGRESS:
            return NoStats(follower_index, "replication not in progress (stopped, never started or unknown index)")
        if st.status == "PAUSED":
            # The plugin pauses on its own too (with another reason); only the pause API's is sure to stay.
            return NoStats(follower_index, f"paused ({st.reason or 'no reason given'})",
                           paused=st.reason == USER_PAUSED)
        if st.status == "FAILED":
            return FollowerProgress(follower_index, st.status, fatal=st.reason or "replication failed")
        d = st.syncing_details
        if d is None:
            return NoStats(follower_index, f"status {st.status} without checkpoints yet")
        return FollowerProgress(index=follower_index, status=st.status, follower_total=d.follower_checkpoint,
                                leader_total=d.leader_checkpoint, leader_index=st.leader_index,
                                remote=st.leader_alias)

    def is_active(self, p: FollowerProgress) -> bool:
        return p.status == "SYNCING"


ENGINES: dict[str, type[CcrEngine]] = {ELASTICSEARCH: ElasticsearchCcr, OPENSEARCH: OpenSearchReplication}


def ccr_engine(engine: str, http: RawHttp, cluster: str, *, timeout: float | None = None) -> CcrEngine:
    try:
        return ENGINES[engine](http, cluster, timeout=timeout)
    except KeyError:
        raise CcrError(f"cluster {cluster}: unknown engine {engine!r} for CCR: use elasticsearch or opensearch") \
            from None


async def detect_engine(http: RawHttp) -> str:
    """elasticsearch or opensearch, from GET _nodes (Elasticsearch reports a build_flavor, OpenSearch none)."""
    status, body = await http.request("GET", "/_nodes/_all/none", params={"filter_path": "nodes.*.build_flavor,nodes.*.version"})
    nodes = (body or {}).get("nodes", {}) if isinstance(body, dict) and status < 400 else {}
    flavors = {n.get("build_flavor") for n in nodes.values()} if nodes else {"default"}
    return OPENSEARCH if flavors == {None} else ELASTICSEARCH


__all__ = [
    "FOLLOW_PARAMETERS",
    "NO_CCR",
    "PAUSED_ERROR",
    "CcrEngine",
    "CcrError",
    "ElasticsearchCcr",
    "FollowerPaused",
    "FollowerProgress",
    "NoCcrSupport",
    "NoStats",
    "OpenSearchReplication",
    "ShardProgress",
    "ccr_engine",
    "detect_engine",
    "exception_text",
    "is_no_handler",
]
