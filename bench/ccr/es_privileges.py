"""Elasticsearch CCR with security on: the privileges Elastic documents for the user who replicates
("Configure privileges for cross-cluster replication"): on the leader (the remote cluster) the cluster privilege
``read_ccr`` and ``monitor``, ``read`` on the leader index; on the follower ``manage_ccr`` and ``monitor``, ``read``,
``write``, ``manage_follow_index`` on the follower index.

Before a CCR schedule bench asks each secured cluster whether the race user holds them
(``_security/user/_has_privileges``) and stops with one line naming what is missing; ``ccr_roles`` gives the
documented roles (as ``roles.yml`` entries or ``_security/role`` bodies) for the user to be given."""

from __future__ import annotations

from typing import Any, Literal

from bench.http.client import RawHttp
from bench.util.errors import ClusterError, ConfigError

Side = Literal["leader", "follower"]
PRIVILEGES: dict[Side, tuple[list[str], list[str]]] = {
    "leader": (["read_ccr"], ["monitor", "read"]),
    "follower": (["manage_ccr"], ["monitor", "read", "write", "manage_follow_index"]),
}
ROLE_NAMES: dict[Side, str] = {"leader": "bench_ccr_leader", "follower": "bench_ccr_follower"}


def ccr_role(side: Side, indices: list[str]) -> dict[str, Any]:
    """The documented role of one side for ``indices`` (a ``_security/role`` body, also a ``roles.yml`` entry)."""
    cluster, index = PRIVILEGES[side]
    return {"cluster": list(cluster), "indices": [{"names": list(indices), "privileges": list(index)}]}


def ccr_roles(leader_indices: list[str], follower_indices: list[str]) -> dict[str, dict[str, Any]]:
    return {ROLE_NAMES["leader"]: ccr_role("leader", leader_indices),
            ROLE_NAMES["follower"]: ccr_role("follower", follower_indices)}


def missing_privileges(answer: dict[str, Any]) -> list[str]:
    """What a ``_has_privileges`` answer says is missing: ``read_ccr``, ``idx:write``, ..."""
    if answer.get("has_all_requested") is True:
        return []
    out = [name for name, held in (answer.get("cluster") or {}).items() if not held]
    for index, privileges in (answer.get("index") or {}).items():
        out += [f"{index}:{name}" for name, held in (privileges or {}).items() if not held]
    return out


async def secured(http: RawHttp) -> str | None:
    """The race user's name when the cluster has security on (``_authenticate`` answers), else None."""
    status, body = await http.request("GET", "/_security/_authenticate")
    if status == 200 and isinstance(body, dict) and body.get("username"):
        return str(body["username"])
    return None


async def check_ccr_privileges(http: RawHttp, cluster: str, side: Side, index: str) -> None:
    """Raise ConfigError (one line) when the race user lacks the documented privileges for ``side`` on ``index``."""
    cluster_privileges, index_privileges = PRIVILEGES[side]
    body = {"cluster": cluster_privileges, "index": [{"names": [index], "privileges": index_privileges}]}
    status, answer = await http.request("POST", "/_security/user/_has_privileges", body=body)
    if status >= 400 or not isinstance(answer, dict):
        raise ClusterError(f"cluster {cluster}: POST _security/user/_has_privileges answered HTTP {status}")
    missing = missing_privileges(answer)
    if missing:
        role = ROLE_NAMES[side]
        raise ConfigError(f"cluster {cluster} ({side}): user {answer.get('username', '?')} lacks the CCR privileges "
                          f"{', '.join(missing)}; give it a role like {role} ({ccr_role(side, [index])}) or race as "
                          f"a superuser")


async def check_pair(follower: str, leader: str | None, https: dict[str, RawHttp],
                     indices: list[tuple[str, str]]) -> str | None:
    """Check one follower/leader pair for its (follower index, leader index) pairs; a line saying what was checked,
    None when the follower has security off."""
    user = await secured(https[follower])
    if user is None:
        return None
    for follower_index, leader_index in indices:
        await check_ccr_privileges(https[follower], follower, "follower", follower_index)
        if leader and await secured(https[leader]):
            await check_ccr_privileges(https[leader], leader, "leader", leader_index)
    return f"security on: user {user} holds the CCR privileges Elastic documents on both sides"
