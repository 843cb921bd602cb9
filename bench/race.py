"""One race, end to end: load the track, store a trial, provision (or connect to) clusters, drive the
challenge, read cluster totals, summarise, report — and, whatever happens, store what was measured
with the right status and stop the clusters bench started."""

from __future__ import annotations

import asyncio
import logging
import signal
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

from bench import redact
from bench.client import (
    DEFAULT_CLUSTER,
    ClientOptions,
    ClusterTarget,
    RawHttp,
    check_cluster,
    parse_client_options,
    parse_target_hosts,
)
from bench.cluster_stats import (
    JVM_GC_PATH,
    SHARD_STATS_PATH,
    STATS_METRICS,
    ClusterTotals,
    GcTotals,
    cluster_totals,
    gc_delta,
    gc_totals,
    primary_shard_spread,
)
from bench.driver.coordinator import Coordinator
from bench.driver.failure_log import FailureLog
from bench.driver.progress import Progress
from bench.errors import ClusterError
from bench.home import trials_dir
from bench.options import RaceOptions
from bench.provision.car import load_car
from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterInfo, ClusterSpec
from bench.report import check_report_file, render_summary, write_report
from bench.store import TrialInfo, TrialStore, machine_info, new_trial_id, utcnow
from bench.summary import Summary, summarize
from bench.telemetry import attach_telemetry, race_context, resolve_telemetry, start_telemetry
from bench.track.corpus import bulk_documents, prepare_corpora
from bench.track.loader import find_track, load_track
from bench.track.model import Challenge, DocumentsSpec, Track
from bench.trial_run import INTERRUPTIONS, SampleBuffer, recorded_run

log = logging.getLogger(__name__)


@dataclass
class RaceResult:
    trial_id: str
    status: str
    summary: Summary | None
    report: str = ""
    clusters: list[dict[str, Any]] = field(default_factory=list)


