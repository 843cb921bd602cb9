"""The tier guard: a test may start an engine node, a Ray node or a network namespace only if it carries the
marker saying so (``cluster``, ``ray``, ``netns``), which it gets by requesting the fixture that provides the
resource (tests/support/tiers.py). Anything else fails the test at once with one line naming the marker and fixture.

The entry points are where every path to those resources passes, checked in the test process and in every
Python process it starts (bench races run as subprocesses, ``ray start``):

- an engine node: ``LocalProvisioner.start`` (before it downloads or unpacks anything), and the processes
  that run a node: ``python -m bench.provision.guard`` (the LocalProvisioner launches every node through
  it) or an engine's ``bin/elasticsearch`` / ``bin/opensearch`` run directly;
- a Ray node: ``ray start``, ``ray.init`` (a local node, or a driver joining a cluster; a local one writes
  Ray's state, such as ~/.ray/auth_token, before any process starts), and a node's ``raylet`` / ``gcs_server``;
- a network namespace: ``ip netns add``.

Standard library only: child processes load this file through tests/support/sitecustomize/ (see ``child_env``), and
it must cost them next to nothing.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ENV = "BENCH_TEST_TIER_GUARD"  # JSON {"test": node id, "allowed": [markers], "log": path} for child processes
SITECUSTOMIZE_DIR = Path(__file__).resolve().parent / "sitecustomize"

# marker -> the fixture (tests/conftest.py) whose request gives it
FIXTURES = {"cluster": "local_engines", "ray": "ray_nodes", "netns": "netns_hosts"}

ENGINE_BINARIES = {"elasticsearch", "opensearch"}
RAY_BINARIES = {"raylet", "gcs_server"}


class TierGuardError(RuntimeError):
    """What a child process raises when it is about to start something its test may not."""


def what_it_starts(args: Any) -> tuple[str, str] | None:
    """(marker, what) when ``args`` (a Popen argument list or shell string) starts an engine node, a Ray node
    or a network namespace; None otherwise."""
    if isinstance(args, (str, bytes, os.PathLike)):
        text = os.fsdecode(args)
        try:
            argv = shlex.split(text)
        except ValueError:
            argv = text.split()
    else:
        try:
            argv = [os.fsdecode(a) for a in args]
        except TypeError:
            return None
    if not argv:
        return None
    exe = os.path.basename(argv[0])
    if any(a == "-m" and b == "bench.provision.guard" for a, b in zip(argv, argv[1:])):
        return "cluster", "an engine node (python -m bench.provision.guard)"
    if exe in ENGINE_BINARIES and os.path.basename(os.path.dirname(argv[0])) == "bin":
        return "cluster", f"an engine node ({argv[0]})"
    if exe == "ray" and argv[1:2] == ["start"]:
        return "ray", "a Ray node (ray start)"
    if exe in RAY_BINARIES:
        return "ray", f"a Ray node ({exe})"
    if exe == "ip" and argv[1:3] == ["netns", "add"]:
        return "netns", "a network namespace (ip netns add)"
    return None


def refusal(marker: str, what: str) -> str:
    """The one line a test gets when it starts ``what`` without ``marker``."""
    return (f"the test starts {what} without the {marker!r} marker: request the {FIXTURES[marker]} fixture "
            f"(docs/extending/developing.md)")


class Guard:
    """Which test is running and what it may start; ``check`` is called with every Popen's args."""

    def __init__(self, on_refusal: Callable[[str], BaseException]):
        self.test: str | None = None  # None: between tests (collection, session start): nothing is checked
        self.allowed: frozenset[str] = frozenset()
        self.log: str | None = None
        self.on_refusal = on_refusal

    def check(self, args: Any) -> None:
        """Before a Popen of ``args``."""
        found = what_it_starts(args)
        if found is not None:
            self.require(*found)

    def require(self, marker: str, what: str) -> None:
        """Refuse (log and raise) unless the running test may start ``what``."""
        if self.test is None or marker in self.allowed:
            return
        line = refusal(marker, what)
        if self.log:
            with open(self.log, "a", encoding="utf-8") as f:
                f.write(json.dumps({"test": self.test, "line": line}) + "\n")
        raise self.on_refusal(line)


# Calls that start things, guarded once their module is imported: module -> (class or None, function, marker, what).
GUARDED_CALLS = {
    "bench.provision.local": ("LocalProvisioner", "start", "cluster", "an engine node (LocalProvisioner.start)"),
    # A local ray.init writes ~/.ray/auth_token before its processes (and later Ray clusters use it); joining a
    # cluster needs one of the ray tier's anyway.
    "ray": (None, "init", "ray", "a Ray node or driver (ray.init)"),
}

