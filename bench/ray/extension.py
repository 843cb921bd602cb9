"""What the Ray extension registers with bench's seams (published as a ``bench.extensions`` entry point)."""

from __future__ import annotations

from bench.api import OpenedPool, register_enricher, register_metric, register_pool_backend, register_section
from bench.errors import ConfigError
from bench.ray.section import SECTION, enrich_summary, load_driver_rows


def setup() -> None:
    register_pool_backend("ray", _open)
    register_section(SECTION, rows=load_driver_rows, title="Load driver (Ray nodes)", order=15)
    register_enricher(SECTION, enrich_summary)
    # How the load was driven, not what the cluster did: shown in comparisons, never judged.
    register_metric(r"^load-driver ", higher_is_better=None)
    register_metric(r"driver cpu", higher_is_better=None)


def require_ray(flag: str) -> None:
    """One line naming the pip install when Ray (the ``ray`` extra) is not importable here."""
    try:
        import ray
    except ImportError:
        ray = None
    # A folder named ray/ in the working directory (Ray's own /tmp/ray) imports as an empty namespace package.
    if ray is None or getattr(ray, "__file__", None) is None:
        import sys

        raise ConfigError(f"{flag} needs Ray, which is not installed for {sys.executable}: "
                          "pip install 'bench[ray]'") from None


def _open(address: str, workers: int | None, hosts: list[str]) -> OpenedPool:
    # ray is imported only when a race asks for it: every process that loads extensions runs this module, and
    # importing ray takes a second (or fails where the extra is not installed).
    require_ray(f"--load-driver=ray:{address}")
    from bench.ray.pool import open_ray_pool

    return open_ray_pool(address, workers, hosts)
