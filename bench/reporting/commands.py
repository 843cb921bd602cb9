"""``bench compare``, ``bench report`` and ``bench experiment``: argument parsers and handlers (hooked into
``bench.cli``)."""

from __future__ import annotations

import argparse
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from bench.results.exit_status import EXIT_FAILED, EXIT_REGRESSION
from bench.util.errors import BenchError, ConfigError

if TYPE_CHECKING:
    from bench.race.experiment import ExperimentFile, ExperimentResult
    from bench.reporting.study import StudyTable, TableView

FAIL_RULES = ("band", "change-point", "any")


def _noise_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--noise-threshold", type=float, default=0.0, metavar="PCT",
                   help="changes smaller than PCT %% are labelled 'within noise' (default 0: only the CI decides)")
    p.add_argument("--ci-method", choices=["auto", "bootstrap", "welch"], default="auto",
                   help="confidence interval of the difference of means for groups of ≥ 3 trials (default auto: "
                        "Welch's t below 10 trials per side, bootstrap from 10)")


def add_report_parsers(sub: Any) -> list[argparse.ArgumentParser]:
    """Adds compare, report, experiment and history; returns the nested parsers that take the store flags too."""
    c = sub.add_parser("compare", help="compare a baseline with candidates (trials or groups of trials)")
    c.add_argument("trials", nargs="*", metavar="TRIAL",
                   help="baseline then candidates: trial id/prefix, id1,id2,... (a group) or tag:KEY=VALUE[,...]")
    c.add_argument("--baseline", help="baseline selector (then every TRIAL and --candidate is a candidate)")
    c.add_argument("--candidate", action="append", default=[], help="candidate selector (repeatable)")
    c.add_argument("--format", choices=["table", "markdown", "csv", "json"], default="table")
    c.add_argument("--output", help="write to this file instead of the terminal")
    c.add_argument("--all", action="store_true",
                   help="the full table after the headline in the terminal (files and other formats always have it)")
    c.add_argument("--figures-dir", metavar="DIR",
                   help="also write the comparison's self-contained HTML figures (e.g. the profile device's "
                        "differential flame graphs) into DIR, one file each")
    _noise_options(c)

    r = sub.add_parser("report", help="render a markdown or HTML report of a trial or a comparison")
    r.add_argument("trial", nargs="?", help="trial id or unique prefix")
    r.add_argument("--compare", nargs="+", metavar="SELECTOR",
                   help="baseline then candidates (ids, id lists or tag:KEY=VALUE) instead of one trial")
    r.add_argument("--format", choices=["markdown", "html"], default="markdown")
    r.add_argument("--output", help="file to write (default: stdout for markdown, bench-report-<id>.html for html)")
    r.add_argument("--template", help="your own Jinja2 template (context: bench/reporting/context.py)")
    r.add_argument("--plots-dir", help="also write each plot as a PNG into this folder (for gists)")
    _noise_options(r)

    e = sub.add_parser("experiment", help="run a matrix of races from a YAML file, then compare the variants")
    e.add_argument("file", help="experiment file, or a bundled example's name (see experiments/)")
    e.add_argument("--resume", action="store_true", help="continue the newest run, skipping completed races")
    e.add_argument("--run-id", help="resume (or start) this run id")
    e.add_argument("--dry-run", action="store_true", help="print the planned races and stop")
    e.add_argument("--report-format", choices=["markdown", "html"], default="markdown")
    e.add_argument("--report-file", help="write the comparison report here (default: stdout for markdown, "
                                         "<name>-<run>.html for html)")
    e.add_argument("--plots-dir", help="also write each plot as a PNG into this folder")
    e.add_argument("--plugin", action="append", dest="plugins", metavar="[CLUSTER:]PATH",
                   help="as bench race's --plugin, for every race of the experiment (repeatable)")
    e.add_argument("--elasticsearch-plugins", metavar="NAME[:VERSION],...",
                   help="as bench race's, for every race of the experiment")
    e.add_argument("--opensearch-plugins", metavar="NAME[:VERSION],...",
                   help="as bench race's, for every race of the experiment")
    e.add_argument("--test-mode", action="store_true", help="every race in test mode (a quick check of the file)")
    e.add_argument("--repetitions", type=int, help="override the file's repetitions (e.g. 1 for a quick check)")
    e.add_argument("--history", type=int, metavar="N",
                   help="also report this run against the previous N runs of the experiment (its study's key rows)")
    e.add_argument("--fail-on-regression", nargs="?", const="band", choices=FAIL_RULES, metavar="RULE",
                   help=f"with --history: exit {EXIT_REGRESSION} when a key row regressed: 'band' (the default) when "
                        "tonight is outside the noise band on the worse side, 'change-point' when the runs of "
                        "--history end in a step to the worse that tonight confirms (it persisted), 'any' either")
    _noise_options(e)

    h = sub.add_parser("history", help="the nightly history of experiments: a static site of every run")
    h_sub = h.add_subparsers(dest="history_command", required=True, metavar="ACTION")
    site = h_sub.add_parser("site", help="build or update a static site (works from file://) of every run of the "
                                         "experiments: charts per study row and variant over the nights")
    site.add_argument("experiments", nargs="+", metavar="EXPERIMENT",
                      help="experiment files (or bundled examples' names) with a 'study:' block")
    site.add_argument("--output", required=True, metavar="DIR", help="the site's folder (updated in place)")
    site.add_argument("--window", type=int, default=14, metavar="N",
                      help="the noise band of a night is taken over the N nights before it (default 14)")
    return [site]


