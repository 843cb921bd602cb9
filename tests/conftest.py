"""Shared fixtures. Every test gets a fresh BENCH_HOME (its own trial store and logs) while downloads
stay cached in BENCH_CACHE (``tests.esnode.default_cache``: empty at the start of a CI run); tests that only need *a*
cluster share one real Elasticsearch per session."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.provision.model import ClusterInfo
from tests.esnode import default_cache, start_cluster
from tests.isolation import leaked

# The official download sites are unreachable here (see ../shared/ENVIRONMENT.md): the suite runs Maven Central's
# integ-test builds, chosen explicitly so no test depends on the release repository's fallback. Tests of the
# release repository itself serve official-layout archives locally (tests/official_archives.py) and override this.
os.environ.setdefault("BENCH_DISTRIBUTION_REPOSITORY", "maven-integ-test")


def pytest_sessionstart(session: pytest.Session) -> None:
    # Under nox (so in CI) the suite must see only the project's declared dependencies: a venv that also
    # sees the base interpreter's packages passes here and fails on a fresh machine.
    if os.environ.get("NOX_CURRENT_SESSION") and leaked(sys.path):
        pytest.exit(f"the test environment sees the base interpreter's site-packages {sorted(leaked(sys.path))}: "
                    f"make the nox venv without system site-packages", returncode=3)


@pytest.fixture(autouse=True)
def bench_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "bench-home"
    monkeypatch.setenv("BENCH_HOME", str(home))
    monkeypatch.setenv("BENCH_CACHE", default_cache())
    return home


@pytest.fixture(scope="session")
def es_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterInfo]:
    """One real single-node Elasticsearch for the whole session (benchmark-only races use it)."""
    os.environ.setdefault("BENCH_CACHE", default_cache())
    provisioner, info = start_cluster(tmp_path_factory.mktemp("session-cluster"), car=["defaults", "1gheap"])
    try:
        yield info
    finally:
        provisioner.stop_all()


@pytest.fixture
def es_target(es_cluster: ClusterInfo) -> str:
    """--target-hosts value for the session cluster."""
    return ",".join(h.removeprefix("http://") for h in es_cluster.hosts)
