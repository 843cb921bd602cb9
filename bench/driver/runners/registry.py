"""Which operation types bench can run: the seam through which extensions add operation runners.

Core runners (``bench.driver.runners.core``) are here from the start; an extension adds its own from its ``setup()``
with ``register_runner``. A lookup loads the installed extensions first (``bench.extensions.load()``), so the
track loader and each load-driver worker process see the same types.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Protocol

from bench import extensions
from bench.driver.runners import admin as admin_runners
from bench.driver.runners import composite as composite_runner
from bench.driver.runners import ml_transform as ml_transform_runners
from bench.driver.runners import opensearch_ops as opensearch_runners
from bench.driver.runners import search as search_runners
from bench.driver.runners import snapshot as snapshot_runners
from bench.driver.runners import vector as vector_runners
from bench.driver.runners.core import CORE_RUNNERS, Runner
from bench.util.errors import BenchError, ConfigError


class OperationCheck(Protocol):
    """A load-time check of an operation's parameters: raises TrackError naming the file and the field."""

    def __call__(self, name: str, op_type: str, params: dict[str, Any], *, track_file: str) -> None: ...


@dataclass(frozen=True, slots=True)
class RunnerSpec:
    operation_type: str
    runner: Runner
    required: tuple[str, ...] = ()  # parameters a track must give (Rally's "mandatory parameters")
    check: OperationCheck | None = None


class UnknownOperation(BenchError):
    """No runner is registered for an operation type in this process."""


_lock = threading.Lock()
_SPECS: dict[str, RunnerSpec] = {t: RunnerSpec(t, r, req) for t, (r, req) in CORE_RUNNERS.items()}
# Rally's other operation types, one module per kind, each with its load-time check.
for _module, _check in ((admin_runners, admin_runners.check_admin), (search_runners, search_runners.check_search),
                        (snapshot_runners, snapshot_runners.check_snapshot),
                        (ml_transform_runners, ml_transform_runners.check_ml_transform),
                        (opensearch_runners, opensearch_runners.check_opensearch_ops),
                        (vector_runners, vector_runners.check_vector)):
    for _type, (_runner, _required) in _module.RUNNERS.items():
        _SPECS[_type] = RunnerSpec(_type, _runner, _required, _check)


def _spec(operation_type: str) -> RunnerSpec | None:
    return _SPECS.get(operation_type)


_composite, _composite_check = composite_runner.operation(_spec)
_SPECS["composite"] = RunnerSpec("composite", _composite, ("requests",), _composite_check)


def callable_name(fn: Any) -> str:
    """module.qualname: how two registrations of one function are told from a clash."""
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def register_runner(operation_type: str, runner: Runner, *, required: tuple[str, ...] = (),
                    check: OperationCheck | None = None) -> None:
    """Make ``operation_type`` runnable: ``runner`` runs it, ``required`` and ``check`` are its load-time checks.

    Registering the same runner again (a setup() that runs twice) replaces its entry; another runner for a type that
    already has one is a ConfigError, since which one a race would use must not depend on load order.
    """
    with _lock:
        old = _SPECS.get(operation_type)
        if old is not None and callable_name(old.runner) != callable_name(runner):
            raise ConfigError(f"operation type '{operation_type}' is registered twice, by "
                              f"{callable_name(old.runner)} and by {callable_name(runner)}: uninstall one of the "
                              f"extensions that provide them")
        _SPECS[operation_type] = RunnerSpec(operation_type, runner, tuple(required), check)


def runner_spec(operation_type: str) -> RunnerSpec | None:
    extensions.load()
    return _SPECS.get(operation_type)


def operation_types() -> frozenset[str]:
    extensions.load()
    return frozenset(_SPECS)


def runner_for(operation_type: str) -> Runner:
    """The runner of a type, or UnknownOperation (one line) when no loaded extension registered it."""
    spec = runner_spec(operation_type)
    if spec is None:
        raise UnknownOperation(f"no runner for operation type '{operation_type}' in this process (pid "
                               f"{os.getpid()}): the extension that registers it is not loaded here; "
                               f"install it, or register it with bench.extensions.register() from an importable "
                               f"module-level setup()")
    return spec.runner