def run_race(opts: RaceOptions, *, console: Console | None = None) -> RaceResult:
    console = console or Console()
    topology = None
    if opts.topology:  # bench/cloud: a cloud topology runs the race on its driver host instead
        from bench.cloud.topology import load_topology

        topology = load_topology(opts.topology)
        if opts.distribution or opts.plugins:  # issue 4: --distribution / --plugin apply to its clusters
            from bench.ccr.overrides import apply_to_topology, parse_plugins

            topology = apply_to_topology(topology, opts.distribution, parse_plugins(opts.plugins))
        if topology.provider != "local":
            from bench.cloud.race import run_cloud_race

            return run_cloud_race(opts, topology, console)  # type: ignore[return-value]
    track = load_track(find_track(opts.track, opts.track_path), opts.track_params,
                       ignore_unused=opts.ignore_unused_track_params, test_mode=opts.test_mode)
    challenge = track.challenge(opts.challenge)
    client_options = parse_client_options(opts.client_options)
    # bad telemetry devices, parameters or profiles fail before anything starts
    resolve_telemetry(opts.telemetry, opts.telemetry_params, opts.telemetry_profile)
    if opts.report_file:
        check_report_file(opts.report_file)
    if not opts.target_hosts:
        car = load_car(opts.car, opts.car_params)  # bad car names or params fail before anything starts
        if car.variables.get("index_soft_deletes") is False and topology is None and not opts.distribution_path:
            from bench.ccr.overrides import parse_distribution
            from bench.ccr.prepare import check_soft_deletes

            # Known before provisioning: do not start a cluster only to refuse the car afterwards.
            check_soft_deletes(DEFAULT_CLUSTER, *parse_distribution(opts.distribution, opts.distribution_version),
                               car.names, None)
        named = {}
    else:
        named = parse_target_hosts(opts.target_hosts)

    store = TrialStore()
    trial = TrialInfo(id=new_trial_id(), track=track.name, challenge=challenge.name,
                      car=[] if opts.target_hosts else opts.car, track_params=track.params,
                      user_tags=opts.user_tags, options=opts.public(), pipeline=opts.pipeline,
                      test_mode=opts.test_mode, start_time=utcnow(), machine=machine_info())
    store.create_trial(trial)
    console.print(f"[bold]Trial {trial.id}[/bold]: track [cyan]{track.name}[/cyan], challenge "
                  f"[cyan]{challenge.name}[/cyan]{' (test mode)' if opts.test_mode else ''}", highlight=False)
    provisioner: LocalProvisioner | None = None
    clusters: list[dict[str, Any]] = []
    with recorded_run(store, trial.id, "race", lambda: _summary_of_stored(store, trial.id, None)) as outcome:
        try:
            prepare_corpora(track, challenge, test_mode=opts.test_mode)
            documents = _documents_per_task(track, challenge)
            if opts.target_hosts:
                targets = [ClusterTarget(name=n, hosts=h, options=client_options) for n, h in named.items()]
            elif topology is not None:
                from bench.cloud.local import start_topology

                provisioner = LocalProvisioner(trial.id, trials_dir() / trial.id)
                targets = [_target_for(i, client_options) for i in start_topology(provisioner, topology, console)]
            else:
                trial_dir = trials_dir() / trial.id
                provisioner = LocalProvisioner(trial.id, trial_dir)
                from bench.ccr.overrides import parse_distribution, parse_plugins, plugins_for

                engine, version = parse_distribution(opts.distribution, opts.distribution_version)
                spec = ClusterSpec(name=DEFAULT_CLUSTER, nodes=opts.nodes, car=opts.car, car_params=opts.car_params,
                                   engine=engine, plugins=plugins_for(parse_plugins(opts.plugins), DEFAULT_CLUSTER),
                                   version=version, repository=opts.distribution_repository,
                                   distribution_path=opts.distribution_path, http_port=opts.http_port)
                console.print(f"Starting a {opts.nodes}-node {engine} {version} cluster "
                              f"(car {'+'.join(opts.car)}) on 127.0.0.1 ...", highlight=False)
                info = provisioner.start(spec)
                targets = [_target_for(info, client_options)]
            # issue 4: CCR wiring (remote connected, licenses, CCR support) before the schedule starts
            from bench.ccr.prepare import prepare_ccr_race

            opts, ccr = prepare_ccr_race(opts, topology, track, challenge, targets, console)
            outcome.summary, clusters = asyncio.run(_drive(opts, store, trial.id, track, challenge, documents,
                                                           targets, provisioner, console))
            if ccr is not None:  # final doc counts while the clusters still run
                outcome.summary = ccr.finish(outcome.summary, console)
        except INTERRUPTIONS as e:
            outcome.store_interrupted(e)  # stored at once: stopping the nodes below can take seconds
            raise
        finally:
            if provisioner is not None:
                for line in provisioner.stop_all(keep=opts.keep_cluster) or []:
                    console.print(line, highlight=False)
    summary, status = outcome.summary, outcome.status
    report = render_summary(summary, opts.report_format) if summary else ""
    if opts.report_file:
        write_report(report, opts.report_file)
    return RaceResult(trial.id, status, summary, report, clusters)


def _target_for(info: ClusterInfo, options: ClientOptions) -> ClusterTarget:
    opts = options
    if info.username and info.password is not None and opts.basic_auth_user is None and opts.api_key is None:
        opts = options.model_copy(update={"basic_auth_user": info.username, "basic_auth_password": info.password})
    return ClusterTarget(name=info.name, hosts=[h.removeprefix("http://") for h in info.hosts], options=opts)


def _documents_per_task(track: Track, challenge: Challenge) -> dict[str, list[DocumentsSpec]]:
    return {t.name: bulk_documents(track, t.operation.params) for t in challenge.tasks()
            if t.operation.operation_type == "bulk"}


def _summary_of_stored(store: TrialStore, trial_id: str, totals: ClusterTotals | None) -> Summary | None:
    df = store.samples(trial_id)
    summary = summarize(df, totals) if not df.empty else None
    return attach_telemetry(summary, store.telemetry(trial_id))


