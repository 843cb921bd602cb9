"""Joining a Ray cluster: the address checked first (ray.init retries an unreachable one for ever), one line on
failure."""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path

from bench.util.errors import ConfigError

CONNECT_TIMEOUT = 3.0
# Where `ray start --head` writes the address of the cluster it started (what ray.init("auto") reads).
CURRENT_CLUSTER = Path("/tmp/ray/ray_current_cluster")


def resolve_address(address: str) -> str:
    """host:port of the cluster's GCS: ``auto`` is $RAY_ADDRESS or the cluster `ray start` started here."""
    if address in ("", "auto"):
        found = os.environ.get("RAY_ADDRESS") or (CURRENT_CLUSTER.read_text().strip()
                                                   if CURRENT_CLUSTER.is_file() else "")
        if not found or found == "auto":
            raise ConfigError("--load-driver=ray:auto: no Ray cluster found on this machine (no $RAY_ADDRESS, no "
                              f"{CURRENT_CLUSTER}); start one with `ray start --head` or give ray:HOST:PORT")
        return found
    return address


def check_reachable(address: str) -> None:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"--load-driver=ray:{address}: not HOST:PORT (the head's GCS port) nor auto")
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT):
            pass
    except OSError as e:
        raise ConfigError(f"Ray cluster at {address} is unreachable ({e.strerror or e}); start it with `ray start "
                          f"--head --port={port}` or fix --load-driver") from None


def connect(address: str) -> str:
    """Join the Ray cluster at ``address`` (once per process); returns the resolved address."""
    from bench.ray.require import require_ray

    require_ray(f"--load-driver=ray:{address}")
    import ray

    resolved = resolve_address(address)
    check_reachable(resolved)
    if ray.is_initialized():
        ray.shutdown()  # another cluster's connection, or a stale one of an earlier race
    try:
        ray.init(address=resolved, logging_level=logging.ERROR, log_to_driver=False, configure_logging=False)
    except Exception as e:  # noqa: BLE001 - ray raises many kinds; the user needs one line
        raise ConfigError(f"could not join the Ray cluster at {resolved}: {type(e).__name__}: "
                          f"{str(e).splitlines()[0] if str(e) else ''}") from None
    return resolved
