"""Rally's administrative operations: templates (legacy, composable, component), data streams, ingest pipelines,
ILM policies, shrink, downsample, recovery and node stats.

Template and data stream operations that name nothing themselves act on what the track declares
(``templates``, ``composable-templates``, ``component-templates``, ``data-streams``), as Rally's do. Each returns
Rally's weight (how many objects it created or deleted) in ``ops``, or ``byte`` for wait-for-recovery. An answer the
cluster refuses (e.g. a pipeline whose processor the cluster lacks) is a failed request with the cluster's message.
"""

from __future__ import annotations

import asyncio
import copy
import os
import random
import time
from collections.abc import Sequence
from typing import Any

from bench.driver.param_types import param_bool, param_float
from bench.driver.runners.core import Context, Result
from bench.driver.runners.support import Call, failed, names, need_dict, problem
from bench.driver.runners.track_defs import TemplateDef
from bench.util.errors import TrackError

# ------------------------------------------------------------------ templates


def _merge(into: dict[str, Any], extra: dict[str, Any]) -> None:
    for k, v in extra.items():
        if isinstance(into.get(k), dict) and isinstance(v, dict):
            _merge(into[k], v)
        else:
            into[k] = v


def _to_create(p: dict[str, Any], declared: tuple[TemplateDef, ...], op: str, *,
               settings_path: tuple[str, ...]) -> list[tuple[str, dict[str, Any]]]:
    """Rally: ``templates`` (what Rally's template parameter sources hand the runner: (name, body) pairs) create
    those; ``template`` + ``body`` create that one; else the track's declared ones (only ``template`` if given),
    with ``settings`` merged into each body."""
    if "templates" in p:
        return [(str(name), body) for name, body in p["templates"]]
    if "template" in p and "body" in p:
        return [(str(p["template"]), p["body"])]
    wanted = p.get("template")
    out = []
    for t in declared:
        if wanted and t.name != wanted:
            continue
        body = t.fresh_body()
        if p.get("settings"):
            node = body
            for key in settings_path:
                node = node.setdefault(key, {})
            _merge(node, dict(p["settings"]))
        out.append((t.name, body))
    if wanted and not out:
        raise ValueError(f"{op}: unknown template '{wanted}'; the track declares "
                         f"{', '.join(t.name for t in declared) or 'none'}")
    if not out:
        raise ValueError(f"{op}: set 'template' and 'body', or declare the templates in the track")
    return out


async def _put_all(call: Call, path: str, templates: list[tuple[str, dict[str, Any]]]) -> Result:
    for name, body in templates:
        status, resp = await call("PUT", f"{path}/{name}", body=body)
        if status >= 400:
            return failed(status, resp)
    return Result(units=len(templates))


async def create_index_template(ctx: Context, p: dict[str, Any]) -> Result:
    declared = ctx.definitions.templates
    if declared and "templates" not in p:  # Rally's legacy templates: the declared ones win over template + body
        p = {k: v for k, v in p.items() if k != "body"}
    return await _put_all(Call(ctx, p), "/_template",
                          _to_create(p, declared, "create-index-template", settings_path=("settings",)))


async def create_composable_template(ctx: Context, p: dict[str, Any]) -> Result:
    return await _put_all(Call(ctx, p), "/_index_template",
                          _to_create(p, ctx.definitions.composable_templates, "create-composable-template",
                                     settings_path=("template", "settings")))


async def create_component_template(ctx: Context, p: dict[str, Any]) -> Result:
    return await _put_all(Call(ctx, p), "/_component_template",
                          _to_create(p, ctx.definitions.component_templates, "create-component-template",
                                     settings_path=("template", "settings")))


def _to_delete(p: dict[str, Any], declared: tuple[TemplateDef, ...], op: str) -> list[tuple[str, bool, str | None]]:
    if declared:
        wanted = p.get("template")
        return [(t.name, t.delete_matching_indices, t.index_pattern) for t in declared if not wanted or t.name == wanted]
    if "template" not in p:
        raise ValueError(f"{op}: set 'template', or declare the templates in the track")
    matching = param_bool(p, "delete-matching-indices", False)
    if matching and "index-pattern" not in p:
        raise ValueError(f"{op}: 'index-pattern' is needed with delete-matching-indices")
    return [(str(p["template"]), matching, p.get("index-pattern") if matching else None)]


async def _exists(call: Call, path: str) -> bool:
    status, _ = await call("HEAD", path, own_params=False)
    return status == 200


