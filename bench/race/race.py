"""One race, end to end, as a straight line of phases:

    load track -> resolve clusters -> before provisioning -> trial -> prepare corpora -> start clusters
      -> prepare -> drive (around the schedule) -> collect totals -> summarise -> finish -> stop -> report

Where the clusters come from is a cluster source's business (``bench.race.cluster_source``); what extensions do
before provisioning, before, around and after the schedule are race hooks (``bench.race.pipeline``). Whatever
happens, what was measured is stored with the right status and the clusters bench started are stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from bench import extensions
from bench.driver.backends import OpenedPool, open_pool
from bench.driver.coordinator import Coordinator, Listeners, RunStep, StepDriver
from bench.driver.failure_log import FailureLog
from bench.driver.profiling import driver_profiling, keep_driver_profiles
from bench.driver.progress import Progress
from bench.driver.randomize import unrandomizable_searches
from bench.driver.warmup import warmup_notes
from bench.http.client import (
    DEFAULT_CLUSTER,
    ClientOptions,
    ClusterTarget,
    RawHttp,
    check_cluster,
    parse_client_options,
    parse_target_hosts,
)
from bench.http.cluster_stats import (
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
from bench.provision.cpus import (
    check_cpus,
    cpu_list_text,
    own_process_on,
    parse_cpu_list,
    pin_process,
)
from bench.provision.facts_text import distribution_text
from bench.provision.pinning import explicit_plan
from bench.race.cluster_source import RaceClusters, resolve_clusters
from bench.race.doc_counts import refreshed_doc_counts
from bench.race.flags import public_options
from bench.race.live_html import LivePage
from bench.race.live_telemetry import LiveTelemetry
from bench.race.options import RaceOptions
from bench.race.pipeline import RaceHook, RacePlan, RaceResult, RaceSchedule, RaceTargets, race_hooks
from bench.race.race_report import race_report
from bench.race.thresholds import STATUS as THRESHOLD_STATUS
from bench.race.thresholds import ThresholdWatch, judge, race_thresholds
from bench.results.report import check_report_file, write_report
from bench.results.summary import Summary, summarize
from bench.track import notices
from bench.track import plugins as track_plugins
from bench.track import processors as track_processors
from bench.track.corpus import CorpusRecipe, bulk_documents, prepare_corpora
from bench.track.loader import load_track
from bench.track.model import Challenge, DocumentsSpec, Parallel, Task, Track
from bench.track.resolve import ResolvedTrack, resolve_track
from bench.track.synthetic_corpora import corpora_text
from bench.track.task_filter import filter_challenge
from bench.trials.model import Trials
from bench.trials.open import check_store, open_store
from bench.trials.recording import INTERRUPTIONS, SampleBuffer, recorded_run
from bench.trials.sqlite import TrialInfo, TrialStore, machine_info, utcnow
from bench.trials.summary import enrich
from bench.util import activity, redact
from bench.util.errors import ClusterError, ConfigError
from bench.util.home import data_dir, trials_dir

__all__ = ["RaceResult", "load_race_track", "run_race"]

log = logging.getLogger(__name__)


def resolve_race_track(opts: RaceOptions) -> ResolvedTrack:
    """The folder of the race's track and where it came from; a track repository's branch is chosen from the
    version of the cluster the race benchmarks (asked of --target-hosts, as Rally does, else the distribution's)."""
    from bench.track.repository import KINDS

    return resolve_track(opts.track, opts.track_path, repository=opts.track_repository, revision=opts.track_revision,
                         version=lambda: _track_version(opts), offline=opts.offline, progress=opts.progress,
                         kind=KINDS[opts.repository_kind])


def _track_version(opts: RaceOptions) -> str | None:
    from bench.provision.overrides import parse_distribution

    if opts.target_hosts:
        named = parse_target_hosts(opts.target_hosts)
        name = DEFAULT_CLUSTER if DEFAULT_CLUSTER in named else next(iter(named))
        target = ClusterTarget(name=name, hosts=named[name], options=parse_client_options(opts.client_options))
        facts = asyncio.run(check_cluster(target))
        engine, version = str(facts["engine"]), str(facts["version"])
    else:
        engine, version = parse_distribution(opts.distribution, opts.distribution_version)
    if engine == "opensearch":
        # rally-tracks' branches are named after Elasticsearch versions: OpenSearch 2.x would pick Elasticsearch 2's.
        notices.warn(f"track repository branches follow Elasticsearch versions: for OpenSearch {version} bench uses "
                     f"the repository's default branch (choose another with --track-revision)")
        return None
    return version


def load_race_track(opts: RaceOptions, resolved: ResolvedTrack | None = None
                    ) -> tuple[Track, Challenge, list[str]]:
    """The track and challenge a race with these options runs, loaded and checked as the race does (task filters
    applied), and the warmup notes the race prints.

    Needs no corpus files (those are fetched later) and, unless a track repository's branch must follow its
    version, no cluster, so a load-only check (benchmarks/rally_tracks_compat.py) sees exactly the errors a race
    would report before it starts.
    """
    extensions.load()
    folder = (resolved or resolve_race_track(opts)).dir
    track = load_track(folder, opts.track_params, ignore_unused=opts.ignore_unused_track_params,
                       test_mode=opts.test_mode, offline=opts.offline)
    track.randomization = opts.randomization
    chosen = track.find_challenge(opts.challenge)
    filtered = filter_challenge(chosen, opts.include_tasks, opts.exclude_tasks)
    track.challenges = [filtered if c is chosen else c for c in track.challenges]
    challenge = track.challenge(filtered.name)
    if opts.randomization is not None:
        unrandomizable_searches(track, challenge)
    warmups = warmup_notes(track, challenge)  # a warmup that would hold a whole task fails before any machine exists
    return track, challenge, warmups


def _stored_options(opts: RaceOptions, track: Track) -> dict[str, Any]:
    """The options stored with the trial, plus the template variables the track rendered as empty (so a trial
    run without a parameter it needed says so)."""
    out = public_options(opts)
    if track.undefined_params:
        out["undefined_track_params"] = list(track.undefined_params)
    return out


def _driver_machine(clusters: RaceClusters) -> dict[str, Any]:
    """The load driver's machine, with the CPUs its workers are pinned to and what pinning did (when asked)."""
    out = machine_info()
    if clusters.driver_cpus is not None:
        out["cpus"] = cpu_list_text(clusters.driver_cpus)
    if (own := clusters.bench_cpus()) is not None:
        out["bench_cpus"] = cpu_list_text(own)
    if clusters.pinning_note:
        out["pinning"] = clusters.pinning_note
    return out


def pin_driver(clusters: RaceClusters, opts: RaceOptions) -> None:
    """--driver-cpus: the workers on those CPUs (checked against this machine); refused where the topology or
    --pinning already placed them, and with workers elsewhere."""
    assert opts.driver_cpus is not None
    text, cpus = opts.driver_cpus, parse_cpu_list(opts.driver_cpus)
    if opts.load_driver:
        raise ConfigError(f"--load-driver={opts.load_driver} runs the workers elsewhere, but --driver-cpus={text} "
                          "pins them to CPUs of this machine: drop one of them")
    if clusters.driver_cpus is not None:
        raise ConfigError(f"--driver-cpus={text}: the load driver is already pinned to CPU "
                          f"{cpu_list_text(clusters.driver_cpus)} (the topology's driver_cpus or --pinning): drop "
                          "one of them")
    check_cpus(cpus, "--driver-cpus")
    clusters.driver_cpus = cpus
    # The whole plan: the clusters' own sets (a topology's cpus:) stay in the stored line beside the driver's.
    clusters.pinning_note = explicit_plan(dict(clusters.cluster_cpus), cpus).note


def plan_clusters(opts: RaceOptions, track: Track, challenge: Challenge, clusters: RaceClusters) -> list[RaceHook]:
    """The race's hooks, having seen the clusters before anything starts (their refusals come first) and given
    each planned cluster its JVM options -- also when the source then takes the race over (a cloud topology
    boots its nodes with them)."""
    hooks = race_hooks()
    plan = RacePlan(opts, track, challenge, clusters.planned)
    for hook in hooks:
        hook.before_provisioning(plan)
    for planned in clusters.planned:
        clusters.add_jvm_options(planned.name, [o for hook in hooks for o in hook.jvm_options(plan, planned)])
    return hooks


def run_race(opts: RaceOptions, *, console: Console | None = None) -> RaceResult:
    console = console or Console()
    check_store()  # a metrics store refusing bench's credentials says so before a track is fetched or a node starts
    resolved = resolve_race_track(opts)
    track, challenge, warmups = load_race_track(opts, resolved)
    watch = ThresholdWatch(race_thresholds(opts, track, challenge))  # a wrong threshold is one line, now
    client_options = parse_client_options(opts.client_options)
    if opts.report_file:
        check_report_file(opts.report_file)
    with TrialStore() as local:  # a damaged trial store says so before anything starts or is measured
        local.check_intact()

    clusters = resolve_clusters(opts)
    if clusters.driver_cpus is not None and opts.load_driver:
        raise ConfigError(f"--load-driver={opts.load_driver} runs the workers elsewhere, but the load driver is pinned "
                          f"to CPU {cpu_list_text(clusters.driver_cpus)} of this machine: drop one of them")
    hooks = plan_clusters(opts, track, challenge, clusters)
    result = clusters.take_over(opts, console)  # a cloud topology's driver host applies --driver-cpus itself
    if result is not None:
        return result
    if opts.driver_cpus is not None:  # nothing has started yet
        pin_driver(clusters, opts)
        if not clusters.planned and clusters.pinning_note:  # clusters bench starts print it as they start
            console.print(clusters.pinning_note, highlight=False, markup=False)
    with driver_profiling(opts.enable_driver_profiling) as profile_dir:
        return _run(opts, console, resolved, track, challenge, warmups, client_options, clusters, hooks,
                    profile_dir, watch)


def _run(opts: RaceOptions, console: Console, resolved: ResolvedTrack, track: Track, challenge: Challenge, warmups: list[str],
         client_options: ClientOptions, clusters: RaceClusters, hooks: list[RaceHook],
         profile_dir: Path | None, watch: ThresholdWatch) -> RaceResult:
    # A distributed driver's cluster is joined (or found unreachable, one line) before any cluster starts. The
    # coordinator closes the pool after the schedule; closing it here too covers a race failing before that.
    pool = open_pool(opts.load_driver, opts.worker_processes, opts.load_driver_hosts)

    # Closed when the race ends: a metrics store then gets the rows of its last second (or says what it lacks).
    with contextlib.closing(pool.pool), open_store() as store:
        trial = TrialInfo(id=opts.trial_id(), track=track.name, challenge=challenge.name,
                          car=[] if opts.target_hosts else opts.car, track_params=track.params,
                          user_tags=opts.user_tags, options=_stored_options(opts, track), pipeline=opts.pipeline or "",
                          test_mode=opts.test_mode, start_time=utcnow(), machine=_driver_machine(clusters),
                          track_source=resolved.source.model_dump())
        store.create_trial(trial)
        console.print(f"[bold]Trial {trial.id}[/bold]: track [cyan]{track.name}[/cyan], challenge "
                      f"[cyan]{challenge.name}[/cyan]{' (test mode)' if opts.test_mode else ''}", highlight=False)
        console.print(f"Track from {escape(_source_line(resolved, opts))}", highlight=False)
        for line in warmups:
            console.print(f"[yellow]Warmup:[/yellow] {escape(line)}", highlight=False)
        facts: list[dict[str, Any]] = []
        hidden = {t.name for t in challenge.tasks() if not t.include_in_reporting}
        def stored_so_far() -> Summary | None:
            return _summary_of_stored(store, trial.id, None, hidden, pool.pool.notes())

        with recorded_run(store, trial.id, "race", stored_so_far) as outcome:
            try:
                # Rally's prepare phase of a track's processors (track.py), then bench's own corpus preparation.
                code = track_plugins.plugins_of(track)
                track_processors.run_prepare(track, code, data_dir(), challenge.name, offline=opts.offline,
                                             test_mode=opts.test_mode)
                code_corpora = track_plugins.param_source_corpora(track, code, challenge.name)
                with activity.step("Preparing corpora", enabled=opts.progress):
                    corpora = prepare_corpora(track, challenge, test_mode=opts.test_mode, offline=opts.offline,
                                              corpus_dir=opts.corpus_dir, also=code_corpora,
                                              synthetic_seed=opts.generate_corpora)
                store.update_trial(trial.id, corpora=corpora)
                if (synthetic := corpora_text(corpora)) is not None:
                    console.print(f"[yellow]{escape(synthetic)}[/yellow]", highlight=False)
                documents = _documents_per_task(track, challenge)
                with activity.step("Starting clusters", enabled=opts.progress):
                    targets = clusters.start(trial.id, client_options, console)
                for hook in hooks:
                    opts = hook.prepare(RaceTargets(opts, track, challenge, targets, clusters.cars, console))
                facts, totals = asyncio.run(_drive_and_collect(
                    opts, store, trial.id, track, challenge, documents, targets, hooks, clusters, console, pool,
                    code_corpora, watch))
                keep_driver_profiles(profile_dir, trial.id)  # the workers wrote them when the pool closed
                outcome.summary = _summary_of_stored(store, trial.id, totals, hidden, pool.pool.notes())
                for hook in hooks:  # while the clusters still run
                    outcome.summary = hook.finish(RaceTargets(opts, track, challenge, targets, clusters.cars, console),
                                                  outcome.summary)
                outcome.summary = judge(outcome.summary, watch.all, store.samples(trial.id), watch)
                outcome.ended = (THRESHOLD_STATUS, f"stopped by a threshold: {watch.reason}") if watch.reason else None
            except INTERRUPTIONS as e:
                outcome.store_interrupted(e)  # stored at once: stopping the nodes below can take seconds
                raise
            finally:
                keep_driver_profiles(profile_dir, trial.id)
                for line in clusters.stop(keep=opts.keep_cluster):
                    console.print(line, highlight=False)
        summary, status = outcome.summary, outcome.status
        report = race_report(summary, opts.report_format, trial, status)
        if opts.report_file:
            write_report(report, opts.report_file)
    return RaceResult(trial.id, status, summary, report, facts, store_refused=getattr(store, "push_refused", None))


def _source_line(resolved: ResolvedTrack, opts: RaceOptions) -> str:
    """Where the track came from, in one line; a built-in track names the repository's alternative (they share
    names such as http_logs: a Rally user may expect rally-tracks' one)."""
    if resolved.source.kind == "built-in":
        return (f"bench's built-in tracks (generated data); a track repository's '{opts.track}' is "
                f"--track-repository=default --track={opts.track}")
    return resolved.source.describe()


def _documents_per_task(track: Track, challenge: Challenge) -> dict[str, list[DocumentsSpec]]:
    return {t.name: bulk_documents(track, t.operation.params) for t in challenge.tasks()
            if t.operation.operation_type == "bulk"}


def _summary_of_stored(store: Trials, trial_id: str, totals: ClusterTotals | None,
                       hidden: set[str] | None = None, driver_notes: list[str] | None = None) -> Summary | None:
    """The summary of the stored samples; tasks with include-in-reporting false are stored, not summarised.
    ``driver_notes``: what the load-driver pool says about how it drove (e.g. a busy Ray node)."""
    df = store.samples(trial_id)
    shown = df[~df["task"].isin(hidden)] if hidden and not df.empty else df
    summary = summarize(shown, totals) if not shown.empty else None
    if summary is not None and hidden:
        ran = sorted(set(df["task"]) & hidden)
        if ran:
            failed = int((~df[df["task"].isin(hidden)]["success"]).sum())
            summary.notes.append(f"Not reported (include-in-reporting: false): {', '.join(ran)}; their samples "
                                 f"are stored with the trial" + (f"; {failed} of their requests failed" if failed
                                                                 else "") + ".")
    if summary is not None and driver_notes:
        summary.notes.extend(driver_notes)
    return enrich(summary, store, trial_id)


async def _drive_and_collect(opts: RaceOptions, store: Trials, trial_id: str, track: Track,
                             challenge: Challenge, documents: dict[str, list[DocumentsSpec]],
                             targets: list[ClusterTarget], hooks: list[RaceHook], clusters: RaceClusters,
                             console: Console, pool: OpenedPool, code_corpora: list[str],
                             watch: ThresholdWatch) -> tuple[list[dict[str, Any]], ClusterTotals | None]:
    """The schedule against the targets (the hooks around it), then the cluster totals it left."""
    started = clusters.facts()
    facts = [{**await check_cluster(t), **started.get(t.name, {})} for t in targets]
    # The car the clusters really ran (a topology's own cars, not --car's default), when they all ran one.
    cars = {f["car"] for f in facts if f.get("car")}
    store.update_trial(trial_id, clusters=facts, **({"car": next(iter(cars)).split("+")} if len(cars) == 1 else {}))
    for c in facts:
        console.print(f"Cluster [cyan]{c['name']}[/cyan]: {c['engine']} {c['version']}, {c['nodes']} node(s) at "
                      f"{', '.join(c['hosts'])}", highlight=False)
        if (installed := distribution_text(c)) is not None:
            console.print(f"  installed from {escape(installed)}", highlight=False)
    default = DEFAULT_CLUSTER if any(t.name == DEFAULT_CLUSTER for t in targets) else targets[0].name

    sink = SampleBuffer(store, trial_id)
    progress, page = _live_view(opts, f"{track.name} / {challenge.name}", console)
    coord = Coordinator(processes=pool.workers, targets=targets, default_cluster=default,
                        on_error=opts.on_error, sink=FailureLog(sink),
                        listener=Listeners(progress, watch) if watch.live else progress,
                        health_check=clusters.health_check(), pool=pool.pool)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, coord.interrupt, "Ctrl-C" if sig == signal.SIGINT else "SIGTERM")
    coord.start()
    if clusters.driver_cpus is not None:  # before any step: the workers only import and wait so far
        for pid in coord.worker_pids():
            pin_process(pid, clusters.driver_cpus)
    # The hooks' store also shows the telemetry they store in the live view (e.g. a follower's lag).
    schedule = RaceSchedule(opts, trial_id, LiveTelemetry(store, progress.extension_rows), targets, facts,
                            clusters.node_processes(), coord.worker_pids, clusters.kill_cluster())
    try:
        async with contextlib.AsyncExitStack() as around:
            around.enter_context(own_process_on(clusters.bench_cpus()))  # first in, last out: hooks' threads inherit it
            for hook in hooks:
                await around.enter_async_context(hook.around_schedule(schedule))
            gc_before = await _gc_reading(targets[0]) if targets else None
            # Workers that cannot read this machine's corpus files prepare their own from the same sources.
            recipe = CorpusRecipe(Path(track.root).absolute(),
                                  Path(opts.corpus_dir).expanduser().absolute() if opts.corpus_dir else None,
                                  opts.offline, opts.test_mode)
            await coord.run_challenge(track, challenge.schedule, documents, challenge.name,
                                      step_driver=_step_driver(hooks, schedule), corpus_recipe=recipe,
                                      code_corpora=code_corpora)
    finally:
        coord.close()
        if page is not None:  # what the page showed, however the schedule ended
            console.print(f"Live page kept with the trial: {page.finish(trials_dir() / trial_id)}", highlight=False)
        store.add_telemetry(trial_id, [*pool.pool.telemetry(), *coord.driver_rows])
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        sink.flush()
    return facts, await _collect(targets, gc_before)


