"""How extensions plug into bench without the core importing them.

An extension is a ``setup()`` callable published under the ``bench.extensions`` entry-point group (bench's own
CCR, telemetry, Loadgen and cloud support are published that way in ``pyproject.toml``; a third-party package
does the same in its own). ``load()`` calls each one once per process; ``setup()`` then registers what the
extension adds with the registry of the seam it extends (all of them exported, with their types, by
``bench.api``, which is what an extension imports) -- each seam owns its registry and its types:

- operation runners and their load-time checks ............ ``bench.driver.runners.registry.register_runner``
- parameter sources of operations ......................... ``bench.driver.param_sources.register_param_source``
- steps before provisioning, around the schedule, after it . ``bench.race.pipeline.register_race_hook``
- cluster sources (where a race's clusters come from) ...... ``bench.race.cluster_source.register_source``
- telemetry devices ........................................ ``bench.telemetry.config`` (the device table)
- summary/report sections .................................. ``bench.results.summary.register_section``
- compare row metadata (direction, unit) ................... ``bench.compare.metrics.register_metric``
- load-driver backends (where the workers run) ............. ``bench.driver.backends.register_pool_backend``

The core calls ``load()`` before it consults a registry (also in each load-driver worker process, which
starts from scratch under ``spawn``). Like pluggy's ``load_setuptools_entrypoints``, but with one hook per
seam instead of a hook-spec module: the seams are few and typed where they live.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from importlib.metadata import entry_points

from bench.util.errors import ConfigError

log = logging.getLogger(__name__)

GROUP = "bench.extensions"

_lock = threading.RLock()  # a setup() may register() another extension
_loaded: dict[str, Callable[[], None]] = {}
_registered: dict[str, Callable[[], None]] = {}  # the register()ed ones: a fresh process must load them itself
_done = False


def load() -> list[str]:
    """Call every installed extension's ``setup()`` once in this process; returns their names in load order."""
    global _done
    with _lock:
        if not _done:
            # Sorted: registration order decides precedence between extensions, so it must not depend on
            # the order the installer happened to write the metadata in.
            for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
                if ep.name in _loaded:
                    continue
                try:
                    setup = ep.load()
                    setup()
                except (ConfigError, MemoryError):
                    raise  # out of memory is the machine's limit, not a broken extension: said as such
                except Exception as e:
                    raise ConfigError(f"bench extension {ep.name!r} ({ep.value}) failed to load: "
                                      f"{type(e).__name__}: {e}; reinstall it or uninstall it") from e
                _loaded[ep.name] = setup
            _done = True
        return list(_loaded)


def register(name: str, setup: Callable[[], None]) -> None:
    """Load an extension that is not installed as a package (a test, a track's plugin); idempotent by name."""
    with _lock:
        if name in _loaded:
            return
        setup()
        _loaded[name] = setup
        _registered[name] = setup


def registered() -> dict[str, Callable[[], None]]:
    """The extensions register()ed in this process (not installed), in order: what a process started from
    scratch (a load-driver worker) has to register as well to see the same registries."""
    with _lock:
        return dict(_registered)


def loaded() -> list[str]:
    return list(_loaded)