async def _delete_templates(call: Call, path: str, templates: Sequence[tuple[str, bool, str | None]],
                            only_if_exists: bool) -> Result:
    """Rally's order: each template, then the indices matching its pattern (destructive_requires_name lifted for
    them and put back after); every request counts as one op."""
    ops = 0
    prior: Any = None
    lifted = False
    try:
        for name, delete_matching, pattern in templates:
            if not only_if_exists or await _exists(call, f"{path}/{name}"):
                status, resp = await call("DELETE", f"{path}/{name}")
                if status >= 400 and not (status == 404 and not only_if_exists):
                    return failed(status, resp)
                ops += 1
            if delete_matching and pattern:
                if not lifted:
                    prior = await _destructive_requires_name(call, False)
                    lifted = True
                    ops += 1
                status, resp = await call("DELETE", f"/{pattern}", own_params=False)
                if status >= 400 and status != 404:
                    return failed(status, resp)
                ops += 1
    finally:
        if lifted:
            await _destructive_requires_name(call, prior)
            ops += 1
    return Result(units=ops)


async def _destructive_requires_name(call: Call, value: Any) -> Any:
    """Set the transient setting, returning its prior transient value (None: unset)."""
    _, current = await call("GET", "/_cluster/settings", params={"flat_settings": "true"}, own_params=False)
    prior = (current or {}).get("transient", {}).get("action.destructive_requires_name") if isinstance(current,
                                                                                                       dict) else None
    await call("PUT", "/_cluster/settings", body={"transient": {"action.destructive_requires_name": value}},
               own_params=False)
    return prior


async def delete_index_template(ctx: Context, p: dict[str, Any]) -> Result:
    # Rally's legacy delete checks existence only when asked (only-if-exists defaults to false here).
    return await _delete_templates(Call(ctx, p), "/_template",
                                   _to_delete(p, ctx.definitions.templates, "delete-index-template"),
                                   param_bool(p, "only-if-exists", False))


async def delete_composable_template(ctx: Context, p: dict[str, Any]) -> Result:
    return await _delete_templates(Call(ctx, p), "/_index_template",
                                   _to_delete(p, ctx.definitions.composable_templates, "delete-composable-template"),
                                   param_bool(p, "only-if-exists", True))


async def delete_component_template(ctx: Context, p: dict[str, Any]) -> Result:
    declared = ctx.definitions.component_templates
    if declared:
        wanted = p.get("template")
        templates = [(t.name, False, None) for t in declared if not wanted or t.name == wanted]
    elif "template" in p:
        templates = [(str(p["template"]), False, None)]
    else:
        raise ValueError("delete-component-template: set 'template', or declare component templates in the track")
    return await _delete_templates(Call(ctx, p), "/_component_template", templates,
                                   param_bool(p, "only-if-exists", True))


# ------------------------------------------------------------------ data streams


async def create_data_stream(ctx: Context, p: dict[str, Any]) -> Result:
    declared = ctx.definitions.data_streams
    wanted = names(p.get("data-stream"))
    if declared:
        streams = [d for d in declared if not wanted or d in wanted]
    elif wanted:
        streams = wanted
    else:
        raise ValueError("create-data-stream: set 'data-stream', or declare data-streams in the track")
    call = Call(ctx, p)
    for ds in streams:
        status, resp = await call("PUT", f"/_data_stream/{ds}")
        if status >= 400:
            return failed(status, resp)
    return Result(units=len(streams))


async def delete_data_stream(ctx: Context, p: dict[str, Any]) -> Result:
    streams = names(p.get("data-stream")) or list(ctx.definitions.data_streams)
    if not streams:
        raise ValueError("delete-data-stream: set 'data-stream', or declare data-streams in the track")
    only_if_exists = param_bool(p, "only-if-exists", True)
    call = Call(ctx, p)
    ops = 0
    for ds in streams:
        if only_if_exists and not await _exists(call, f"/{ds}"):
            continue
        status, resp = await call("DELETE", f"/_data_stream/{ds}")
        if status >= 400 and not (status == 404 and not only_if_exists):
            return failed(status, resp)
        ops += 1
    return Result(units=ops)


# ------------------------------------------------------------------ pipelines, ILM


async def put_pipeline(ctx: Context, p: dict[str, Any]) -> Result:
    params = {k: p[f] for k, f in (("master_timeout", "master-timeout"), ("timeout", "timeout")) if p.get(f)}
    status, resp = await Call(ctx, p)("PUT", f"/_ingest/pipeline/{p['id']}", body=p["body"], params=params)
    return failed(status, resp) if status >= 400 else Result()


async def delete_pipeline(ctx: Context, p: dict[str, Any]) -> Result:
    """OSB's delete-pipeline: a pipeline that is not there is fine (404 ignored, as OSB ignores NotFoundError)."""
    params = {k: p[f] for k, f in (("master_timeout", "master-timeout"), ("timeout", "timeout")) if p.get(f)}
    status, resp = await Call(ctx, p)("DELETE", f"/_ingest/pipeline/{p['id']}", params=params)
    return failed(status, resp) if status >= 400 and status != 404 else Result()


