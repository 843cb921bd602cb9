"""``bench loadgen``: run an INFINI Loadgen YAML file as it is, measured and stored like a race.

Flags keep Loadgen's meaning: ``-c`` concurrent clients, ``-d`` seconds, ``-r`` max requests/s (all
clients together), ``-l`` total request limit, ``--compress`` gzip request bodies. Every client loops over
the config's requests in order (Loadgen's round). Before measuring, each request is sent once (the warmup,
unless ``runner.no_warm``) and its answer shown; a failing warmup ends the run with one line. The run is
stored as a trial (track ``loadgen``, challenge = the config's file name), so ``bench show``/``compare`` work.

bench's addition: ``--target-hosts`` sends every request to the given hosts instead of the URLs' own
(run a config written for a gateway or another address unchanged against a local cluster).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console

from bench.driver.backends import OpenedPool, open_pool
from bench.driver.coordinator import Coordinator
from bench.driver.failure_log import FailureLog
from bench.driver.progress import Progress
from bench.http.client import ClusterTarget, RawHttp, check_cluster, parse_client_options, parse_target_hosts
from bench.loadgen.conditions import Response
from bench.loadgen.config import LoadgenPlan, load_plan
from bench.loadgen.summary import render_loadgen, summarize_loadgen
from bench.results.report import ReportFormat, render_summary
from bench.results.summary import Summary, summarize
from bench.track.model import Challenge, Operation, Task, Track
from bench.trials.model import Trials
from bench.trials.open import open_store
from bench.trials.recording import SampleBuffer, recorded_run
from bench.trials.sqlite import TrialInfo, machine_info, new_trial_id, utcnow
from bench.util import redact
from bench.util.errors import ClusterError, ConfigError

log = logging.getLogger(__name__)


class LoadgenOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    config: Path
    concurrency: int = Field(default=1, ge=1, le=100_000)
    duration: float = Field(default=5.0, gt=0)
    rate: float | None = Field(default=None, gt=0)
    limit: int | None = Field(default=None, ge=1)
    compress: bool = False
    target_hosts: str | None = None
    client_options: dict[str, Any] = Field(default_factory=dict)
    user_tags: dict[str, str] = Field(default_factory=dict)
    report_format: ReportFormat = "table"
    worker_processes: int | None = Field(default=None, ge=1, le=1024)  # None: 1, or one per CPU of each Ray node
    load_driver: str | None = None  # BACKEND:ADDRESS (e.g. ray:auto); None: local worker processes
    load_driver_hosts: list[str] = Field(default_factory=list)
    progress: bool = True

    def public(self) -> dict[str, Any]:
        d = self.model_dump(mode="json")
        d["client_options"] = redact.redact(d["client_options"])
        return d


@dataclass
class LoadgenResult:
    trial_id: str
    status: str
    summary: Summary | None
    loadgen_report: str
    report: str


def _targets(plan: LoadgenPlan, opts: LoadgenOptions) -> tuple[list[ClusterTarget], dict[str, str]]:
    """ClusterTargets and the map endpoint ("" = relative urls) -> target name."""
    client_options = parse_client_options(opts.client_options)
    endpoints = plan.endpoints()
    relative = any(r.endpoint is None for r in plan.requests)
    if opts.target_hosts:
        named = parse_target_hosts(opts.target_hosts)
        name, hosts = next(iter(named.items()))
        target = ClusterTarget(name=name, hosts=hosts, options=client_options)
        return [target], {e: name for e in [*endpoints, ""]}
    if relative:
        raise ConfigError(f"{plan.path}: a request has a relative url and there is no runner.default_endpoint: "
                          f"set one, or pass --target-hosts")
    targets, mapping = [], {}
    for i, e in enumerate(endpoints):
        name = "default" if i == 0 else f"endpoint-{i}"
        opts_i = client_options.model_copy(update={"use_ssl": e.startswith("https://")})
        targets.append(ClusterTarget(name=name, hosts=[e.split("://", 1)[1]], options=opts_i))
        mapping[e] = name
    return targets, mapping


async def _warmup(plan: LoadgenPlan, targets: list[ClusterTarget], clusters: dict[str, str], console: Console,
                  compress: bool) -> None:
    """Loadgen's warmup: every request once, its answer shown; an error ends the run (one line)."""
    import gzip

    by_name = {t.name: t for t in targets}
    valid = set(plan.config.runner.valid_status_codes_during_warmup)
    https = {t.name: RawHttp(t, connections=1) for t in targets}
    for h in https.values():
        await h.__aenter__()
    try:
        for req in plan.requests:
            r = req.template.render()
            name = clusters[req.endpoint or ""]
            body = gzip.compress(r.body, compresslevel=1) if compress and r.body else r.body
            url = by_name[name].urls()[0] + r.url
            try:
                status, raw = await https[name].send(r.method, r.url, body or None, headers=r.headers,
                                                     gzipped=compress and bool(r.body))
            except Exception as e:  # noqa: BLE001 - any transport failure is one line for the user
                raise ClusterError(f"warmup request #{req.index} ({r.method} {url}) failed: "
                                   f"{redact.redact_text(str(e)) or type(e).__name__}: is the endpoint reachable? "
                                   f"(--target-hosts overrides the config's hosts)") from None
            text = " ".join(raw[:300].decode(errors="replace").split())
            console.print(f"[warmup] {r.method} {redact.redact_text(url)}\n[warmup] status: {status}, "
                          f"{redact.redact_text(text)}", highlight=False, markup=False)
            bad = status >= 400 or (r.docs and b'"errors":true' in raw[:200])
            if bad and status not in valid:
                raise ClusterError(f"warmup request #{req.index} ({r.method} {redact.redact_text(url)}) answered HTTP "
                                   f"{status}: {redact.redact_text(text[:200])} - fix the request, or list the code "
                                   f"in runner.valid_status_codes_during_warmup, or set runner.no_warm")
            if not bad and req.check is not None and not req.check(Response(status, raw)):
                raise ClusterError(f"warmup request #{req.index} ({r.method} {redact.redact_text(url)}) failed its "
                                   f"assert (HTTP {status}: {redact.redact_text(text[:200])}) - fix the request or "
                                   f"the assert, or set runner.no_warm")
    finally:
        for h in https.values():
            await h.__aexit__(None, None, None)


