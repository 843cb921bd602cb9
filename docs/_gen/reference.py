"""The generated parts of the docs: the CLI reference from bench's own argparse parser, and one API page per
module of the ``bench`` package.

Both are made at build time (``gen_pages.py``, run by the mkdocs-gen-files plugin), never committed: an option
added to ``bench/cli/`` (or ``bench/race/flags.py``) or a module moved in ``bench/`` shows up in the next build, and nothing can go stale.
Pure functions of the source tree, without mkdocs, so ``tests/project/test_docs.py`` can call them.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "bench"
CLI_PAGE = "reference/cli.md"
RACE_OPTIONS_PAGE = "reference/race-options.md"
API_DIR = "reference/api"
# Where each generated page or folder appears in mkdocs.yml's nav: tests/project/test_docs.py accepts these as existing.
GENERATED = (CLI_PAGE, RACE_OPTIONS_PAGE, API_DIR + "/")


def _md(text: str) -> str:
    """Help text as a markdown table cell: '<dir>' would vanish as an HTML tag, '|' would split the cell."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
            .replace("*", "\\*").replace("\n", " "))


def _flags(action: argparse.Action) -> str:
    if not action.option_strings:
        name = action.metavar or action.dest
        return f"`{name}`" + (" …" if action.nargs in ("*", "+") else "")
    # The value's name only where it says something (an explicit metavar, the choices): argparse's default,
    # the flag in capitals, repeats the flag and squeezes the table's first column.
    metavar = ""
    if action.nargs != 0:
        if action.choices:
            metavar = "{" + ",".join(str(c) for c in action.choices) + "}"
        elif action.metavar:
            metavar = str(action.metavar)
    return ", ".join(f"`{s} {metavar}`" if metavar else f"`{s}`" for s in action.option_strings)


def _default(action: argparse.Action) -> str:
    d = action.default
    if d in (None, False, argparse.SUPPRESS, []) or action.nargs == 0 or isinstance(action, argparse._HelpAction):
        return ""
    return f"`{d}`"


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    # argparse's own expansion: '%(default)s' and '%%' read as they do in --help.
    return _md(parser._get_formatter()._expand_help(action))


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def _command(parser: argparse.ArgumentParser, title: str, summary: str, level: int) -> list[str]:
    out = [f"{'#' * level} `{title}`", ""]
    if summary:
        out += [_md(summary)[0].upper() + _md(summary)[1:] + ".", ""]
    out += ["```text", parser.format_usage().strip(), "```", ""]
    rows = [a for a in parser._actions
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]
    if rows:
        out += ["| argument | default | meaning |", "|---|---|---|"]
        out += [f"| {_flags(a)} | {_default(a)} | {_help(parser, a)} |" for a in rows]
        out.append("")
    for name, help_text, sub in _subcommands(parser):
        out += _command(sub, f"{title} {name}", help_text, min(level + 1, 4))
    return out


def cli_reference() -> str:
    """The whole command line as markdown: every subcommand's usage and arguments, from ``bench.cli.build_parser()``."""
    from bench.cli import build_parser

    parser = build_parser()
    head = [
        "# Command line reference",
        "",
        "Generated from `bench.cli.build_parser()` each time the docs are built, so it always matches the code. "
        "`bench COMMAND --help` prints the same. Options given before the command (`--quiet`, the metrics "
        "store flags) also work after it.",
        "",
    ]
    # argparse wraps usage lines at the terminal's width: the same page on every machine, and the caller's
    # environment as it was.
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        return "\n".join(head + _command(parser, "bench", "", 2)) + "\n"
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def race_options_page() -> str:
    """Every ``bench race`` option from its one declaration (``bench/race/flags.py``): flags with Rally's and OSB's
    spellings, default, meaning, and what a cloud topology's race does with it."""
    from bench.cli import build_parser
    from bench.race.flags import options_table

    race = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["race"]
    return ("# Race options\n\n"
            "Every option of `bench race`, generated from its one declaration in `bench/race/flags.py` each time the "
            "docs are built. Rally's and OpenSearch Benchmark's spellings of an option are listed beside bench's. "
            "The last column says what a [cloud topology's race](../guide/cloud.md), which runs a second `bench "
            "race` on a driver host, does with it. `bench race --help` prints the same flags.\n\n"
            + options_table(race))


def api_modules() -> list[tuple[str, str]]:
    """(dotted module name, page path) for every module of the ``bench`` package, packages first."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__main__":
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
            page = "/".join(parts) + "/index.md"
        else:
            page = "/".join(parts) + ".md"
        out.append((".".join(parts), f"{API_DIR}/{page}"))
    return sorted(out, key=lambda m: m[0].split("."))


def api_page(module: str) -> str:
    return f"# `{module}`\n\n::: {module}\n"


def api_nav() -> str:
    """The API section's nav (literate-nav's SUMMARY.md): one entry per module, nested like the package."""
    lines = []
    for module, page in api_modules():
        depth = module.count(".")
        rel = page.removeprefix(API_DIR + "/")
        lines.append(f"{'    ' * depth}- [{module.rsplit('.', 1)[-1] if depth else module}]({rel})")
    return "\n".join(lines) + "\n"