async def create_search_pipeline(ctx: Context, p: dict[str, Any]) -> Result:
    """OSB's create-search-pipeline: PUT _search/pipeline/<id> (OpenSearch 2.9+)."""
    status, resp = await Call(ctx, p)("PUT", f"/_search/pipeline/{p['id']}", body=p["body"])
    return failed(status, resp) if status >= 400 else Result()


async def create_ilm_policy(ctx: Context, p: dict[str, Any]) -> Result:
    status, resp = await Call(ctx, p)("PUT", f"/_ilm/policy/{p['policy-name']}", body={"policy": p["body"]["policy"]})
    return failed(status, resp) if status >= 400 else Result()


async def delete_ilm_policy(ctx: Context, p: dict[str, Any]) -> Result:
    status, resp = await Call(ctx, p)("DELETE", f"/_ilm/policy/{p['policy-name']}")
    return failed(status, resp) if status >= 400 and status != 404 else Result()


# ------------------------------------------------------------------ shrink, downsample, recovery, node stats


async def _wait_no_relocation(call: Call, index: str, deadline: float) -> str | None:
    """None once ``index`` is green with no shard relocating (Rally's wait), else why not by the deadline."""
    await asyncio.sleep(3)  # Rally waits a little before the first check too
    while True:
        status, resp = await call("GET", f"/_cluster/health/{index}", own_params=False,
                                  params={"wait_for_no_relocating_shards": "true", "wait_for_status": "green"})
        if status < 400 and isinstance(resp, dict) and not resp.get("timed_out") and resp.get("status") == "green":
            return None
        if time.monotonic() > deadline:
            got = resp.get("status") if isinstance(resp, dict) else status
            return f"index {index} is not green with no relocating shards (health: {got})"
        await asyncio.sleep(0.5)


def wait_deadline(p: dict[str, Any]) -> float:
    """bench's bound on Rally's unbounded waits, so a cluster that never gets there cannot hang a race."""
    return time.monotonic() + param_float(p, "retry-max-duration", 600.0)


async def shrink_index(ctx: Context, p: dict[str, Any]) -> Result:
    """Rally's shrink: every index matching ``source-index`` is moved to one node, write-blocked and shrunk into
    ``target-index`` (+ the part of its name after the sources' common prefix), waiting for each."""
    call = Call(ctx, p)
    status, got = await call("GET", f"/{p['source-index']}", own_params=False)
    if status >= 400:
        return failed(status, got)
    sources = sorted(got)
    stem = os.path.commonprefix(sources)
    if p.get("shrink-node"):
        nodes = [str(p["shrink-node"])]
    else:
        status, info = await call("GET", "/_nodes", own_params=False)
        if status >= 400:
            return failed(status, info)
        nodes = [n["name"] for n in info["nodes"].values() if "data" in n.get("roles", [])]
        if not nodes:
            return problem("shrink", "no data node to shrink on: set shrink-node")
    deadline = wait_deadline(p)
    for source in sources:
        node = random.choice(nodes)
        status, resp = await call("PUT", f"/{source}/_settings", own_params=False, params={"preserve_existing": "true"},
                                  body={"settings": {"index.routing.allocation.require._name": node,
                                                     "index.blocks.write": "true"}})
        if status >= 400:
            return failed(status, resp)
        if why := await _wait_no_relocation(call, source, deadline):
            return problem("shrink", f"shrink-index: {why}")
        body = copy.deepcopy(p["target-body"])
        body.setdefault("settings", {}).update({"index.routing.allocation.require._name": None,
                                                "index.blocks.write": None})
        suffix = source.removeprefix(stem)
        target = f"{p['target-index']}{suffix}"
        status, resp = await call("POST", f"/{source}/_shrink/{target}", body=body)
        if status >= 400:
            return failed(status, resp)
        if why := await _wait_no_relocation(call, target, deadline):
            return problem("shrink", f"shrink-index: {why}")
    return Result(units=len(sources))


async def downsample(ctx: Context, p: dict[str, Any]) -> Result:
    source = p.get("source-index") or ctx.definitions.default_target()
    if not source:
        raise ValueError("downsample: set 'source-index' (the track has no single index or data stream)")
    interval = p.get("fixed-interval", "1h")
    target = p.get("target-index") or f"{source}-{interval}"
    body: dict[str, Any] = {"fixed_interval": interval}
    if p.get("sampling-method"):
        body["sampling_method"] = p["sampling-method"]
    status, resp = await Call(ctx, p)("POST", f"/{source}/_downsample/{target}", body=body)
    return failed(status, resp) if status >= 400 else Result()


