"""Which WorkerPool drives a race: the local worker processes, or a backend an extension registers.

``--load-driver=NAME:ADDRESS`` names a registered backend and what it joins (the Ray extension registers
``ray``: ``ray:auto``, ``ray:host:port``); without it the workers are local processes. A backend's factory
connects (or fails with one line naming the address) and says how many workers it starts, since a distributed
backend's default follows its cluster's size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.driver.mp_pool import MpWorkerPool
from bench.driver.pool import WorkerPool
from bench.util.errors import ConfigError


@dataclass
class OpenedPool:
    pool: WorkerPool
    workers: int  # how many workers the coordinator deals the clients out to


# (address, --worker-processes or None, --load-driver-hosts: the driver hosts to use, [] for all) -> an opened pool
PoolFactory = Callable[[str, int | None, list[str]], OpenedPool]
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")

_BACKENDS: dict[str, PoolFactory] = {}


def register_pool_backend(name: str, factory: PoolFactory) -> None:
    _BACKENDS[name] = factory


def pool_backends() -> list[str]:
    from bench import extensions

    extensions.load()
    return sorted(_BACKENDS)


def open_pool(load_driver: str | None, workers: int | None, hosts: list[str] | None = None) -> OpenedPool:
    """The pool of ``--load-driver`` (local processes without it), connected and sized; ``hosts`` (Rally's
    ``--load-driver-hosts``) limits a distributed backend to those of its machines."""
    hosts = hosts or []
    if not load_driver:
        if any(h not in LOCAL_HOSTS for h in hosts):
            raise ConfigError(f"--load-driver-hosts={','.join(hosts)}: local worker processes drive from this machine "
                              "only; to drive from other machines join them into a Ray cluster (--ray-address)")
        return OpenedPool(MpWorkerPool(), workers or 1)
    name, _, address = load_driver.partition(":")
    known = pool_backends()
    if name not in known:
        raise ConfigError(f"--load-driver={load_driver}: no load-driver backend {name!r} (installed: "
                          f"{', '.join(known) or 'none'}); write BACKEND:ADDRESS, e.g. ray:auto")
    return _BACKENDS[name](address, workers, hosts)
