"""Start a real local Elasticsearch in one line from any test, through the ``local_engines`` fixture (which
marks the test ``cluster``: tests/support/tiers.py):

    def test_x(tmp_path, local_engines):
        with local_engines.running_cluster(tmp_path) as info:
            Elasticsearch(**info.client_kwargs())

For a session- or module-scoped fixture use ``local_engines.start_cluster`` (returns the provisioner to stop
later).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterInfo, ClusterSpec


def default_cache() -> str:
    """Where tests keep downloads: $BENCH_CACHE, else ~/.bench (so the distribution is downloaded once per run).
    ``.ci/run`` sets BENCH_CACHE to a fresh empty folder, so CI downloads everything as a fresh machine does."""
    return os.environ.get("BENCH_CACHE") or str(Path.home() / ".bench")


def use_test_homes(home: Path, monkeypatch: Any | None = None) -> None:
    """BENCH_HOME -> home (fresh per test), BENCH_CACHE -> the shared download cache."""
    values = {"BENCH_HOME": str(home), "BENCH_CACHE": default_cache()}
    for k, v in values.items():
        if monkeypatch is not None:
            monkeypatch.setenv(k, v)
        else:
            os.environ[k] = v


def start_cluster(base_dir: Path, nodes: int = 1, car: list[str] | None = None, timeout: float = 180.0,
                  **kw: Any) -> tuple[LocalProvisioner, ClusterInfo]:
    """Start a cluster for tests; the caller must call ``provisioner.stop_all()``.

    kw are ClusterSpec fields (name, car_params, http_port, ...). Logs go to base_dir/trial/logs.
    """
    base_dir = Path(base_dir)
    provisioner = LocalProvisioner(f"test-{uuid.uuid4().hex[:8]}", base_dir / "trial")
    spec = ClusterSpec(nodes=nodes, car=car or ["defaults", "512mheap"], **kw)
    try:
        return provisioner, provisioner.start(spec, timeout=timeout)
    except BaseException:
        provisioner.stop_all()
        raise


@contextlib.contextmanager
def running_cluster(tmp_path: Path, nodes: int = 1, car: list[str] | None = None,
                    **kw: Any) -> Iterator[ClusterInfo]:
    """A real local cluster for the duration of the with-block (always stopped afterwards)."""
    if "BENCH_CACHE" not in os.environ:
        os.environ["BENCH_CACHE"] = default_cache()
    provisioner, info = start_cluster(tmp_path, nodes=nodes, car=car, **kw)
    try:
        yield info
    finally:
        provisioner.stop_all()


class LocalEngines:
    """What the ``local_engines`` fixture gives: this module's helpers for starting engine nodes."""

    start_cluster = staticmethod(start_cluster)
    running_cluster = staticmethod(running_cluster)