def _selectors(a: argparse.Namespace) -> tuple[str, list[str]]:
    if a.baseline:
        return a.baseline, [*a.trials, *a.candidate]
    if not a.trials:
        raise ConfigError("bench compare needs BASELINE CANDIDATE... or --baseline SEL --candidate SEL")
    return a.trials[0], [*a.trials[1:], *a.candidate]


def _check_noise(a: argparse.Namespace) -> None:
    if a.noise_threshold < 0:
        raise ConfigError(f"--noise-threshold must be ≥ 0, not {a.noise_threshold:g}")


def _build_comparison(store: Any, baseline: str, candidates: list[str], a: argparse.Namespace,
                      labels: list[str] | None = None, planned: frozenset[str] = frozenset()) -> Any:
    from bench.compare import compare, resolve_sides

    _check_noise(a)
    base, cands, notes = resolve_sides(store, baseline, candidates, labels)
    return compare(base, cands, noise_threshold_pct=a.noise_threshold, ci_method=a.ci_method, notes=notes,
                   planned=planned)


def _compare(a: argparse.Namespace, console: Console) -> int:
    from bench.compare import comparison_renderable, render_comparison
    from bench.results.report import write_report
    from bench.trials.open import open_store

    baseline, candidates = _selectors(a)
    with open_store() as store:
        cmp = _build_comparison(store, baseline, candidates, a)
        if a.figures_dir:
            _write_figures(store, cmp, a.figures_dir, console)
    if a.output:
        path = write_report(render_comparison(cmp, a.format), a.output, option="--output")
        console.print(f"Comparison written to {path}", highlight=False, markup=False)
    elif a.format == "table" and console.is_terminal:
        console.print(comparison_renderable(cmp, width=console.width, full=a.all))
    else:
        # Piped, the table is the terminal's (headline, full table with --all); other formats carry everything.
        # $COLUMNS when set (as a pipe to a gist or a CI log says how wide), else 200.
        width = shutil.get_terminal_size((200, 24)).columns
        text = render_comparison(cmp, a.format, full=a.all, width=width) if a.format == "table" \
            else render_comparison(cmp, a.format)
        console.print(text, highlight=False, markup=False, soft_wrap=True, end="")
    return 0


