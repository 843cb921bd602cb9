"""The commands over stored trials: ``bench list``, ``show``, ``delete``, ``stop`` (a kept cluster) and ``store push``
(the shared metrics store)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console

from bench.cli.common import MACHINE_FORMATS, track_repository_flags
from bench.cli.race import machine_report, terminal_report
from bench.cli.tracks import list_tracks, list_workloads
from bench.trials.filter import add_race_filters
from bench.util import redact
from bench.util.errors import ConfigError


def add_parsers(sub: Any) -> list[argparse.ArgumentParser]:
    ls = sub.add_parser("list", help="list trials (races), tracks, workloads, cars, telemetry devices or annotations")
    ls.add_argument("what", nargs="?", default="trials",
                    choices=["trials", "races", "test-runs", "tracks", "workloads", "cars", "telemetry", "annotations"],
                    help="what to list (default: trials; races and test-runs are the same, Rally's and OSB's names; "
                         "workloads: OSB's workload repository; annotations take --track, --from-date, --to-date)")
    ls.add_argument("--limit", type=int, default=30)
    track_repository_flags(ls)
    ls.add_argument("--distribution-version", help="tracks: the version whose branch of the track repository to list")
    ls.add_argument("--offline", action="store_true", help="tracks: do not update the track repository")
    add_race_filters(ls)

    de = sub.add_parser("delete", help="delete stored races or annotations (Rally's 'delete race/annotation'), also "
                                       "from a metrics store")
    de.add_argument("what", choices=["race", "annotation"], help="race or annotation")
    de.add_argument("--id", required=True, help="trial (race) ids or unique prefixes, or annotation ids, comma-separated")
    de.add_argument("--dry-run", action="store_true", help="say what would be deleted, delete nothing")

    sh = sub.add_parser("show", help="print the summary of a stored trial")
    sh.add_argument("trial", help="trial id or unique prefix")
    sh.add_argument("--report-format", choices=["table", "markdown", "csv", "json"], default="table")
    sh.add_argument("--all", action="store_true", help="the full table after the headline (files always have it)")
    sh.add_argument("--live-html", metavar="PATH", help="write the live page the race kept (bench race --live-html) "
                                                        "to PATH, as it ended")

    st = sub.add_parser("stop", help="stop the nodes a --keep-cluster race left running, keep their logs, "
                                      "delete their folders")
    st.add_argument("trial", help="trial id or unique prefix")

    sto = sub.add_parser("store", help="the shared metrics store: push trials from the local store into it")
    sto_sub = sto.add_subparsers(dest="store_command", required=True, metavar="ACTION")
    push = sto_sub.add_parser("push", help="push trials (default: every local trial not yet wholly in the store)")
    push.add_argument("trials", nargs="*", help="trial ids or unique prefixes")
    return [push]


def run_list(a: argparse.Namespace, console: Console) -> int:
    from tabulate import tabulate

    if a.what == "tracks":
        list_tracks(a, console)
    elif a.what == "workloads":
        list_workloads(a, console)
    elif a.what == "telemetry":
        from bench.telemetry import device_table
        from bench.telemetry.config import available_profiles, load_profile

        console.print(tabulate(device_table(), headers=["Device", "Parameter", "Default", "Description"]),
                      markup=False)
        profiles = [(n, ",".join(load_profile(n).devices), load_profile(n).description) for n in available_profiles()]
        if profiles:
            console.print("\n" + tabulate(profiles, headers=["Profile", "Devices", "Description"]), markup=False)
    elif a.what == "annotations":
        from bench.reporting.annotate import list_annotations

        return list_annotations(a, lambda line: console.print(line, markup=False, highlight=False))
    elif a.what == "cars":
        from bench.provision.car import list_cars

        console.print(tabulate(list_cars(), headers=["Name", "Type", "Description"]), markup=False)
    else:
        from bench.results.summary import status_label
        from bench.trials.filter import race_filter, races_json
        from bench.trials.listing import render_trial_list
        from bench.trials.open import open_store

        wanted = race_filter(a)
        with open_store() as store:
            # Filtered after reading: the stores list newest first; a filter reads them all (at most 10,000).
            trials = store.list_trials(10_000 if wanted.active() else a.limit)
            trials = [t for t in trials if wanted.matches(t)][:a.limit]
            statuses = {t.id: status_label(t.status, store.summary(t.id)) for t in trials}
            # With a metrics store, where each trial is: only in the local file, in the store, or both.
            where = store.locations([t.id for t in trials]) if hasattr(store, "locations") else {}
            statuses = {k: f"{v} [{where[k]}]" if k in where else v for k, v in statuses.items()}
            unreachable = getattr(store, "unreachable", None)
            damaged = list(store.damaged)
        for d in damaged:  # left out of the list: one line each (stderr: --format json stays JSON)
            print(f"warning: trial {d.id} cannot be read: {redact.redact_text(d.problem)}", file=sys.stderr)
        if unreachable:
            console.print(f"note: {redact.redact_text(unreachable)}: local trials only", markup=False, highlight=False)
        if a.format == "json":
            console.print(races_json(trials, statuses), markup=False, highlight=False, soft_wrap=True)
            return 0
        console.print(render_trial_list(trials, statuses, console.width if console.is_terminal else None),
                      markup=False, highlight=False, soft_wrap=True)
    return 0


def run_delete(a: argparse.Namespace, console: Console) -> int:
    if a.what == "annotation":
        from bench.reporting.annotate import delete_annotations

        return delete_annotations(a, lambda line: console.print(line, markup=False, highlight=False))
    from bench.trials.delete import delete_races

    for line in delete_races(a.id, dry_run=a.dry_run):
        console.print(line, markup=False, highlight=False)
    return 0


def run_show(a: argparse.Namespace, console: Console) -> int:
    from bench.results.report import render_summary
    from bench.results.summary import status_label
    from bench.trials.open import open_store
    from bench.trials.summary import stored_summary

    with open_store() as store:
        trial = store.get_trial(a.trial)
        summary = stored_summary(store, trial.id)
    if getattr(a, "live_html", None):
        from bench.race.live_html import checked_path, show_kept
        from bench.util.home import trials_dir

        out = checked_path(a.live_html)
        assert out is not None
        show_kept(trials_dir() / trial.id, trial.id, out)
        console.print(f"Live page of trial {trial.id}: {out.absolute().as_uri()}", highlight=False, markup=False)
        return 0
    if a.report_format in MACHINE_FORMATS:  # the document and nothing else: it must parse
        print(machine_report(trial, summary, a.report_format), end="")
        return 0
    console.print(f"Trial {trial.id}: {trial.track}/{trial.challenge}, {status_label(trial.status, summary)}, started "
                  f"{trial.start_time:%Y-%m-%d %H:%M:%S} UTC" + (f", error: {trial.error}" if trial.error else ""),
                  highlight=False, markup=False)
    from bench.provision.facts_text import distribution_text
    from bench.track.synthetic_corpora import corpora_text

    if (synthetic := corpora_text(trial.corpora)) is not None:
        console.print(synthetic, highlight=False, markup=False)

    for c in trial.clusters:  # what each cluster bench started was installed from and ran on
        if (text := distribution_text(c)) is not None:
            console.print(f"Cluster {c.get('name')}: {c.get('engine')} {c.get('version')}, car {c.get('car', '?')}, "
                          f"{text}", highlight=False, markup=False)
    if summary is None:
        console.print("No samples were stored for this trial.")
        return 0
    console.print(terminal_report(summary, render_summary(summary, a.report_format), a, console), highlight=False,
                  markup=False, soft_wrap=True)
    return 0


def run_store(a: argparse.Namespace, console: Console) -> int:
    from bench.trials.metrics_store.config import configured_store
    from bench.trials.metrics_store.pusher import push_command

    cfg = configured_store()
    if cfg is None:
        raise ConfigError("bench store push needs a metrics store: --metrics-store URL, BENCH_METRICS_STORE or "
                          "[reporting] datastore.* in $BENCH_HOME/bench.ini")
    lines, failed = push_command(cfg, a.trials)
    for line in lines:
        console.print(line, highlight=False, markup=False)
    return 1 if failed else 0


def run_stop(a: argparse.Namespace, console: Console) -> int:
    from bench.provision.stop import stop_trial
    from bench.trials.open import open_store
    from bench.util.home import trials_dir

    with open_store() as store:
        trial = store.get_trial(a.trial)
    for line in stop_trial(trial.id, trials_dir() / trial.id):
        console.print(line, highlight=False, markup=False)
    return 0
