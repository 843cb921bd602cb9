"""What the Ray extension registers with bench's seams (published as a ``bench.extensions`` entry point)."""

from __future__ import annotations

from bench.driver.backends import OpenedPool, register_pool_backend


def setup() -> None:
    register_pool_backend("ray", _open)


def _open(address: str, workers: int | None, hosts: list[str]) -> OpenedPool:
    # ray is imported only when a race asks for it: every process that loads extensions runs this module, and
    # importing ray takes a second (or fails where the extra is not installed).
    from bench.ray.pool import open_ray_pool

    return open_ray_pool(address, workers, hosts)
