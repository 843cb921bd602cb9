"""Shared fixtures. Every test gets a fresh BENCH_HOME (its own trial store and logs) while downloads
stay cached in BENCH_CACHE (``tests.esnode.default_cache``: empty at the start of a CI run); tests that only need *a*
cluster share one real Elasticsearch per session.

Tiers (tests/support/tiers.py, docs/extending/developing.md): a test is marked from the fixtures it requests.
``local_engines`` (engine nodes on this machine) gives ``cluster``, ``ray_nodes`` gives ``ray``, ``netns_hosts``
gives ``netns``; every other test is ``unit``. A test that starts one of these without its fixture fails at once,
in any run."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench.provision.model import ClusterInfo
from tests.support import tiers
from tests.support.esnode import LocalEngines, default_cache
from tests.support.isolation import leaked
from tests.support.netns import NetnsLab, unavailable_reason
from tests.support.ray_cluster import RayTestCluster, start_ray_cluster
from tests.support.shared_tree import need_shared

# The official download sites are unreachable here (see ../shared/ENVIRONMENT.md): the suite runs Maven Central's
# integ-test builds, chosen explicitly so no test depends on the release repository's fallback. Tests of the
# release repository itself serve official-layout archives locally (tests/support/official_archives.py) and override this.
os.environ.setdefault("BENCH_DISTRIBUTION_REPOSITORY", "maven-integ-test")


def pytest_sessionstart(session: pytest.Session) -> None:
    # Under nox (so in CI) the suite must see only the project's declared dependencies: a venv that also
    # sees the base interpreter's packages passes here and fails on a fresh machine.
    if os.environ.get("NOX_CURRENT_SESSION") and leaked(sys.path):
        pytest.exit(f"the test environment sees the base interpreter's site-packages {sorted(leaked(sys.path))}: "
                    f"make the nox venv without system site-packages", returncode=3)


def pytest_configure(config: pytest.Config) -> None:
    tiers.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    tiers.unconfigure(config)


@pytest.hookimpl(tryfirst=True)  # before -m selects by the markers set here
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tiers.mark_items(items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    tiers.enter(item)
    try:
        return (yield)
    finally:
        tiers.leave(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Iterator[pytest.TestReport]:
    report = yield
    tiers.refuse(item, report)
    return report


@pytest.fixture(autouse=True)
def bench_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "bench-home"
    monkeypatch.setenv("BENCH_HOME", str(home))
    monkeypatch.setenv("BENCH_CACHE", default_cache())
    return home


@pytest.fixture(scope="session")
def local_engines() -> LocalEngines:
    """Engine nodes on this machine (tests/support/esnode.py's helpers): requesting it, directly or through another
    fixture, marks a test ``cluster`` and lets it start nodes, also through a ``bench race`` without
    --target-hosts (then ``@pytest.mark.usefixtures("local_engines")``)."""
    os.environ.setdefault("BENCH_CACHE", default_cache())
    return LocalEngines()


@pytest.fixture(scope="session")
def ray_nodes() -> Callable[..., RayTestCluster]:
    """Ray nodes on this machine: marks a test ``ray``; returns tests/support/ray_cluster.py's ``start_ray_cluster``.
    Skips the test when Ray is not installed (``pip install -e .[ray]``)."""
    pytest.importorskip("ray", reason="the Ray load driver needs bench[ray]")
    return start_ray_cluster


@pytest.fixture(scope="session")
def netns_hosts() -> type[NetnsLab]:
    """Network namespaces as hosts: marks a test ``netns``; returns tests/support/netns.py's ``NetnsLab`` (a lab per
    call). Skips the test where namespaces cannot be made (not root, no iproute2)."""
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    return NetnsLab


@pytest.fixture(scope="session")
def real_track_trees() -> Path:
    """The real elastic/rally-tracks and OSB workload trees (../shared/tracks-real): marks a test ``tracks``, for
    sweeps over whole trees that take minutes though they start nothing. Skips where the trees are not there."""
    return need_shared("tracks-real")


@pytest.fixture(scope="session")
def fault_injection() -> None:
    """Marks a test ``faults``: it kills or stops processes, damages files or exhausts resources and waits for bench
    to notice (seconds each, minutes in all), though it starts no engine."""


@pytest.fixture(scope="session")
def sustained_load() -> None:
    """Marks a test ``load``: its race must run tens of seconds of paced load against a local server to mean
    anything (a redline's knee, a server that stalls on a schedule, throughput read in every second)."""


@pytest.fixture(scope="session")
def es_cluster(tmp_path_factory: pytest.TempPathFactory, local_engines: LocalEngines) -> Iterator[ClusterInfo]:
    """One real single-node Elasticsearch for the whole session (benchmark-only races use it)."""
    provisioner, info = local_engines.start_cluster(tmp_path_factory.mktemp("session-cluster"),
                                                    car=["defaults", "1gheap"])
    try:
        yield info
    finally:
        provisioner.stop_all()


@pytest.fixture(scope="session")
def os_cluster(tmp_path_factory: pytest.TempPathFactory, local_engines: LocalEngines) -> Iterator[ClusterInfo]:
    """One real single-node OpenSearch 2.19.1 (defaults, 512m heap) for the session: the metrics-store tests' store
    (bench's and OSB's layouts, each under index names of its own, read back by trial id) and the tests of what
    only OpenSearch serves (data streams, point in time), which remove what they create."""
    provisioner, info = local_engines.start_cluster(tmp_path_factory.mktemp("store-os"), engine="opensearch",
                                                    version="2.19.1", car=["defaults", "512mheap"])
    try:
        yield info
    finally:
        provisioner.stop_all()


@pytest.fixture
def es_target(es_cluster: ClusterInfo) -> str:
    """--target-hosts value for the session cluster."""
    return ",".join(h.removeprefix("http://") for h in es_cluster.hosts)
