"""How a load-driver worker, a process started from scratch, comes to see the same extensions as bench.

Installed extensions it loads itself (``bench.extensions.load()``); those registered in-process with
``bench.extensions.register()`` (a test, a track's plugin) reach it as the import paths of their ``setup()``.
"""

from __future__ import annotations

import pkgutil

from bench import extensions
from bench.util.errors import ConfigError


def extension_paths() -> dict[str, str]:
    """name -> "module:qualname" of every in-process extension's setup; ConfigError if a worker could not import
    one (a lambda, a nested function)."""
    out: dict[str, str] = {}
    for name, setup in extensions.registered().items():
        path = f"{getattr(setup, '__module__', '?')}:{getattr(setup, '__qualname__', '?')}"
        try:
            found = pkgutil.resolve_name(path)
        except (ImportError, AttributeError, ValueError):
            found = None
        if found is not setup:
            raise ConfigError(f"extension {name!r}: the load driver's worker processes cannot import its setup "
                              f"{path}: make setup() a module-level function of an importable module")
        out[name] = path
    return out


def load_extensions(paths: dict[str, str]) -> None:
    """In a worker: load the installed extensions, then register the in-process ones bench passed on."""
    extensions.load()
    for name, path in paths.items():
        try:
            setup = pkgutil.resolve_name(path)
        except Exception as e:  # noqa: BLE001 - whatever the import raised, one line naming the extension
            raise ConfigError(f"a load driver worker could not import extension {name!r} ({path}): "
                              f"{type(e).__name__}: {e}") from None
        extensions.register(name, setup)
