"""nox sessions: tests (the whole suite, against real Elasticsearch), lint, bench (benchmarks)."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    session.install("-e", ".[test]")
    session.run("pytest", "-q", "-ra", "--durations=15", *session.posargs)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "bench", "tests", "benchmarks")


@nox.session(python="3.11")
def bench(session: nox.Session) -> None:
    """Benchmarks (run by hand; they print numbers, they do not pass or fail on speed)."""
    session.install("-e", ".")
    session.run("python", "benchmarks/driver_ceiling.py", *session.posargs)
    session.run("python", "benchmarks/store_writes.py")
