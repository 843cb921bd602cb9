"""Whether Ray (the ``ray`` extra) is installed: one line naming the pip install when it is not. Imports nothing
of Ray, so every part of the extension and the CLI can ask first."""

from __future__ import annotations

from bench.util.errors import ConfigError


def require_ray(flag: str) -> None:
    """One line naming the pip install when Ray (the ``ray`` extra) is not importable here."""
    try:
        import ray

        installed = getattr(ray, "__file__", None) is not None
    except ImportError:
        installed = False
    # A folder named ray/ in the working directory (Ray's own /tmp/ray) imports as an empty namespace package.
    if not installed:
        import sys

        raise ConfigError(f"{flag} needs Ray, which is not installed for {sys.executable}: "
                          "pip install 'bench[ray]'") from None