def _write_figures(store: Any, cmp: Any, folder: str, console: Console) -> None:
    """The figures sections draw as HTML of their own (not plotly charts), each as a page in ``folder``."""
    import html
    from pathlib import Path

    from bench.reporting.plots import all_plots
    from bench.reporting.render import plot_trials

    notes: list[str] = []
    figures = [p for p in all_plots(plot_trials(store, [cmp.baseline, *cmp.candidates]), notes) if p.figure is None]
    out = Path(folder).expanduser()
    try:
        out.mkdir(parents=True, exist_ok=True)
        for p in figures:
            (out / f"{p.key}.html").write_text(
                f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(p.title)}</title></head>"
                f"<body>{p.html}</body></html>\n")
    except OSError as e:
        raise ConfigError(f"--figures-dir {out}: {e.strerror or e}") from None
    for note in notes:
        console.print(note, highlight=False, markup=False)
    for p in figures:
        console.print(f"Figure written to {out / (p.key + '.html')}: {p.title}", highlight=False, markup=False)
    if not figures:
        console.print(f"--figures-dir: the compared trials have no HTML figures (nothing written to {out})",
                      highlight=False, markup=False)


def _emit(report: Any, output: str | None, default_name: str, console: Console) -> None:
    from bench.results.report import write_report

    if output or report.fmt == "html":
        path = write_report(report.text, output or default_name, option="--output")
        console.print(f"Report written to {path}", highlight=False, markup=False)
    else:
        console.print(report.text, highlight=False, markup=False, soft_wrap=True, end="")
    for p in report.png_paths:
        console.print(f"Plot written to {p}", highlight=False, markup=False)


def _report(a: argparse.Namespace, console: Console) -> int:
    from bench.reporting.render import compare_report, trial_report
    from bench.trials.open import open_store

    if bool(a.trial) == bool(a.compare):
        raise ConfigError("bench report needs a TRIAL or --compare BASELINE CANDIDATE... (not both)")
    with open_store() as store:
        if a.compare:
            if len(a.compare) < 2:
                raise ConfigError("--compare needs a baseline and at least one candidate")
            cmp = _build_comparison(store, a.compare[0], a.compare[1:], a)
            report = compare_report(store, cmp, fmt=a.format, template=a.template, plots_dir=a.plots_dir)
            name = f"bench-compare-{cmp.baseline.ids[0][:8]}.html"
        else:
            report = trial_report(store, a.trial, fmt=a.format, template=a.template, plots_dir=a.plots_dir)
            name = f"bench-report-{store.get_trial(a.trial).id[:8]}.html"
    _emit(report, a.output, name, console)
    return 0


def _experiment_overrides(a: argparse.Namespace) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    if a.plugins:
        overrides["plugins"] = a.plugins
    for key in ("elasticsearch_plugins", "opensearch_plugins"):  # official plugins by name, as bench race takes them
        if getattr(a, key, None):
            overrides[key] = getattr(a, key)
    if a.test_mode:
        overrides["test_mode"] = True
    return overrides


def _history_of(store: Any, exp: Any, run_id: str, a: argparse.Namespace, say: Any) -> Any:
    """Tonight against the previous runs: says each regression and confirmed step; ``judged_regressed`` is what
    --fail-on-regression's rule makes of them."""
    from bench.reporting.history import confirmed_steps, history_report

    history = history_report(store, exp, run_id, a.history, ci_method=a.ci_method)
    for r in history.regressions:
        say(f"REGRESSION {r.variant}: {r.label} {r.nights[-1].value:,.2f} {r.unit} is outside the "
            f"noise band {r.band[0]:,.2f} … {r.band[1]:,.2f} ({r.delta_pct:+.1f} % against the "
            f"previous runs)" if r.band and r.delta_pct is not None else f"REGRESSION {r.label}")
    steps = confirmed_steps(history)
    for row, cp in steps:
        say(f"STEP {row.variant}: {row.label} {cp.shift_pct:+.1f} % from run {row.nights[cp.index].run_id} on "
            f"({cp.direction}; median {cp.before:,.2f} → {cp.after:,.2f} {row.unit}), confirmed tonight"
            if cp.shift_pct is not None else f"STEP {row.variant}: {row.label} ({cp.direction})")
    rule = a.fail_on_regression or "band"
    history.judged_regressed = (bool(history.regressions) and rule in ("band", "any")) or \
        (any(cp.direction == "regression" for _r, cp in steps) and rule in ("change-point", "any"))
    return history