def build_task(plan: LoadgenPlan, opts: LoadgenOptions, clusters: dict[str, str]) -> Task:
    rounds = max(0, plan.config.runner.total_rounds)
    params = {"config": str(plan.path), "environ": dict(os.environ), "clusters": clusters, "limit": opts.limit,
              "rounds": rounds, "compress": opts.compress, "sequences": plan.variables.sequence_state()}
    op = Operation(name=plan.path.stem, operation_type="loadgen-request", params=params)
    return Task(name=plan.path.stem, operation=op, clients=opts.concurrency, time_period=opts.duration,
                target_throughput=opts.rate)


def run_loadgen(opts: LoadgenOptions, *, console: Console | None = None) -> LoadgenResult:
    console = console or Console()
    plan = load_plan(opts.config)
    for w in plan.warnings:
        console.print(f"note: {w}", highlight=False, markup=False)
    targets, clusters = _targets(plan, opts)
    # Joined (or found unreachable, one line) before the trial exists; closed whatever happens after.
    pool = open_pool(opts.load_driver, opts.worker_processes, opts.load_driver_hosts)
    try:
        store = open_store()
    except BaseException:
        pool.pool.close()
        raise
    trial = TrialInfo(id=new_trial_id(), track="loadgen", challenge=plan.path.name, user_tags=opts.user_tags,
                      options=opts.public(), pipeline="benchmark-only", start_time=utcnow(), machine=machine_info())
    store.create_trial(trial)
    console.print(f"[bold]Trial {trial.id}[/bold]: loadgen [cyan]{plan.path.name}[/cyan], {opts.concurrency} "
                  f"clients, {opts.duration:g} s" + (f", <= {opts.rate:g} req/s" if opts.rate else "")
                  + (f", limit {opts.limit} requests" if opts.limit else ""), highlight=False)
    lg_text = ""

    def stored_summary() -> Summary | None:
        df = store.samples(trial.id)
        return summarize(df) if not df.empty else None

    try:
        with recorded_run(store, trial.id, "loadgen run", stored_summary) as outcome:
            outcome.summary, lg_text = asyncio.run(_drive(plan, opts, targets, clusters, store, trial.id, console,
                                                          pool))
    finally:
        pool.pool.close()  # the coordinator closed it unless the run failed before it started
        store.close()  # a metrics store gets the run's last rows now (or says what it lacks)
    summary, status = outcome.summary, outcome.status
    report = render_summary(summary, opts.report_format) if summary else ""
    return LoadgenResult(trial.id, status, summary, lg_text, report)


async def _drive(plan: LoadgenPlan, opts: LoadgenOptions, targets: list[ClusterTarget], clusters: dict[str, str],
                 store: Trials, trial_id: str, console: Console, pool: OpenedPool) -> tuple[Summary | None, str]:
    infos = []
    for t in targets:
        try:
            infos.append(await check_cluster(t))
        except ClusterError as e:
            if "answered HTTP" not in str(e) and "does not look like" not in str(e):
                raise  # unreachable, TLS, auth: the user must fix it
            infos.append({"name": t.name, "engine": "unknown", "version": "?", "nodes": 0, "hosts": t.urls()})
    store.update_trial(trial_id, clusters=infos)
    compat7 = False
    if plan.typed_bulk_requests() and all(i["engine"] == "elasticsearch" and str(i["version"]).split(".")[0]
                                          .isdigit() and int(str(i["version"]).split(".")[0]) >= 8 for i in infos):
        changed = plan.enable_compat7()
        compat7 = bool(changed)
        if changed:
            console.print(f"note: requests {changed} name _type, which Elasticsearch 8 removed: they are sent with "
                          f"REST API compatibility (compatible-with=7), which still accepts it", highlight=False,
                          markup=False)
    if not plan.config.runner.no_warm:
        await _warmup(plan, targets, clusters, console, opts.compress)
    task = build_task(plan, opts, clusters)
    task.operation.params["compat7"] = compat7
    track = Track(name="loadgen", root=plan.path.parent, challenges=[Challenge(name=plan.path.name, schedule=[task])])

    sink = SampleBuffer(store, trial_id)
    coord = Coordinator(processes=pool.workers, targets=targets, default_cluster=targets[0].name,
                        sink=FailureLog(sink), listener=Progress(Console(stderr=True), enabled=opts.progress),
                        pool=pool.pool)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, coord.interrupt, "Ctrl-C" if sig == signal.SIGINT else "SIGTERM")
    coord.start()
    try:
        await coord.run_challenge(track, [task], {})
    finally:
        coord.close()
        store.add_telemetry(trial_id, [*pool.pool.telemetry(), *coord.driver_rows])
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        sink.flush()
    df = store.samples(trial_id)
    if df.empty:
        return None, ""
    lg = summarize_loadgen(df)
    summary = summarize(df)
    summary.notes.extend(pool.pool.notes())  # e.g. a Ray node too busy to drive the load asked of it
    return summary, render_loadgen(lg) if lg else ""
