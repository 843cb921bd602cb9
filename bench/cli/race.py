"""``bench race``: its flags come from the race options' declarations (``bench/race/flags.py``); this module checks
what spans several of them, runs the race and prints its summary and exit code."""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from rich.console import Console

from bench.cli.common import MACHINE_FORMATS, ensure_backend, mark_client_secrets, validation_line
from bench.race.flags import add_race_flags, race_fields
from bench.race.rally_flags import add_refused_flags, refuse_rally_flags
from bench.util import redact
from bench.util.errors import ConfigError

if TYPE_CHECKING:
    from bench.race.options import RaceOptions
    from bench.race.pipeline import RaceResult


def add_parser(sub: Any) -> None:
    r = sub.add_parser("race", help="run a benchmark (a trial) and print its summary")
    add_race_flags(r)
    add_refused_flags(r)


def _check_flags(a: argparse.Namespace, console: Console) -> None:
    """What no single option's declaration can say: the pipeline, and flags that exclude or need each other."""
    from bench.http.client import parse_target_hosts

    refuse_rally_flags(a)
    if a.pipeline in ("from-sources", "docker"):
        raise ConfigError(f"--pipeline={a.pipeline} is not supported: bench starts official release archives "
                          f"(--pipeline=from-distribution) or benchmarks existing hosts (--pipeline=benchmark-only); "
                          f"it neither builds from sources nor runs Docker containers")
    if a.pipeline not in (None, "benchmark-only", "from-distribution"):
        raise ConfigError(f"--pipeline={a.pipeline}: use benchmark-only or from-distribution")
    if a.topology and a.target_hosts:
        raise ConfigError("--topology and --target-hosts exclude each other: the topology's clusters are the targets")
    if not a.track and not a.track_path:
        raise ConfigError("bench race needs --track=NAME (see 'bench list tracks'), --track-path=DIR, "
                          "--workload=NAME or --workload-path=DIR")
    if a.multi_cluster and (not a.target_hosts or len(parse_target_hosts(a.target_hosts)) < 2):
        raise ConfigError("--multi-cluster needs --target-hosts naming several clusters, e.g. "
                          "'{\"leader\": [\"h1:9200\"], \"follower\": [\"h2:9200\"]}'")
    if a.runtime_jdk is not None and not re.match(r"^(bundled|[1-9][0-9]?)$", a.runtime_jdk):
        raise ConfigError(f"--runtime-jdk={a.runtime_jdk}: use bundled or a JDK major version such as 17")
    if a.preserve_install:
        console.print("--preserve-install: bench keeps the cluster running with its data (as --keep-cluster); "
                      "stop it with 'bench stop TRIAL'", highlight=False, markup=False)


def race_options(a: argparse.Namespace, console: Console) -> RaceOptions:
    """The parsed command line as validated ``RaceOptions``; every bad value one line naming its flag."""
    from bench.race.options import RaceOptions

    fields = race_fields(a)  # OSB's flags first become the track flags they stand for
    _check_flags(a, console)
    mark_client_secrets(fields["client_options"])
    ensure_backend(a, fields["load_driver"])
    try:
        opts = RaceOptions(**fields)
    except ValidationError as e:
        raise validation_line(dict(e.errors()[0])) from None
    _check_provisioning_flags(opts, a.plugin_params)
    return opts


def run(a: argparse.Namespace, console: Console) -> int:
    from bench.race.race import run_race

    opts = race_options(a, console)
    if a.report_format in (*MACHINE_FORMATS, "junit"):  # stdout carries the document only; the rest goes to stderr
        result = run_race(opts, console=Console(stderr=True, soft_wrap=True, emoji=False))
        from bench.trials.open import open_store

        with open_store() as store:
            trial = store.get_trial(result.trial_id)
        if a.report_format == "junit":
            from bench.race.race_report import race_report

            print(race_report(result.summary, "junit", trial, trial.status), end="")
        else:
            print(machine_report(trial, result.summary, a.report_format), end="")
        return _exit_code(result, opts.max_error_rate)
    result = run_race(opts, console=console)
    from bench.results.summary import status_label

    console.print()
    console.print(terminal_report(result.summary, result.report, a, console), highlight=False, markup=False,
                  soft_wrap=True)
    console.print(f"\nTrial [bold]{result.trial_id}[/bold] stored ({status_label(result.status, result.summary)}).",
                  highlight=False)
    return _exit_code(result, opts.max_error_rate)


def _exit_code(result: RaceResult, max_error_rate: float | None) -> int:
    """The race's exit code in every report format, with its one line on stderr (docs: exit codes)."""
    from bench.results.exit_status import EXIT_FAILED, run_exit_code

    if result.store_refused:
        return EXIT_FAILED  # its line was printed when the store was closed
    code, line = run_exit_code(result.summary, max_error_rate)
    if line is not None:
        stderr = Console(stderr=True, soft_wrap=True, emoji=False)
        stderr.print(f"error: trial {result.trial_id}: {redact.redact_text(line)} (exit {code})",
                     highlight=False, markup=False, style="red")
    return code


def _check_provisioning_flags(opts: RaceOptions, plugin_params: str | None) -> None:
    """Bad --distribution/--plugin/--*-plugins values fail before a trial is created."""
    from bench.provision.overrides import named_plugins, parse_distribution, parse_plugins
    from bench.provision.plugin_names import refuse_plugin_params

    refuse_plugin_params(plugin_params)
    given = [flag for flag, value in (("--distribution", opts.distribution), ("--plugin", opts.plugins),
                                      ("--elasticsearch-plugins", opts.elasticsearch_plugins),
                                      ("--opensearch-plugins", opts.opensearch_plugins)) if value]
    if not given:
        return
    if opts.target_hosts:
        raise ConfigError(f"{', '.join(given)}: for clusters bench starts, not --target-hosts (install plugins into "
                          f"existing clusters yourself; the trial records the plugins each cluster runs)")
    parse_distribution(opts.distribution, opts.distribution_version)
    parse_plugins(opts.plugins)
    named_plugins(opts.elasticsearch_plugins, opts.opensearch_plugins)


def terminal_report(summary: Any, report: str, a: argparse.Namespace, console: Console) -> str:
    """What the terminal gets: the headline and notes, the full table with --all (files always get it)."""
    if summary is None or a.report_format != "table":
        return report
    from bench.results.report import render_summary

    full = a.all or getattr(a, "show_in_report", "available") != "available"  # Rally's --show-in-report=all
    return render_summary(summary, "table", full=full, width=max(60, console.width))


def machine_report(trial: Any, summary: Any, fmt: str) -> str:
    """A trial as json (its facts beside its rows, notes and errors) or csv (the rows)."""
    import json

    from bench.reporting.context import trial_facts
    from bench.results.report import HEADERS, render_summary, summary_document

    if fmt == "csv":
        return render_summary(summary, "csv") if summary is not None else ",".join(HEADERS) + "\n"
    doc = summary_document(summary) if summary is not None else {"rows": [], "notes": [], "errors": []}
    return json.dumps(redact.redact({"trial": trial_facts(trial, summary), **doc}), indent=2) + "\n"
