"""What a race does for CCR around its schedule.

Before the schedule (``prepare_ccr_race``, the CCR race hook's prepare step once the clusters run): find the CCR
operations of the challenge and the clusters they name; check that those clusters are part of the race; make
the follower's remote cluster point at the leader and wait for ``_remote/info`` to say connected; start the
trial license on Elasticsearch clusters that need one; check that both clusters have CCR at all (a clear
"no CCR support" error instead of a failing schedule); apply the car variants (soft deletes off, follower
parameter sets); add the ccr-stats telemetry device when the user did not. Only then does the schedule start.

After the schedule (``CcrRace.doc_counts``): final document counts of every leader/follower pair, which the
hook (``bench.ccr.race_hook``) turns into the CCR section of the summary.

Car variants are car mixins whose ``variables`` bench reads here (they set no node setting, because index
settings are not allowed in elasticsearch.yml): ``index_soft_deletes: false`` (soft-deletes-off) and
``ccr_follow_parameters: {...}`` (follower parameter sets, Elasticsearch follow API parameters).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.console import Console

from bench.ccr.engine import CcrError, ccr_engine, detect_engine
from bench.ccr.es_privileges import check_pair
from bench.ccr.followers import expand_for_followers, race_followers
from bench.ccr.license import clusters_ccr_reaches, ensure_ccr_license
from bench.ccr.remote import ensure_remote
from bench.ccr.runners import CCR_OPERATION_TYPES, FOLLOWER, LEADER_ALIAS, follower_cluster
from bench.ccr.security import follow_task_params, secure_replication
from bench.http.client import DEFAULT_CLUSTER, ClusterTarget, RawHttp, check_cluster
from bench.provision.soft_deletes import soft_deletes_off_problem
from bench.track.model import Challenge, Task, Track
from bench.util.errors import ConfigError

if TYPE_CHECKING:
    from bench.provision.car import CarConfig
    from bench.race.options import RaceOptions

log = logging.getLogger(__name__)

SOFT_DELETES_TEMPLATE = "bench-car-soft-deletes-off"
CCR_STATS_INTERVAL = 5.0  # the study sampled lag every 5 s


@dataclass
class FollowSpec:
    task: str
    follower_cluster: str
    follower_index: str
    remote: str
    leader_cluster: str | None  # the race's cluster that is the leader (None: not part of the race)
    leader_index: str


@dataclass
class CcrPlan:
    tasks: list[Task] = field(default_factory=list)  # every CCR task
    follows: list[FollowSpec] = field(default_factory=list)
    # (follower cluster, remote alias) -> leader cluster of the race (or None)
    pairs: dict[tuple[str, str], str | None] = field(default_factory=dict)

    @property
    def followers(self) -> list[str]:
        return list(dict.fromkeys(f for f, _ in self.pairs))

    @property
    def leaders(self) -> list[str]:
        return list(dict.fromkeys(lead for lead in self.pairs.values() if lead))


def _default_cluster(names: list[str]) -> str:
    return DEFAULT_CLUSTER if DEFAULT_CLUSTER in names else names[0]


def plan_ccr(track: Track, challenge: Challenge, cluster_names: list[str]) -> CcrPlan | None:
    """The CCR operations of a challenge and the clusters they use; ConfigError when one is not in the race."""
    tasks = [t for t in challenge.tasks() if t.operation.operation_type in CCR_OPERATION_TYPES]
    if not tasks:
        return None
    default = _default_cluster(cluster_names)
    plan = CcrPlan(tasks=tasks)
    default_index = track.indices[0].name if len(track.indices) == 1 else None
    for t in tasks:
        p = t.operation.params
        follower = follower_cluster(cluster_names, default, p)
        if follower not in cluster_names:
            raise ConfigError(
                f"challenge {challenge.name}: task '{t.name}' ({t.operation.operation_type}) runs on cluster "
                f"{follower!r}, which is not part of this race (clusters: {', '.join(cluster_names)}); run it with "
                f"--topology=topologies/ccr-local.yml or --target-hosts=leader:HOST:PORT,follower:HOST:PORT")
        remote = str(p.get("remote-cluster") or LEADER_ALIAS)
        leader = str(p.get("leader-cluster") or remote)
        leader_cluster = leader if leader in cluster_names and leader != follower else None
        plan.pairs.setdefault((follower, remote), leader_cluster)
        if t.operation.operation_type in ("ccr-follow", "ccr-bootstrap"):
            leader_index = p.get("leader-index") or default_index
            if not leader_index:
                raise ConfigError(f"challenge {challenge.name}: task '{t.name}' ({t.operation.operation_type}) needs 'leader-index' "
                                  f"(the track has {len(track.indices)} indices)")
            plan.follows.append(FollowSpec(t.name, follower, str(p.get("index") or p.get("follower-index")
                                                                  or leader_index),
                                           remote, leader_cluster, str(leader_index)))
    # bulk and other tasks of a CCR challenge that name a cluster must name one of the race, too
    for t in challenge.tasks():
        c = t.operation.params.get("cluster")
        if c and c not in cluster_names:
            raise ConfigError(f"challenge {challenge.name}: task '{t.name}' names cluster {c!r}, which is not part "
                              f"of this race (clusters: {', '.join(cluster_names)})")
    return plan


# -- car variants ---------------------------------------------------------------------------------------------


def check_soft_deletes(cluster: str, engine: str, version: str, car_names: list[str],
                       plan: CcrPlan | None) -> None:
    """soft-deletes-off is a variant of the baseline only: newer engines reject it, CCR needs soft deletes."""
    label = ",".join(car_names)
    problem = soft_deletes_off_problem(engine, version)
    if problem is not None:
        raise ConfigError(f"car {label} (cluster {cluster}): {problem}; use the soft-deletes-off mixin only with "
                          f"Elasticsearch < 8 or OpenSearch < 2 (elsewhere soft deletes on is the baseline)")
    if plan is not None and cluster in plan.leaders:
        raise ConfigError(f"car {label} (cluster {cluster}): a CCR leader needs soft deletes; drop soft-deletes-off "
                          f"from the leader's car (it is meant for the baseline challenge)")


async def _apply_soft_deletes_off(http: RawHttp, cluster: str) -> None:
    # Index settings cannot go into the node config: a lowest-order legacy template gives every new index the
    # setting unless a track's own template says otherwise.
    body = {"index_patterns": ["*"], "order": -1000, "settings": {"index.soft_deletes.enabled": False}}
    status, answer = await http.request("PUT", f"/_template/{SOFT_DELETES_TEMPLATE}", body=body)
    if status >= 400:
        raise ConfigError(f"cluster {cluster}: could not install the soft-deletes-off index template: HTTP {status} "
                          f"{str(answer)[:200]}")


def apply_follow_parameter_sets(plan: CcrPlan, cars: dict[str, Any], engines: dict[str, str]) -> None:
    """Car variable ccr_follow_parameters -> defaults of the follower cluster's follow operations (the track's
    own parameters win)."""
    for t in plan.tasks:
        if t.operation.operation_type not in ("ccr-follow", "ccr-resume", "ccr-auto-follow"):
            continue
        cluster = follower_cluster(list(engines), _default_cluster(list(engines)), t.operation.params)
        car = cars.get(cluster)
        if car is None:
            continue
        sets = dict(car.variables.get("ccr_follow_parameters") or {})
        if not sets:
            continue
        if engines.get(cluster) != "elasticsearch":
            raise ConfigError(f"car {','.join(car.names)} (cluster {cluster}): ccr_follow_parameters are "
                              f"Elasticsearch follow parameters; for OpenSearch set plugins.replication.follower.* "
                              f"in the car's settings")
        merged = {**sets, **dict(t.operation.params.get("follow-parameters") or {})}
        t.operation.params["follow-parameters"] = merged


# -- telemetry ---------------------------------------------------------------------------------------------


def with_ccr_stats(opts: RaceOptions, plan: CcrPlan) -> RaceOptions:
    """Add the ccr-stats device (every 5 s, on the follower clusters) unless the user chose telemetry for it."""
    if "ccr-stats" in opts.telemetry or opts.telemetry_profile:
        return opts
    params = dict(opts.telemetry_params)
    params.setdefault("ccr-stats-sample-interval", CCR_STATS_INTERVAL)
    # No ccr-stats-indices: the followers do not exist before the schedule's follow task; the device flags a
    # follower that vanishes after it was seen.
    params.setdefault("ccr-stats-clusters", plan.followers)
    return opts.model_copy(update={"telemetry": [*opts.telemetry, "ccr-stats"], "telemetry_params": params})


# -- the race ----------------------------------------------------------------------------------------------


@dataclass
class CcrRace:
    """What the race keeps between prepare and finish."""

    plan: CcrPlan
    targets: dict[str, ClusterTarget]
    engines: dict[str, str]

    async def doc_counts(self) -> dict[tuple[str, str], int | None]:
        out: dict[tuple[str, str], int | None] = {}
        wanted = {(f.follower_cluster, f.follower_index) for f in self.plan.follows}
        wanted |= {(f.leader_cluster, f.leader_index) for f in self.plan.follows if f.leader_cluster}
        for cluster, index in sorted(wanted):
            out[(cluster, index)] = await doc_count(self.targets[cluster], index)
        return out


async def doc_count(target: ClusterTarget, index: str) -> int | None:
    """Documents in an index after a refresh (None when it cannot be read)."""
    try:
        async with RawHttp(target, connections=1) as http:
            await http.request("POST", f"/{index}/_refresh")
            status, body = await http.request("GET", f"/{index}/_count")
    except Exception as e:  # noqa: BLE001 - a count is part of the report, never a reason to fail the race
        log.warning("counting %s on %s failed: %s", index, target.name, e)
        return None
    if status >= 400 or not isinstance(body, dict) or "count" not in body:
        log.warning("GET %s/_count on %s answered %s", index, target.name, status)
        return None
    return int(body["count"])


async def _secure_pair(plan: CcrPlan, names: list[str], engine: str, follower: str, alias: str, leader: str | None,
                       https: dict[str, RawHttp]) -> str | None:
    """Security on a follower/leader pair: OpenSearch's replication roles and use_roles, Elasticsearch's documented
    CCR privileges; a line saying what was done, None with security off."""
    if engine == "opensearch":
        tasks = follow_task_params(plan.tasks, lambda p: follower_cluster(names, _default_cluster(names), p), follower)
        return await secure_replication(follower, leader, https, tasks)
    indices = [(f.follower_index, f.leader_index) for f in plan.follows
               if f.follower_cluster == follower and f.remote == alias]
    return await check_pair(follower, leader, https, indices)


async def _prepare(track: Track, challenge: Challenge, targets: list[ClusterTarget], cars: dict[str, Any],
                   console: Console) -> tuple[CcrPlan | None, dict[str, str]]:
    names = [t.name for t in targets]
    followers = await race_followers(challenge, targets)
    if followers:
        expand_for_followers(challenge, followers)
        console.print(f"Followers of the leader: {', '.join(followers)} (the challenge's tasks on cluster "
                      f"'follower' run on each)", highlight=False)
    plan = plan_ccr(track, challenge, names)
    soft_off = {c: car for c, car in cars.items() if car.variables.get("index_soft_deletes") is False}
    if plan is None and not soft_off:
        return None, {}
    by_name = {t.name: t for t in targets}
    facts = {n: await check_cluster(by_name[n]) for n in names}
    engines = {n: str(f["engine"]) for n, f in facts.items()}
    https = {t.name: RawHttp(t, connections=2) for t in targets}
    for h in https.values():
        await h.__aenter__()
    try:
        for cluster, car in soft_off.items():
            if cluster in facts:
                check_soft_deletes(cluster, engines[cluster], str(facts[cluster]["version"]), car.names, plan)
                await _apply_soft_deletes_off(https[cluster], cluster)
                console.print(f"Cluster [cyan]{cluster}[/cyan]: new indices get index.soft_deletes.enabled: false "
                              f"(car {'+'.join(car.names)})", highlight=False)
        if plan is None:
            return None, engines
        licensed: set[str] = set()
        for (follower, alias), leader in plan.pairs.items():
            entry = await ensure_remote(https[follower], follower, alias, https.get(leader) if leader else None,
                                        leader)
            console.print(f"Cluster [cyan]{follower}[/cyan]: remote cluster [cyan]{alias}[/cyan] connected "
                          f"(seeds {', '.join(entry.get('seeds') or [str(entry.get('proxy_address'))])})",
                          highlight=False)
            line = await _secure_pair(plan, names, engines[follower], follower, alias, leader, https)
            if line:
                console.print(f"Cluster [cyan]{follower}[/cyan]: {line}", highlight=False)
            for cluster in [c for c in (leader, follower) if c and c not in licensed]:
                if engines[cluster] == "elasticsearch":
                    lic = await ensure_ccr_license(https[cluster], cluster)
                    console.print(f"Cluster [cyan]{cluster}[/cyan]: {lic.line()}", highlight=False)
                licensed.add(cluster)
            for cluster in [c for c in (follower, leader) if c]:
                await ccr_engine(engines[cluster], https[cluster], cluster).probe()
        apply_follow_parameter_sets(plan, cars, engines)
        for t in plan.tasks:
            cluster = follower_cluster(names, _default_cluster(names), t.operation.params)
            t.operation.params["_engine"] = engines[cluster]
    finally:
        for h in https.values():
            await h.__aexit__(None, None, None)
    return plan, engines


async def _license_without_tasks(opts: RaceOptions, targets: list[ClusterTarget], cars: dict[str, Any],
                                  console: Console) -> None:
    """A race without CCR tasks that still uses CCR (ccr-stats, a wired CCR topology): the licence on the
    Elasticsearch clusters it reaches, then, where ccr-stats samples, CCR itself (one line when it is missing)."""
    need, sampled = await clusters_ccr_reaches(opts, targets, set(cars))
    by_name = {t.name: t for t in targets}
    for name in need:
        engine = str((await check_cluster(by_name[name]))["engine"])
        async with RawHttp(by_name[name], connections=1) as http:
            if engine == "elasticsearch":
                lic = await ensure_ccr_license(http, name)
                console.print(f"Cluster [cyan]{name}[/cyan]: {lic.line()}", highlight=False)
            if name in sampled:
                await ccr_engine(engine, http, name).probe()


def prepare_ccr_race(opts: RaceOptions, cars: dict[str, CarConfig], track: Track, challenge: Challenge,
                     targets: list[ClusterTarget], console: Console) -> tuple[RaceOptions, CcrRace | None]:
    """Run before the schedule with the cars of the clusters bench started; returns the (possibly
    telemetry-extended) options and the CCR state, or None when the challenge has no CCR operation. Raises a
    BenchError (one line) when CCR cannot work."""
    if not any(t.operation.operation_type in CCR_OPERATION_TYPES for t in challenge.tasks()):
        asyncio.run(_license_without_tasks(opts, targets, cars, console))
        if not any(c.variables.get("index_soft_deletes") is False for c in cars.values()):
            return opts, None
    plan, engines = asyncio.run(_prepare(track, challenge, targets, cars, console))
    if plan is None:
        return opts, None
    return with_ccr_stats(opts, plan), CcrRace(plan, {t.name: t for t in targets}, engines)


__all__ = [
    "FOLLOWER",
    "CcrError",
    "CcrPlan",
    "CcrRace",
    "FollowSpec",
    "check_soft_deletes",
    "detect_engine",
    "doc_count",
    "plan_ccr",
    "prepare_ccr_race",
    "with_ccr_stats",
]
