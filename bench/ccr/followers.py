"""Several followers of one leader: a challenge written for the clusters ``leader`` and ``follower`` runs on a race
whose followers are named otherwise (``follower-1`` … ``follower-N``, a topology's ``remote_clusters: [leader]``).

The race's follower clusters are those that have the leader as a remote cluster (``_remote/info`` names the alias
the challenge's CCR tasks use, ``leader`` by default: a topology's ``remote_clusters`` wires it before the schedule).
Every task of the challenge that names the cluster ``follower`` is then run once per follower cluster: its copies,
named ``<task>-<cluster>``, run side by side as one parallel step, so the followers start following together and
their catch-up waits all start when indexing ends (the catch-up of the set is the slowest copy's).

A race that has a cluster named ``follower`` is left as it is.
"""

from __future__ import annotations

from typing import Any

from bench.ccr.remote import remote_info
from bench.ccr.runners import CCR_OPERATION_TYPES, FOLLOWER, LEADER_ALIAS
from bench.http.client import ClusterTarget, RawHttp
from bench.track.model import Challenge, Parallel, Task


def follower_tasks(challenge: Challenge) -> list[Task]:
    """The tasks that name the cluster ``follower`` (a CCR operation without ``cluster`` runs there, too)."""
    return [t for t in challenge.tasks()
            if t.operation.params.get("cluster") == FOLLOWER
            or (t.operation.operation_type in CCR_OPERATION_TYPES and not t.operation.params.get("cluster"))]


def remote_aliases(challenge: Challenge) -> set[str]:
    """The remote-cluster aliases the challenge's CCR tasks follow from."""
    return {str(t.operation.params.get("remote-cluster") or LEADER_ALIAS) for t in challenge.tasks()
            if t.operation.operation_type in CCR_OPERATION_TYPES}


def _copies(task: Task, followers: list[str]) -> list[Task]:
    out = []
    for cluster in followers:
        copy = task.model_copy(deep=True, update={"name": f"{task.name}-{cluster}"})
        copy.operation.params["cluster"] = cluster
        out.append(copy)
    return out


def expand_for_followers(challenge: Challenge, followers: list[str]) -> None:
    """Run every task naming ``follower`` on each of ``followers`` instead (in place; see the module's doc)."""
    mine = {id(t) for t in follower_tasks(challenge)}
    schedule: list[Task | Parallel] = []
    for step in challenge.schedule:
        if isinstance(step, Parallel):
            tasks = [c for t in step.tasks for c in (_copies(t, followers) if id(t) in mine else [t])]
            schedule.append(step.model_copy(update={"tasks": tasks}))
        elif id(step) in mine:
            schedule.append(Parallel(tasks=_copies(step, followers)))
        else:
            schedule.append(step)
    challenge.schedule = schedule


async def _has_remote(target: ClusterTarget, aliases: set[str]) -> bool:
    async with RawHttp(target, connections=1) as http:
        info: dict[str, Any] = await remote_info(http, target.name)
    return any((info.get(a) or {}).get("seeds") or (info.get(a) or {}).get("proxy_address") for a in aliases)


async def race_followers(challenge: Challenge, targets: list[ClusterTarget]) -> list[str]:
    """The follower clusters of a race without a ``follower`` cluster whose challenge names one (else [])."""
    names = [t.name for t in targets]
    if FOLLOWER in names or not follower_tasks(challenge):
        return []
    aliases = remote_aliases(challenge) or {LEADER_ALIAS}
    return [t.name for t in targets if t.name not in aliases and await _has_remote(t, aliases)]