def _experiment(a: argparse.Namespace, console: Console) -> int:
    from bench.race.experiment import comparison_selectors, load_experiment, run_experiment, run_verdicts
    from bench.reporting.design import planned_aspects
    from bench.reporting.render import compare_report
    from bench.trials.open import open_store

    _check_noise(a)
    if a.history is not None and a.history < 1:
        raise ConfigError(f"--history {a.history}: use 1 or more previous runs")
    if a.fail_on_regression and a.history is None:
        raise ConfigError("--fail-on-regression needs --history N (the runs to compare tonight with)")
    exp = load_experiment(a.file, _experiment_overrides(a), a.repetitions)
    if a.history is not None and exp.study is None:
        raise ConfigError(f"--history: experiment file {a.file} has no 'study:' block naming the key rows to follow")
    if a.dry_run:
        from bench.race.experiment import dry_run_lines

        for line in dry_run_lines(exp, a.run_id or "dry-run"):
            console.print(line, highlight=False, markup=False)
        return 0
    say = lambda text: console.print(text, highlight=False, markup=False)
    if exp.study is not None and exp.study.note:
        say(exp.study.note)
    with open_store() as store:
        result = run_experiment(exp, store=store, resume=a.resume, run_id=a.run_id, say=say)
    planned = f"up to {result.planned}" if exp.adaptive is not None else str(result.planned)
    say(f"Experiment {exp.name} run {result.run_id}: {planned} races planned, {len(result.ran)} run now, "
        f"{result.skipped} done before, {len(result.failed)} failed.")
    for f in result.failed:
        say(f"  failed: {f}")
    regressed = False
    sweeps = _sweep_tables(exp, result.run_id, say)
    link_sweeps = _link_sweeps(exp, result.run_id, say)
    with open_store() as store:
        for ti, track in enumerate(exp.track_entries()):
            baseline, candidates = comparison_selectors(exp, result.run_id, ti)
            if not candidates:
                say("One variant only: nothing to compare.")
                if exp.study is not None and a.history is not None and ti == 0:  # the nightly trend still holds
                    try:
                        regressed = _history_of(store, exp, result.run_id, a, say).judged_regressed
                    except BenchError as e:  # e.g. tonight's races all failed: no value to judge
                        say(f"No history for {track.label or 'the track'}: {e}")
                break
            labels = [exp.baseline or "", *[v for v in exp.variants if v != exp.baseline]]
            try:
                # What the variants differ in by design is the study's design line, not a warning.
                cmp = _build_comparison(store, baseline, candidates, a, labels, planned_aspects(exp))
            except Exception as e:  # noqa: BLE001 - e.g. a variant whose races all failed
                say(f"No comparison for {track.label or 'the track'}: {e}")
                continue
            study = history = None
            if exp.study is not None and ti == 0:
                study, history = _study_and_history(store, exp, result, a, say)
                regressed = history is not None and history.judged_regressed
            if study is None and result.ended_line and ti == 0:  # no study table to say it under
                cmp.warnings.append(result.ended_line)
            linked = link_sweeps[ti:ti + 1]
            report = compare_report(store, cmp, fmt=a.report_format, plots_dir=a.plots_dir, study=study,
                                    history=history, tables=sweeps[ti:ti + 1] + [v for v, _ in linked],
                                    plots=[p for _, p in linked if p is not None])
            suffix = f"-{ti}" if len(exp.track_entries()) > 1 else ""
            out = a.report_file
            if out and suffix:
                p = Path(out)
                out = str(p.with_name(f"{p.stem}{suffix}{p.suffix}"))
            _emit(report, out, f"{exp.name}-{result.run_id}{suffix}.html", console)
    with open_store() as store:
        verdicts = run_verdicts(store, exp.name, result.run_id)
    for _code, line in verdicts:
        say(f"error: {line}")
    if result.failed:
        return EXIT_FAILED
    if verdicts:
        return min(code for code, _ in verdicts)  # EXIT_UNMEASURED before EXIT_ERROR_RATE
    return EXIT_REGRESSION if regressed and a.fail_on_regression else 0