def _live_view(opts: RaceOptions, title: str, console: Console) -> tuple[Progress, LivePage | None]:
    """The terminal's live view and, with --live-html, the page it also feeds."""
    page = LivePage(opts.live_html, title) if opts.live_html is not None else None
    if page is not None:
        console.print(f"Live page: {page.path.absolute().as_uri()} (open it in a browser: it reloads every second)",
                      highlight=False)
    return Progress(Console(stderr=True), enabled=opts.progress, frames=[page] if page else []), page


def _step_driver(hooks: list[RaceHook], schedule: RaceSchedule) -> StepDriver:
    """The first hook that drives a step runs it; else the coordinator does."""
    async def drive(step: Task | Parallel, run: RunStep) -> bool:
        for hook in hooks:
            if await hook.drive_step(schedule, step, run):
                return True
        return False
    return drive


async def _collect(targets: list[ClusterTarget], gc_before: GcTotals | None) -> ClusterTotals | None:
    """Totals of the default target after the schedule, with the GC time it took."""
    totals = await _cluster_totals(targets[0]) if targets else None
    gc_after = await _gc_reading(targets[0]) if targets and gc_before is not None else None
    if totals is not None and gc_before is not None and gc_after is not None:
        totals.gc = gc_delta(gc_before, gc_after)
    if totals is not None:  # last: the refresh must not change the segment counts read above
        totals.docs_after_refresh = await refreshed_doc_counts(targets)
    return totals


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