def _health_check(provisioner: LocalProvisioner | None):  # type: ignore[no-untyped-def]
    if provisioner is None:
        return None

    def check() -> str | None:
        for node, procs in provisioner.processes().items():
            alive = [p for p in procs if _running(p)]
            if not alive:
                # Point at the trial's copy of the logs: the node's own folder is deleted when it is stopped.
                cluster = next((c for c, info in provisioner.clusters.items()
                                if any(n.name == node for n in info.nodes)), "")
                log_path = provisioner.trial_dir / "logs" / cluster / node
                return f"node {node} died during the race (logs: {log_path})"
        return None

    return check


def _running(p: Any) -> bool:
    try:
        return bool(p.is_running()) and p.status() != "zombie"
    except Exception:  # noqa: BLE001 - psutil raises NoSuchProcess and friends
        return False


async def _drive(opts: RaceOptions, store: TrialStore, trial_id: str, track: Track, challenge: Challenge,
                 documents: dict[str, list[DocumentsSpec]], targets: list[ClusterTarget],
                 provisioner: LocalProvisioner | None, console: Console) -> tuple[Summary | None, list[dict[str, Any]]]:
    clusters = [await check_cluster(t) for t in targets]
    store.update_trial(trial_id, clusters=clusters)
    for c in clusters:
        console.print(f"Cluster [cyan]{c['name']}[/cyan]: {c['engine']} {c['version']}, {c['nodes']} node(s) at "
                      f"{', '.join(c['hosts'])}", highlight=False)
    default = DEFAULT_CLUSTER if any(t.name == DEFAULT_CLUSTER for t in targets) else targets[0].name

    sink = SampleBuffer(store, trial_id)
    progress = Progress(Console(stderr=True), enabled=opts.progress)
    coord = Coordinator(processes=opts.worker_processes, targets=targets, default_cluster=default,
                        on_error=opts.on_error, sink=FailureLog(sink), listener=progress,
                        health_check=_health_check(provisioner))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, coord.interrupt, "Ctrl-C" if sig == signal.SIGINT else "SIGTERM")
    coord.start()
    telemetry = None
    try:
        telemetry = await start_telemetry(
            resolve_telemetry(opts.telemetry, opts.telemetry_params, opts.telemetry_profile),
            race_context(targets, clusters, provisioner, coord.worker_pids), store, trial_id)
        gc_before = await _gc_reading(targets[0]) if targets else None
        await coord.run_challenge(track, challenge.schedule, documents)
    finally:
        try:
            if telemetry is not None:
                await telemetry.stop()  # the last samples, also when the race failed or was aborted
        finally:
            coord.close()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        sink.flush()
    totals = await _cluster_totals(targets[0]) if targets else None
    gc_after = await _gc_reading(targets[0]) if targets and gc_before is not None else None
    if totals is not None and gc_before is not None and gc_after is not None:
        totals.gc = gc_delta(gc_before, gc_after)
    return _summary_of_stored(store, trial_id, totals), clusters


async def _read(target: ClusterTarget, path: str, what: str) -> dict[str, Any] | None:
    """One JSON answer for the end-of-race totals, or None (logged): they are a nice-to-have, never a failure."""
    try:
        async with RawHttp(target, connections=1) as http:
            status, body = await http.request("GET", path)
    except Exception as e:  # noqa: BLE001 - see above
        log.warning("could not read %s of %s: %s", what, target.name, redact.redact_text(str(e)))
        return None
    if status >= 400 or not isinstance(body, dict):
        log.warning("GET %s on %s answered %s", path, target.name, status)
        return None
    return body


async def _gc_reading(target: ClusterTarget) -> GcTotals | None:
    body = await _read(target, JVM_GC_PATH, "JVM stats")
    return gc_totals(body) if body is not None else None


async def _cluster_totals(target: ClusterTarget) -> ClusterTotals | None:
    body = await _read(target, f"/_stats/{STATS_METRICS}", "index stats")
    if body is None:
        return None
    try:
        totals = cluster_totals(body, target.name)
    except ClusterError as e:
        log.warning("%s", e)
        return None
    # Rally's min/median/max across primary shards: a second, filtered request.
    shards = await _read(target, SHARD_STATS_PATH, "shard stats")
    if shards is not None:
        totals.per_shard = primary_shard_spread(shards)
    return totals
