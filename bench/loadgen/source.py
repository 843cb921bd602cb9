"""Parameter sources that render Loadgen templates inside the load driver's worker processes.

Templates are compiled once per worker process and shared by that process's clients, so a ``sequence``
counts across all of them, as in Loadgen (one process). Each request is rendered right before it is
sent (outside its measured service time): values such as ``now_local`` and ``uuid`` are fresh per
request. The rendering cost is what ``benchmarks/template_generation.py`` measures.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.driver.bulk.bodies import BulkBody
from bench.driver.param_sources import SourceContext, bulk_path
from bench.loadgen.config import LoadgenPlan, load_plan
from bench.loadgen.template import RequestTemplate
from bench.loadgen.variables import Variables, VariableSpec
from bench.track.model import Task
from bench.util.errors import TrackError

_PLANS: dict[tuple[str, str], LoadgenPlan] = {}
_TEMPLATES: dict[str, tuple[Variables, dict[str, Any]]] = {}


def track_template(task: Task, *, client: int, default_index: str | None) -> RequestTemplate:
    """The ``template`` of a bulk operation in a track: Loadgen's request keys (``body``, ``variables``,
    ``runtime_variables``, ``runtime_body_line_variables``); ``bulk-size`` is ``body_repeat_times``."""
    p = task.operation.params
    t = p["template"]
    where = f"task '{task.name}': template"
    if not isinstance(t, dict) or not isinstance(t.get("body"), str) or not t["body"].strip():
        raise TrackError(f"{where} must be an object with a non-empty 'body' (Loadgen's request body)")
    size: Any = p.get("bulk-size", t.get("body_repeat_times", 1))  # the track's JSON: checked here
    try:
        repeat = int(size)
    except (TypeError, ValueError):
        raise TrackError(f"{where}: bulk-size must be an integer") from None
    cached = _TEMPLATES.get(task.name)
    if cached is None or cached[1] is not t:
        try:
            specs = [VariableSpec.model_validate(v) for v in t.get("variables") or []]
            variables = Variables(specs, base_dir=Path(str(t.get("base_dir", "."))), where=f"{where}.variables")
        except Exception as e:  # noqa: BLE001 - pydantic or ConfigError: one line naming the task
            raise TrackError(f"{where}: {str(e).splitlines()[0]}") from None
        cached = _TEMPLATES[task.name] = (variables, t)
    body = t["body"] if t["body"].endswith("\n") else t["body"] + "\n"
    path = "/_bulk" if not default_index else f"/{default_index}/_bulk"
    return RequestTemplate(method="POST", url=path, body=body, headers={}, repeat=repeat,
                           runtime=t.get("runtime_variables") or {}, line=t.get("runtime_body_line_variables") or {},
                           variables=cached[0], where=where)


def _plan(config: str, environ: dict[str, str]) -> LoadgenPlan:
    key = (config, repr(sorted(environ.items())))
    if key not in _PLANS:
        _PLANS[key] = load_plan(config, environ=environ)
    return _PLANS[key]


def _plan_for(p: dict[str, Any]) -> LoadgenPlan:
    key = (p["config"], repr(sorted((p.get("environ") or {}).items())))
    fresh = key not in _PLANS
    plan = _plan(p["config"], dict(p.get("environ") or {}))
    if fresh and p.get("sequences"):
        plan.variables.restore_sequences(p["sequences"])  # continue after the values the warmup used
    if fresh and p.get("compat7"):
        plan.enable_compat7()
    return plan


def client_share(total: int, client: int, clients: int) -> int:
    per, extra = divmod(total, clients)
    return per + (1 if client < extra else 0)


def loadgen_source(task: Task, *, client: int, gzip_for: dict[str, bool]) -> Iterator[dict[str, Any]]:
    """A client's requests: the config's requests in order, round after round (Loadgen's loop), until its
    share of ``limit`` (Loadgen's ``-l``) or ``rounds`` (``runner.total_rounds``) is used up."""
    p = task.operation.params
    plan = _plan_for(p)
    clusters: dict[str, str] = p["clusters"]  # endpoint (or "" for relative urls) -> cluster name
    limit = p.get("limit")
    rounds = int(p.get("rounds") or 0)
    quota = client_share(int(limit), client, task.clients) if limit is not None else None
    compress = bool(p.get("compress", False))

    def gen() -> Iterator[dict[str, Any]]:
        sent = 0
        done_rounds = 0
        while rounds <= 0 or done_rounds < rounds:
            for req in plan.requests:
                if quota is not None and sent >= quota:
                    return
                r = req.template.render()
                cluster = clusters[req.endpoint or ""]
                gz = compress or gzip_for.get(cluster, False)
                wire = gzip.compress(r.body, compresslevel=1) if gz and r.body else r.body
                sent += 1
                yield {"request": r, "cluster": cluster, "wire": wire, "gzipped": gz and bool(r.body),
                       "check": req.check}
            done_rounds += 1

    return gen()


def loadgen_request_source(task: Task, sc: SourceContext) -> Iterator[dict[str, Any]]:
    """The parameter source of ``loadgen-request`` operations (registered with the driver)."""
    return loadgen_source(task, client=sc.client, gzip_for=sc.gzip_for)


def template_bulk_source(task: Task, sc: SourceContext) -> Iterator[dict[str, Any]]:
    """Bulk bodies rendered from a Loadgen template (a bulk operation's ``template``: body, variables, runtime
    variables); each request renders ``bulk-size`` repetitions with fresh values (see bench.loadgen.template for
    the cost). Registered with the driver for bulks that have a ``template``."""
    p = task.operation.params
    if task.iterations is None and task.time_period is None:
        raise TrackError(f"task '{task.name}': a templated bulk never runs out of documents: give the task "
                         f"'iterations' or 'time-period'")
    tpl = track_template(task, client=sc.client, default_index=sc.default_index)
    path = bulk_path(p)
    base = {k: v for k, v in p.items() if k == "cluster"}
    gzip_bodies = sc.gzip_bodies(p)

    def gen() -> Iterator[dict[str, Any]]:
        while True:
            r = tpl.render()
            wire = gzip.compress(r.body, compresslevel=1) if gzip_bodies else r.body
            yield {**base, "body": BulkBody(wire, r.docs, len(r.body), gzip_bodies), "path": path}

    return gen()
