"""nox sessions: tests (the whole suite, against real Elasticsearch; then lint and docs), unit (the tests that start
no engine, no Ray and no network namespace: minutes, no Java), lint (ruff, mypy), docs, bench (benchmarks).
docs/extending/developing.md tells which needs what."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox
import nox.command

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

# Debian packages some tests drive for real: sshd (the cloud driver host over SSH) and Chromium (the HTML
# report check and PNG export of plots). Installed when missing and we may (root with apt); the tests that
# need them skip with a reason otherwise.
SYSTEM_PACKAGES = {"/usr/sbin/sshd": "openssh-server", "chromium": "chromium"}


def _system_packages(session: nox.Session) -> None:
    missing = [pkg for exe, pkg in SYSTEM_PACKAGES.items()
               if not (os.path.exists(exe) if exe.startswith("/") else shutil.which(exe))]
    if not missing or os.geteuid() != 0 or not shutil.which("apt-get"):
        return
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    session.run("apt-get", "update", "-qq", external=True, env=env)
    session.run("apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing, external=True, env=env)


REPLICATION_PLUGIN_ENV = "BENCH_OPENSEARCH_REPLICATION_PLUGIN"
REPLICATION_PLUGIN = Path("opensearch-replication-plugin", "opensearch-cross-cluster-replication-2.19.1.0.zip")


def replication_plugin(root: Path = Path(__file__).resolve().parent) -> Path | None:
    """The replication plugin zip in the shared folder beside the project (``../shared``, or ``$BENCH_SHARED``; the
    tests find it the same way: tests/support/shared_tree.py), if it is there."""
    shared = Path(os.environ.get("BENCH_SHARED") or root.parent / "shared")
    path = (shared / REPLICATION_PLUGIN).resolve()
    return path if path.is_file() else None


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    # The whole suite (CI's `nox -s tests`) runs lint and docs after it, whether or not the tests pass, in its own
    # venv: the two sessions' venvs cost CI another install of bench's dependencies each. A run of some tests
    # (`nox -s tests -- tests/results/test_stats.py`) runs only them.
    whole = not session.posargs
    _system_packages(session)
    # Only the project's declared dependencies: no user site-packages (tests/conftest.py also refuses a venv
    # that sees the base interpreter's).
    session.env["PYTHONNOUSERSITE"] = "1"
    # .[ray]: the Ray load-driver tests start a two-node Ray cluster of their own
    session.install("-e", ".[test,ray,lint,docs]" if whole else ".[test,ray]")
    # The live CCR tests need the OpenSearch replication plugin, published on no registry reachable here; CI
    # (and a developer with the shared folder) has it beside the project.
    plugin = replication_plugin()
    if plugin is not None and REPLICATION_PLUGIN_ENV not in os.environ:
        session.env[REPLICATION_PLUGIN_ENV] = str(plugin)
    try:
        session.run("pytest", "-q", "-ra", "--durations=25", *session.posargs)
    except nox.command.CommandFailed:
        if not whole:
            raise
        _checks(session)
        session.error("the tests failed (lint and docs ran after them, above)")
    if whole:
        _checks(session)


def _checks(session: nox.Session) -> None:
    _lint(session)
    _docs(session)


@nox.session(python="3.11")
def unit(session: nox.Session) -> None:
    """The unit tier (``-m unit``): every test that requests none of local_engines, ray_nodes and netns_hosts
    (tests/support/tiers.py). No Java, no Ray, no root, no apt packages; a test starting an engine node, a Ray node or a
    namespace without its marker fails in one line (it would in `nox -s tests` too)."""
    session.env["PYTHONNOUSERSITE"] = "1"
    session.install("-e", ".[test]")
    session.run("pytest", "-q", "-ra", "-m", "unit", "--durations=10", *session.posargs)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff over bench/, tests/ and benchmarks/, mypy over bench/ (both configured in pyproject.toml)."""
    # .[lint]: ruff, mypy and the stubs of the dependencies without types of their own; bench's dependencies
    # (.[ray] too) so that mypy checks the calls into them against their own types.
    session.install("-e", ".[lint,ray]")
    _lint(session)


def _lint(session: nox.Session) -> None:
    session.run("ruff", "check", "bench", "tests", "benchmarks")
    session.run("mypy")


@nox.session(python="3.11")
def docs(session: nox.Session) -> None:
    """The manual (docs/, mkdocs.yml) built with --strict: a broken link, a missing page or any warning fails.
    The CLI and API references are generated from the code during the build (docs/_gen)."""
    session.install("-e", ".[docs]")
    _docs(session, *session.posargs)


def _docs(session: nox.Session, *args: str) -> None:
    # Banners mkdocs-material and a plugin print about MkDocs 2.0 on every build: noise, not warnings.
    session.env.update({"NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"})
    session.run("mkdocs", "build", "--strict", *args)


@nox.session(python="3.11")
def bench(session: nox.Session) -> None:
    """Benchmarks (run by hand; they print numbers, they do not pass or fail on speed)."""
    session.install("-e", ".")
    session.run("python", "benchmarks/driver_ceiling.py", *session.posargs)
    session.run("python", "benchmarks/store_writes.py")


@nox.session(python="3.11")
def sidebyside(session: nox.Session) -> None:
    """bench next to the raw probe, OpenSearch Benchmark and Rally, into the null sink and a real cluster (prints
    numbers; installs OSB and esrally into venvs under the bench cache on first use)."""
    session.install("-e", ".")
    session.run("python", "benchmarks/throughput_side_by_side.py", *session.posargs)

