"""The replication plugin's security model, set up before a CCR schedule on OpenSearch clusters with security on.

With the security plugin, replication runs with the roles the start request names in ``use_roles``
(``leader_cluster_role``, ``follower_cluster_role``) and the user who starts it needs the replication permissions
on both sides. bench maps the race user to the plugin's built-in roles (``cross_cluster_replication_leader_full_access``
on the leader, ``cross_cluster_replication_follower_full_access`` on the follower: the security plugin's documented
roles) and passes them as ``use_roles`` to every ccr-follow / ccr-auto-follow task that does not set ``use-roles``
itself. A track that sets ``use-roles`` owns its security set-up: bench then only checks that the race user holds
the roles it names.

Security must be on for both clusters or off for both (the plugin's requirement): a mixed pair is refused."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from bench.http.client import RawHttp
from bench.util import redact
from bench.util.errors import ConfigError

log = logging.getLogger(__name__)

LEADER_ROLE = "cross_cluster_replication_leader_full_access"
FOLLOWER_ROLE = "cross_cluster_replication_follower_full_access"
USE_ROLES = "use-roles"
_ACCOUNT = "/_plugins/_security/api/account"
_MAPPING = "/_plugins/_security/api/rolesmapping/{role}"
_FOLLOW_TYPES = ("ccr-follow", "ccr-auto-follow", "ccr-bootstrap")  # the tasks that start replication
_HOW = "add the security car mixin to both clusters (or security: true in the topology)"


@dataclass(frozen=True)
class Account:
    """Who the race is on one cluster, as the security plugin sees it."""

    cluster: str
    user: str
    roles: frozenset[str]


def _short(body: Any) -> str:
    return redact.redact_text(" ".join((body if isinstance(body, str) else json.dumps(body)).split())[:200])


async def account(http: RawHttp, cluster: str) -> Account | None:
    """The race user on ``cluster`` when the security plugin is on there; None when it is absent or disabled."""
    status, body = await http.request("GET", _ACCOUNT)
    if status == 200 and isinstance(body, dict) and body.get("user_name"):
        return Account(cluster, str(body["user_name"]), frozenset(str(r) for r in body.get("roles") or []))
    if status == 401:
        raise ConfigError(f"cluster {cluster}: the security plugin rejects the race user (HTTP 401); give the user "
                          f"and password with --client-options=basic_auth_user:NAME,basic_auth_password:SECRET")
    return None


def use_roles() -> dict[str, str]:
    return {"leader_cluster_role": LEADER_ROLE, "follower_cluster_role": FOLLOWER_ROLE}


async def ensure_role(http: RawHttp, who: Account, role: str, side: str) -> None:
    """Map the race user to ``role`` on ``who.cluster`` (keeping the mapping's other users and backend roles)."""
    if role in who.roles:
        return
    path = _MAPPING.format(role=role)
    status, body = await http.request("GET", path)
    current = body.get(role, {}) if status == 200 and isinstance(body, dict) else {}
    mapping = {k: list(current.get(k) or []) for k in ("users", "backend_roles", "hosts")}
    if who.user in mapping["users"]:
        return
    mapping["users"].append(who.user)
    status, body = await http.request("PUT", path, body=mapping)
    if status >= 400:
        raise ConfigError(
            f"cluster {who.cluster} ({side}): user {who.user} lacks the replication role {role} and may not map it "
            f"(PUT {path} answered HTTP {status} {_short(body)}); map it as an admin (PUT {path} "
            f"{{\"users\": [\"{who.user}\"]}}) or race as a user with all_access")
    log.info("cluster %s: user %s mapped to role %s", who.cluster, who.user, role)


def _check_named(who: Account, role: str, side: str) -> None:
    # the plugin refuses use_roles naming a role the user is not mapped to, all_access or not
    if role not in who.roles:
        raise ConfigError(f"cluster {who.cluster} ({side}): user {who.user} does not hold role {role}, which the "
                          f"track's use-roles names; map it (PUT {_MAPPING.format(role=role)} {{\"users\": "
                          f"[\"{who.user}\"]}}) or leave use-roles out and bench maps the replication roles itself")


async def secure_replication(follower: str, leader: str | None, https: dict[str, RawHttp],
                             tasks: list[dict[str, Any]]) -> str | None:
    """Set up the replication roles for one follower/leader pair and give ``tasks`` (the follow operations'
    params on this follower) their ``use-roles``; returns a line saying what was done, None without security."""
    on_follower = await account(https[follower], follower)
    on_leader = await account(https[leader], leader) if leader else None
    if leader and (on_follower is None) != (on_leader is None):
        on, off = (follower, leader) if on_follower else (leader, follower)
        raise ConfigError(f"security is on for cluster {on} but off for cluster {off}: the replication plugin needs "
                          f"it on both or off on both; {_HOW}")
    if on_follower is None:
        return None
    named = [t[USE_ROLES] for t in tasks if t.get(USE_ROLES)]
    if named:
        for roles in named:
            _check_named(on_follower, str(roles.get("follower_cluster_role")), "follower")
            if on_leader:
                _check_named(on_leader, str(roles.get("leader_cluster_role")), "leader")
        return f"security on: the track's use-roles are held by user {on_follower.user}"
    await ensure_role(https[follower], on_follower, FOLLOWER_ROLE, "follower")
    if on_leader is not None:
        await ensure_role(https[leader or ""], on_leader, LEADER_ROLE, "leader")
    for t in tasks:
        t[USE_ROLES] = use_roles()
    return (f"security on: user {on_follower.user} mapped to {FOLLOWER_ROLE} (follower)"
            + (f" and {LEADER_ROLE} (leader)" if on_leader else "") + "; follow requests use these roles")


def follow_task_params(tasks: list[Any], cluster_of: Any, follower: str) -> list[dict[str, Any]]:
    """The params of the follow operations (ccr-follow, ccr-auto-follow) that run on ``follower``."""
    return [t.operation.params for t in tasks
            if t.operation.operation_type in _FOLLOW_TYPES and cluster_of(t.operation.params) == follower]