async def wait_for_recovery(ctx: Context, p: dict[str, Any]) -> Result:
    """Waits until every shard recovery of ``index`` is DONE; weight = bytes recovered (Rally's ``byte`` unit)."""
    call = Call(ctx, p)
    period = param_float(p, "completion-recheck-wait-period", 1.0)
    deadline = wait_deadline(p)
    while True:
        if time.monotonic() > deadline:
            return problem("recovery", f"wait-for-recovery: recovery of {p['index']} not done in time")
        status, resp = await call("GET", f"/{p['index']}/_recovery", own_params=False)
        if status >= 400:
            return failed(status, resp)
        shards = [s for idx in (resp or {}).values() for s in idx.get("shards", [])]
        if shards and all(s.get("stage") == "DONE" for s in shards):
            recovered = sum(s["index"]["size"]["recovered_in_bytes"] for s in shards)
            return Result(units=recovered, unit="byte")
        await asyncio.sleep(period)


async def node_stats(ctx: Context, p: dict[str, Any]) -> Result:
    status, resp = await Call(ctx, p)("GET", "/_nodes/stats/_all")
    return failed(status, resp) if status >= 400 else Result()


_OPERATORS = {
    "exists": lambda v, _: v is not None, "not_exists": lambda v, _: v is None,
    "gte": lambda v, t: int(v) >= int(t), "lte": lambda v, t: int(v) <= int(t),
    "eq": lambda v, t: int(v) == int(t), "neq": lambda v, t: int(v) != int(t),
}


def _json_path(doc: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(doc, dict):
            return None
        doc = doc.get(part)
    return doc


async def run_until(ctx: Context, p: dict[str, Any]) -> Result:
    """Rally's run-until: send the request every ``retry-wait-interval`` s (default 60) until the value at
    ``json-path`` meets ``criterion`` ({operator, value})."""
    call = Call(ctx, p)
    crit = p["criterion"]
    op = _OPERATORS[crit["operator"]]
    wait = param_float(p, "retry-wait-interval", 60.0)
    deadline = wait_deadline(p)
    while True:
        status, resp = await call(p.get("method", "GET"), p["path"], body=p.get("body"))
        if status >= 400:
            return failed(status, resp)
        value = _json_path(resp, p["json-path"])
        if value and op(value, crit.get("value")):
            return Result()
        if time.monotonic() > deadline:
            return problem("run-until", f"{p['json-path']} is {value!r}: criterion {crit} not met in time")
        await asyncio.sleep(wait)


# ------------------------------------------------------------------ load-time checks


def check_admin(name: str, op_type: str, params: dict[str, Any], *, track_file: str) -> None:
    for key in ("body", "target-body", "settings"):
        need_dict(name, op_type, params, key, track_file=track_file)
    if op_type == "run-until":
        crit = params["criterion"]
        if not isinstance(crit, dict) or crit.get("operator") not in _OPERATORS:
            raise TrackError(f"{track_file}: operation '{name}' (run-until) has criterion {crit!r}: its operator must "
                             f"be one of {', '.join(_OPERATORS)}")
        if crit["operator"] not in ("exists", "not_exists") and "value" not in crit:
            raise TrackError(f"{track_file}: operation '{name}' (run-until): criterion operator "
                             f"{crit['operator']} needs a 'value'")
    if op_type == "create-ilm-policy" and not isinstance(params["body"].get("policy"), dict):
        raise TrackError(f"{track_file}: operation '{name}' (create-ilm-policy) has a body without the top-level "
                         f"'policy' object the ILM API expects")


# type -> (runner, mandatory parameters); check_admin checks them all
RUNNERS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "create-index-template": (create_index_template, ()),
    "delete-index-template": (delete_index_template, ()),
    "create-composable-template": (create_composable_template, ()),
    "delete-composable-template": (delete_composable_template, ()),
    "create-component-template": (create_component_template, ()),
    "delete-component-template": (delete_component_template, ()),
    "create-data-stream": (create_data_stream, ()),
    "delete-data-stream": (delete_data_stream, ()),
    "put-pipeline": (put_pipeline, ("id", "body")),
    "delete-pipeline": (delete_pipeline, ("id",)),
    "create-search-pipeline": (create_search_pipeline, ("id", "body")),
    "create-ilm-policy": (create_ilm_policy, ("policy-name", "body")),
    "delete-ilm-policy": (delete_ilm_policy, ("policy-name",)),
    "shrink-index": (shrink_index, ("source-index", "target-index", "target-body")),
    "downsample": (downsample, ()),
    "wait-for-recovery": (wait_for_recovery, ("index",)),
    "node-stats": (node_stats, ()),
    "run-until": (run_until, ("path", "json-path", "criterion")),
}