_original_init: Callable[..., None] | None = None
_guard: Guard | None = None


def install(guard: Guard) -> None:
    """Check every ``subprocess.Popen`` of this process, and the calls of ``GUARDED_CALLS``, with ``guard``
    (replacing a guard installed before, e.g. one inherited through the environment by a pytest run inside a
    test)."""
    global _original_init, _guard
    _guard = guard
    if _original_init is not None:
        return
    pending = set()
    for name in GUARDED_CALLS:
        if name in sys.modules:
            _guard_call(sys.modules[name])
        else:
            pending.add(name)
    if pending:
        sys.meta_path.insert(0, _GuardOnImport(pending))
    inherited = getattr(subprocess.Popen.__init__, "__bench_tier_guard__", None)
    _original_init = inherited or subprocess.Popen.__init__
    original = _original_init

    def __init__(self: subprocess.Popen, args: Any, *a: Any, **kw: Any) -> None:
        if _guard is not None:
            _guard.check(args)
        original(self, args, *a, **kw)

    __init__.__bench_tier_guard__ = original  # type: ignore[attr-defined]
    subprocess.Popen.__init__ = __init__  # type: ignore[method-assign]


def uninstall() -> None:
    global _original_init, _guard
    if _original_init is not None:
        subprocess.Popen.__init__ = _original_init  # type: ignore[method-assign]
    _original_init = _guard = None
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _GuardOnImport)]
    for name, (owner, attr, _, _) in GUARDED_CALLS.items():
        target = getattr(sys.modules.get(name), owner, None) if owner else sys.modules.get(name)
        guarded = getattr(target, attr, None)
        if guarded is not None and hasattr(guarded, "__bench_tier_guard__"):
            setattr(target, attr, guarded.__bench_tier_guard__)


def _guard_call(module: Any) -> None:
    """Wrap the module's entry of ``GUARDED_CALLS`` (once, whichever copy of this file does it)."""
    owner, attr, marker, what = GUARDED_CALLS[module.__name__]
    target = getattr(module, owner, None) if owner else module
    if target is None or not callable(getattr(target, attr, None)):
        return
    original = getattr(target, attr)
    original = getattr(original, "__bench_tier_guard__", original)

    @functools.wraps(original)
    def guarded(*a: Any, **kw: Any) -> Any:
        if _guard is not None:
            _guard.require(marker, what)
        return original(*a, **kw)

    guarded.__bench_tier_guard__ = original  # type: ignore[attr-defined]
    setattr(target, attr, guarded)


class _GuardOnImport(importlib.abc.MetaPathFinder):
    """Wraps a module's guarded call once the module is imported (in a child process: after its start-up)."""

    def __init__(self, pending: set[str]):
        self.pending = pending

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in self.pending:
            return None
        self.pending.discard(fullname)
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            if self.pending:
                sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader_exec = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            loader_exec(module)
            _guard_call(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def child_env(guard: Guard, environ: dict[str, str]) -> None:
    """Put the guard into ``environ`` so the Python processes started from it check themselves."""
    if guard.test is None:
        environ.pop(ENV, None)
        return
    environ[ENV] = json.dumps({"test": guard.test, "allowed": sorted(guard.allowed), "log": guard.log})
    paths = environ.get("PYTHONPATH", "").split(os.pathsep) if environ.get("PYTHONPATH") else []
    if str(SITECUSTOMIZE_DIR) not in paths:
        environ["PYTHONPATH"] = os.pathsep.join([str(SITECUSTOMIZE_DIR), *paths])


def install_from_env(environ: dict[str, str] | None = None) -> None:
    """In a child process: the guard its test put into the environment, if any."""
    raw = (os.environ if environ is None else environ).get(ENV)
    if not raw:
        return
    try:
        spec = json.loads(raw)
    except ValueError:
        return
    guard = Guard(TierGuardError)
    guard.test, guard.allowed, guard.log = spec["test"], frozenset(spec["allowed"]), spec.get("log")
    install(guard)


def refusals(log: str | None, test: str, seen: Sequence[str] = ()) -> list[str]:
    """The lines ``log`` holds for ``test`` (refusals in this process and its children), minus ``seen``."""
    if not log or not os.path.exists(log) or os.path.getsize(log) == 0:
        return []
    out: list[str] = []
    with open(log, encoding="utf-8") as f:
        for raw in f:
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if entry.get("test") == test and entry["line"] not in seen and entry["line"] not in out:
                out.append(entry["line"])
    return out
