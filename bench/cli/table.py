"""The command table: every ``bench`` command, the module that registers its parser, and its handler.

A command registers its parser(s) with ``add(subparsers)`` (returning nested parsers that also take the metrics
store flags) and runs with ``run(namespace, console) -> exit code``. ``build_parser`` makes the whole command line
from this table; ``bench.cli.app.main`` dispatches through it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from bench import __version__
from bench.cli import loadgen, race, tracks, trials
from bench.cli.common import store_flags

Run = Callable[[argparse.Namespace, Console], int]


@dataclass(frozen=True)
class Command:
    names: tuple[str, ...]  # the subcommands the parsers of ``add`` register
    add: Callable[[Any], Any]
    run: Run
    store: bool = True  # takes --metrics-store after the subcommand


def _cloud_add(sub: Any) -> None:
    from bench.cloud.cli import add_cloud_parser

    add_cloud_parser(sub)


def _cloud_run(a: argparse.Namespace, console: Console) -> int:
    from bench.cloud.cli import run_cloud

    return run_cloud(a, console)


def _reports_add(sub: Any) -> list[argparse.ArgumentParser]:
    from bench.reporting.commands import add_report_parsers

    return add_report_parsers(sub)  # compare, report, experiment, history (site)


def _reports_run(a: argparse.Namespace, console: Console) -> int:
    from bench.reporting.commands import run_report_command

    return run_report_command(a, console)


def _annotation_add(sub: Any) -> None:
    from bench.reporting.annotate import add_annotation_parsers

    add_annotation_parsers(sub)  # add annotation ('delete annotation' is the delete parser's)


def _annotation_run(a: argparse.Namespace, console: Console) -> int:
    from bench.reporting.annotate import add_annotation

    return add_annotation(a, lambda line: console.print(line, markup=False, highlight=False))


def _by_name(**handlers: Run) -> Run:
    """One handler per subcommand of a module that registers several."""
    return lambda a, console: handlers[a.command.replace("-", "_")](a, console)


COMMANDS: tuple[Command, ...] = (
    Command(("race",), race.add_parser, race.run),
    Command(("loadgen",), loadgen.add_parser, loadgen.run),
    Command(("info", "render-track"), tracks.add_parsers,
            _by_name(info=tracks.run_info, render_track=tracks.run_render_track), store=False),
    Command(("list", "delete", "show", "stop", "store"), trials.add_parsers,
            _by_name(list=trials.run_list, delete=trials.run_delete, show=trials.run_show, stop=trials.run_stop,
                     store=trials.run_store)),
    Command(("cloud",), _cloud_add, _cloud_run, store=False),
    Command(("compare", "report", "experiment", "history"), _reports_add, _reports_run),
    Command(("add",), _annotation_add, _annotation_run),
)
# Subcommands that register no store flags although their command's others do.
_NO_STORE_FLAGS = {"stop"}
# Subcommands that run or show redlines: the redline extension must be loaded for them.
_REDLINE = {"race", "show", "compare", "report", "experiment", "history"}


def command(name: str) -> Command:
    return next(c for c in COMMANDS if name in c.names)


def needs_redline(name: str) -> bool:
    return name in _REDLINE


def build_parser() -> argparse.ArgumentParser:
    """The whole ``bench`` command line, from the command table."""
    p = argparse.ArgumentParser(prog="bench", description="Benchmark Elasticsearch and OpenSearch clusters.")
    p.add_argument("--version", action="version", version=f"bench {__version__}")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    store_flags(p, None)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for c in COMMANDS:
        nested = c.add(sub) or []
        if not c.store:
            continue
        for parser in [*[sub.choices[n] for n in c.names if n not in _NO_STORE_FLAGS], *nested]:
            store_flags(parser, argparse.SUPPRESS)
    return p
