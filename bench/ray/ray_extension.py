"""What the Ray extension registers with bench's seams (published as a ``bench.extensions`` entry point)."""

from __future__ import annotations

from bench.api import OpenedPool, register_enricher, register_metric, register_pool_backend, register_section
from bench.ray.require import require_ray
from bench.ray.section import SECTION, enrich_summary, load_driver_rows


def setup() -> None:
    register_pool_backend("ray", _open)
    register_section(SECTION, rows=load_driver_rows, title="Load driver (Ray nodes)", order=15)
    register_enricher(SECTION, enrich_summary)
    # How the load was driven, not what the cluster did: shown in comparisons, never judged.
    register_metric(r"^load-driver ", higher_is_better=None)
    register_metric(r"driver cpu", higher_is_better=None)


def _open(address: str, workers: int | None, hosts: list[str]) -> OpenedPool:
    # ray is imported only when a race asks for it: every process that loads extensions runs this module, and
    # importing ray takes a second (or fails where the extra is not installed).
    require_ray(f"--load-driver=ray:{address}")
    from bench.ray.pool import open_ray_pool

    return open_ray_pool(address, workers, hosts)