def _study_and_history(store: Any, exp: ExperimentFile, result: ExperimentResult, a: argparse.Namespace,
                       say: Callable[[str], None]) -> tuple[StudyTable, Any]:
    """The run's study table (every track's rows in one, for the first track's report) with its resolution said
    and what ended the repetitions under it, and the nightly history when asked for."""
    from bench.reporting.study_tracks import tracks_study_table

    study = tracks_study_table(store, exp, result.run_id, ci_method=a.ci_method)
    for line in study.after:  # the resolution (what ended the repetitions was said as it happened)
        say(line)
    if result.ended_line:
        study.after.append(result.ended_line)
    history = _history_of(store, exp, result.run_id, a, say) if a.history is not None else None
    return study, history


def _sweep_tables(exp: ExperimentFile, run_id: str, say: Callable[[str], None]) -> list[TableView]:
    """A study with ``catch-up-within``: each track's follower settings sweep, printed (it is the run's answer,
    also when no comparison can be built) and returned for the reports."""
    if exp.study is None or exp.study.catch_up_within is None:
        return []
    from bench.reporting.study import markdown_table
    from bench.reporting.sweep import sweep_view
    from bench.reporting.sweep_load import load_sweep_table
    from bench.trials.open import open_store

    views = []
    with open_store() as store:
        for ti, _track in enumerate(exp.track_entries()):
            view = sweep_view(load_sweep_table(store, exp, run_id, ti))
            say(markdown_table(view).rstrip())
            views.append(view)
    return views


def _link_sweeps(exp: ExperimentFile, run_id: str, say: Callable[[str], None]) -> list[tuple[TableView, Any]]:
    """A study with ``link-sweep``: each track's table (printed) and plot of lag, catch-up and throughput against the
    link's round trip."""
    if exp.study is None or not exp.study.link_sweep:
        return []
    from bench.reporting.link_sweep import link_sweep_plot, link_sweep_view
    from bench.reporting.link_sweep_load import load_link_sweep
    from bench.reporting.study import markdown_table
    from bench.trials.open import open_store

    out = []
    with open_store() as store:
        for ti, _track in enumerate(exp.track_entries()):
            table = load_link_sweep(store, exp, run_id, ti)
            view = link_sweep_view(table)
            say(markdown_table(view).rstrip())
            out.append((view, link_sweep_plot(table)))
    return out


def _history(a: argparse.Namespace, console: Console) -> int:
    from bench.race.experiment import load_experiment
    from bench.reporting.annotate import all_annotations
    from bench.reporting.site.build import build_site
    from bench.trials.open import open_store

    if a.window < 1:
        raise ConfigError(f"--window {a.window}: use 1 or more nights")
    exps = [load_experiment(f) for f in a.experiments]
    names = [e.name for e in exps]
    if len(set(names)) != len(names):
        raise ConfigError(f"experiment {next(n for n in names if names.count(n) > 1)} is given twice")
    annotations = all_annotations()
    with open_store() as store:
        result = build_site(store, exps, Path(a.output).expanduser(), window=a.window, annotations=annotations)
    # The site is built around a damaged trial (its night marked): the nightly job publishes it and exits 0,
    # the damage said here, one line per trial, and in bench's log.
    warn = Console(stderr=True, soft_wrap=True, emoji=False)
    for line in result.damaged:
        logging.getLogger(__name__).warning("history site: damaged %s", line)
        warn.print(f"warning: damaged {line}", highlight=False, markup=False)
    console.print(f"History site {result.output}: {result.nights} night(s), {result.charts} chart(s); "
                  f"{len(result.written)} file(s) written, {result.unchanged} unchanged, {len(result.removed)} removed; "
                  f"{result.summaries_read} trial summaries read; {result.seconds:.1f} s. Open "
                  f"{Path(result.output).resolve() / 'index.html'}", highlight=False, markup=False)
    return 0


def run_report_command(a: argparse.Namespace, console: Console) -> int:
    if a.command == "history":
        return _history(a, console)
    if a.command == "compare":
        return _compare(a, console)
    if a.command == "report":
        return _report(a, console)
    return _experiment(a, console)
