"""``main``: the composition root. Parses the command line (``bench.cli.table``), sets up the log and the metrics
store, runs the command, and turns every BenchError into one line on stderr with its exit code; anything else is a
bug and keeps its traceback (in the log file, and on stderr)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from bench.cli.common import ensure_redline
from bench.cli.table import build_parser, command, needs_redline
from bench.util import redact
from bench.util.errors import BenchError, ConfigError
from bench.util.home import STORAGE_ERRNOS, bench_home, bench_home_path, storage_error
from bench.util.memory import address_space_limit, no_thread, out_of_memory

_PACKAGE = Path(__file__).resolve().parents[1]  # bench/, whose own modules are compiled and linted in CI

log = logging.getLogger("bench")


def _setup_logging() -> Path:
    home = bench_home()
    path = home / "logs" / "bench.log"
    # A log file that later cannot be written (disk full) must not print a traceback per record; the
    # failure that matters reaches the user through the code that hit it.
    logging.raiseExceptions = False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path)
    except OSError as e:
        raise storage_error(home, e) from None
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    redact.install_log_filter()
    return path


def _configure_store(a: argparse.Namespace) -> None:
    """--metrics-store for this process; without it the environment or bench.ini decide (when a store is used)."""
    from bench.trials.metrics_store import config

    if getattr(a, "metrics_store", None):
        config.configure(config.from_cli(a.metrics_store, getattr(a, "metrics_store_options", None)))
    elif getattr(a, "metrics_store_options", None):
        raise ConfigError("--metrics-store-options needs --metrics-store URL")
    else:
        config.reset()


def _run(args: argparse.Namespace, console: Console) -> int:
    _setup_logging()
    _configure_store(args)
    if needs_redline(args.command):
        ensure_redline()
    return command(args.command).run(args, console)


def _fail(err: Console, line: str) -> None:
    err.print(f"error: {line}", highlight=False, markup=False, style="red")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # soft_wrap: an error (or a trial id) stays one line however narrow the terminal is; emoji=False: user
    # text such as host 'a:b:c' must not turn ':b:' into an emoji.
    console = Console(soft_wrap=True, emoji=False)
    err = Console(stderr=True, soft_wrap=True, emoji=False)
    memory = out_of_memory("bench", "raise the limit or run it where more memory is free")
    try:
        return _run(args, console)
    except BenchError as e:
        if logging.getLogger().handlers:  # else logging's last-resort handler would print the line twice
            log.error("%s", e)
        _fail(err, redact.redact_text(str(e)))
        return e.exit_code
    except KeyboardInterrupt:
        err.print("[bold red]interrupted[/bold red]")
        return 130
    except MemoryError:
        _fail(err, memory)
        return 1
    except (SyntaxError, SystemError) as e:
        # Importing bench's own modules under an address-space limit: CPython reports running out of memory while
        # compiling or importing as a syntax error or "error return without exception set" (bench's sources are
        # compiled and linted in CI), so it is memory, not code.
        own = isinstance(e, SystemError) or (e.filename and Path(e.filename).resolve().is_relative_to(_PACKAGE))
        if not (address_space_limit() and own):
            raise
        _fail(err, memory)
        return 1
    except RuntimeError as e:
        if "can't start new thread" not in str(e):  # CPython's only sign of it: no type of its own
            raise
        _fail(err, no_thread("bench"))
        return 1
    except OSError as e:
        # A read-only or full disk under any code path is the user's to fix, not a bug to show a traceback for.
        if e.errno not in STORAGE_ERRNOS:
            raise
        msg = str(storage_error(e.filename or bench_home_path(), e, "path"))
        if logging.getLogger().handlers:
            log.error("%s", msg)
        _fail(err, msg)
        return 1
