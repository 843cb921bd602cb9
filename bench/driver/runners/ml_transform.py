"""Rally's machine learning (anomaly detection jobs, datafeeds) and transform operations.

Clusters without these features (an OSS or integ-test build) answer with an error, which is counted like any
failed request. ``wait-for-transform`` stops the transform and polls until it has stopped (one request in bench,
weighing the documents the transform processed, in ``docs``); ``transform-stats`` checks an optional
``condition`` as ``index-stats`` does.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.driver.param_types import param_bool, param_float
from bench.driver.runners.core import Context, Result
from bench.driver.runners.support import Call, failed, need_dict, problem


async def _one(ctx: Context, p: dict[str, Any], method: str, path: str, *, body: Any = None,
               params: dict[str, Any] | None = None, ok_404: bool = False) -> Result:
    status, resp = await Call(ctx, p)(method, path, body=body, params={k: v for k, v in (params or {}).items()
                                                                       if v is not None})
    if status >= 400 and not (ok_404 and status == 404):
        return failed(status, resp)
    return Result()


def _force(p: dict[str, Any]) -> bool:
    return param_bool(p, "force", False)


async def create_ml_datafeed(ctx: Context, p: dict[str, Any]) -> Result:
    return await _one(ctx, p, "PUT", f"/_ml/datafeeds/{p['datafeed-id']}", body=p["body"])


async def delete_ml_datafeed(ctx: Context, p: dict[str, Any]) -> Result:
    return await _one(ctx, p, "DELETE", f"/_ml/datafeeds/{p['datafeed-id']}", params={"force": _force(p)},
                      ok_404=True)


async def start_ml_datafeed(ctx: Context, p: dict[str, Any]) -> Result:
    return await _one(ctx, p, "POST", f"/_ml/datafeeds/{p['datafeed-id']}/_start", body=p.get("body"),
                      params={"start": p.get("start"), "end": p.get("end"), "timeout": p.get("timeout")})


async def stop_ml_datafeed(ctx: Context, p: dict[str, Any]) -> Result:
    return await _one(ctx, p, "POST", f"/_ml/datafeeds/{p['datafeed-id']}/_stop",
                      params={"force": _force(p), "timeout": p.get("timeout")})


async def create_ml_job(ctx: Context, p: dict[str, Any]) -> Result:
    return await _one(ctx, p, "PUT", f"/_ml/anomaly_detectors/{p['job-id']}", body=p["body"])


async def delete_ml_job(ctx: Context, p: dict[str, Any]) -> Result:
    return await _one(ctx, p, "DELETE", f"/_ml/anomaly_detectors/{p['job-id']}", params={"force": _force(p)},
                      ok_404=True)


async def open_ml_job(ctx: Context, p: dict[str, Any]) -> Result:
    return await _one(ctx, p, "POST", f"/_ml/anomaly_detectors/{p['job-id']}/_open")


async def close_ml_job(ctx: Context, p: dict[str, Any]) -> Result:
    return await _one(ctx, p, "POST", f"/_ml/anomaly_detectors/{p['job-id']}/_close",
                      params={"force": _force(p), "timeout": p.get("timeout")})


async def create_transform(ctx: Context, p: dict[str, Any]) -> Result:
    return await _one(ctx, p, "PUT", f"/_transform/{p['transform-id']}", body=p["body"],
                      params={"defer_validation": param_bool(p, "defer-validation", False)})


async def start_transform(ctx: Context, p: dict[str, Any]) -> Result:
    return await _one(ctx, p, "POST", f"/_transform/{p['transform-id']}/_start", params={"timeout": p.get("timeout")})


async def delete_transform(ctx: Context, p: dict[str, Any]) -> Result:
    return await _one(ctx, p, "DELETE", f"/_transform/{p['transform-id']}", params={"force": _force(p)},
                      ok_404=True)


async def wait_for_transform(ctx: Context, p: dict[str, Any]) -> Result:
    call = Call(ctx, p)
    tid = p["transform-id"]
    params = {"force": _force(p), "wait_for_completion": "false",
              "wait_for_checkpoint": param_bool(p, "wait-for-checkpoint", True)}
    if p.get("timeout"):
        params["timeout"] = p["timeout"]
    status, resp = await call("POST", f"/_transform/{tid}/_stop", params=params)
    if status >= 400:
        return failed(status, resp)
    deadline = time.monotonic() + param_float(p, "transform-timeout", 3600.0)
    until_stopped = param_bool(p, "wait-for-completion", True)
    while True:
        status, resp = await call("GET", f"/_transform/{tid}/_stats", own_params=False)
        if status >= 400:
            return failed(status, resp)
        t = (resp.get("transforms") or [{}])[0]
        if t.get("state") == "failed":
            return problem("transform", f"transform {tid} failed: {t.get('reason', 'unknown')}")
        if t.get("state") == "stopped" or not until_stopped:
            return Result(units=int((t.get("stats") or {}).get("documents_processed", 0)), unit="docs")
        if time.monotonic() > deadline:
            return problem("transform", f"transform {tid} did not stop within transform-timeout")
        await asyncio.sleep(param_float(p, "poll-interval", 0.5))


def _path_get(doc: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(doc, dict):
            return None
        doc = doc.get(part)
    return doc


async def transform_stats(ctx: Context, p: dict[str, Any]) -> Result:
    status, resp = await Call(ctx, p)("GET", f"/_transform/{p['transform-id']}/_stats")
    if status >= 400:
        return failed(status, resp)
    cond = p.get("condition")
    if cond:
        stats = (resp.get("transforms") or [{}])[0]
        actual = _path_get(stats, cond["path"])
        if actual != cond["expected-value"]:
            return problem("condition", f"{cond['path']} is {actual}, expected {cond['expected-value']}",
                           status=status)
    return Result()


def check_ml_transform(name: str, op_type: str, params: dict[str, Any], *, track_file: str) -> None:
    need_dict(name, op_type, params, "body", track_file=track_file)
    need_dict(name, op_type, params, "condition", track_file=track_file)


RUNNERS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "create-ml-datafeed": (create_ml_datafeed, ("datafeed-id", "body")),
    "delete-ml-datafeed": (delete_ml_datafeed, ("datafeed-id",)),
    "start-ml-datafeed": (start_ml_datafeed, ("datafeed-id",)),
    "stop-ml-datafeed": (stop_ml_datafeed, ("datafeed-id",)),
    "create-ml-job": (create_ml_job, ("job-id", "body")),
    "delete-ml-job": (delete_ml_job, ("job-id",)),
    "open-ml-job": (open_ml_job, ("job-id",)),
    "close-ml-job": (close_ml_job, ("job-id",)),
    "create-transform": (create_transform, ("transform-id", "body")),
    "start-transform": (start_transform, ("transform-id",)),
    "wait-for-transform": (wait_for_transform, ("transform-id",)),
    "delete-transform": (delete_transform, ("transform-id",)),
    "transform-stats": (transform_stats, ("transform-id",)),
}
