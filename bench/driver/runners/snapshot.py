"""Rally's snapshot operations: repositories, snapshots, restore, and the waits for them.

``wait-for-snapshot-create`` weighs the snapshot's size in bytes (unit ``byte``), as Rally does; the other
operations weigh one op. A repository type the cluster does not know, or an ``fs`` location outside the nodes'
``path.repo``, fails with the cluster's message.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.driver.param_types import param_bool, param_float
from bench.driver.runners.core import Context, Result
from bench.driver.runners.support import Call, failed, need_dict, problem


def _deadline(p: dict[str, Any]) -> float:
    """bench's bound on Rally's unbounded waits (``retry-max-duration``, default 600 s)."""
    return time.monotonic() + param_float(p, "retry-max-duration", 600.0)


async def create_snapshot_repository(ctx: Context, p: dict[str, Any]) -> Result:
    status, resp = await Call(ctx, p)("PUT", f"/_snapshot/{p['repository']}", body=p["body"])
    return failed(status, resp) if status >= 400 else Result()


async def delete_snapshot_repository(ctx: Context, p: dict[str, Any]) -> Result:
    status, resp = await Call(ctx, p)("DELETE", f"/_snapshot/{p['repository']}")
    return failed(status, resp) if status >= 400 and status != 404 else Result()


async def create_snapshot(ctx: Context, p: dict[str, Any]) -> Result:
    params = {"wait_for_completion": param_bool(p, "wait-for-completion", False)}
    status, resp = await Call(ctx, p)("PUT", f"/_snapshot/{p['repository']}/{p['snapshot']}", body=p["body"],
                                      params=params)
    if status >= 400:
        return failed(status, resp)
    state = (resp.get("snapshot") or {}).get("state") if isinstance(resp, dict) else None
    if state in ("FAILED", "PARTIAL"):
        return problem("snapshot", f"snapshot {p['snapshot']} ended {state}", status=status)
    return Result()


async def wait_for_snapshot_create(ctx: Context, p: dict[str, Any]) -> Result:
    """Until the snapshot is no longer running and SUCCESS; weight = its total size in bytes."""
    call = Call(ctx, p)
    repo, snap = p["repository"], p["snapshot"]
    period = param_float(p, "completion-recheck-wait-period", 1.0)
    deadline = _deadline(p)
    while True:
        status, current = await call("GET", f"/_snapshot/{repo}/_current", params={"verbose": "false"},
                                     own_params=False)
        if status >= 400:
            return failed(status, current)
        running = [s.get("snapshot") for s in (current or {}).get("snapshots", [])]
        if snap not in running:
            status, resp = await call("GET", f"/_snapshot/{repo}/{snap}/_status",
                                      params={"ignore_unavailable": "true"}, own_params=False)
            if status >= 400:
                return failed(status, resp)
            snapshots = (resp or {}).get("snapshots") or []
            if snapshots:
                state = snapshots[0].get("state")
                if state == "FAILED":
                    return problem("snapshot", f"snapshot {snap} failed", status=status)
                if state == "SUCCESS":
                    size = int(snapshots[0]["stats"]["total"]["size_in_bytes"])
                    return Result(units=size, unit="byte")
        if time.monotonic() > deadline:
            return problem("snapshot", f"snapshot {snap} not done in time")
        await asyncio.sleep(period)


async def wait_for_current_snapshots_create(ctx: Context, p: dict[str, Any]) -> Result:
    """Until no snapshot of the repository is running."""
    call = Call(ctx, p)
    period = param_float(p, "completion-recheck-wait-period", 1.0)
    deadline = _deadline(p)
    params = {"verbose": "false", "index_names": "false"}  # index_names=false keeps the answer small (ES >= 8.3)
    while True:
        status, resp = await call("GET", f"/_snapshot/{p['repository']}/_current", params=params, own_params=False)
        if status == 400 and "index_names" in str(resp) and "index_names" in params:
            params = {"verbose": "false"}  # an engine without the parameter (older Elasticsearch, OpenSearch)
            continue
        if status >= 400:
            return failed(status, resp)
        if int((resp or {}).get("total", len((resp or {}).get("snapshots", [])))) == 0:
            return Result()
        if time.monotonic() > deadline:
            return problem("snapshot", f"snapshots of {p['repository']} still running")
        await asyncio.sleep(period)


async def restore_snapshot(ctx: Context, p: dict[str, Any]) -> Result:
    params = {"wait_for_completion": param_bool(p, "wait-for-completion", False)}
    status, resp = await Call(ctx, p)("POST", f"/_snapshot/{p['repository']}/{p['snapshot']}/_restore",
                                      body=p.get("body") or {}, params=params)
    return failed(status, resp) if status >= 400 else Result()


def check_snapshot(name: str, op_type: str, params: dict[str, Any], *, track_file: str) -> None:
    need_dict(name, op_type, params, "body", track_file=track_file)


RUNNERS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "create-snapshot-repository": (create_snapshot_repository, ("repository", "body")),
    "delete-snapshot-repository": (delete_snapshot_repository, ("repository",)),
    "create-snapshot": (create_snapshot, ("repository", "snapshot", "body")),
    "wait-for-snapshot-create": (wait_for_snapshot_create, ("repository", "snapshot")),
    "wait-for-current-snapshots-create": (wait_for_current_snapshots_create, ("repository",)),
    "restore-snapshot": (restore_snapshot, ("repository", "snapshot")),
}
