"""``import esrally…`` from a track's code, when Rally itself is not installed: bench's ``bench.compat.esrally``
modules (and ``import osbenchmark…`` from a workload's code: ``bench.compat.osbenchmark``, when OSB is not
installed).

A finder first on ``sys.meta_path`` answers for ``esrally`` and its submodules with the module of the same dotted
name below ``bench.compat.esrally`` (first: the normal path finder would otherwise load a submodule a second
time, from the aliased package's folder, with its own copies of the exception classes). An installed Rally wins: the
finder is not installed then. A name these modules do not have is a normal ModuleNotFoundError/ImportError.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Sequence

ALIAS = "esrally"
TARGET = "bench.compat.esrally"
OSB_ALIAS = "osbenchmark"
OSB_TARGET = "bench.compat.osbenchmark"


class _EsrallyFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, alias: str = ALIAS, target: str = TARGET) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}
        self.alias, self.target = alias, target

    def _target(self, fullname: str) -> str | None:
        if fullname == self.alias:
            return self.target
        if fullname.startswith(self.alias + "."):
            return self.target + fullname[len(self.alias):]
        return None

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        real = self._target(fullname)
        if real is None:
            return None
        spec = importlib.util.find_spec(real)
        if spec is None:
            return None
        return importlib.util.spec_from_loader(fullname, self,
                                               is_package=spec.submodule_search_locations is not None)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        real = self._target(spec.name)
        assert real is not None
        # The very module object: isinstance checks and module state are shared between both names.
        module = importlib.import_module(real)
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # importlib set the alias's spec on the shared module object: give it back its own.
        alias = module.__spec__.name if module.__spec__ is not None else None
        if alias in self._specs:
            module.__spec__ = self._specs.pop(alias)


_FINDER = _EsrallyFinder()
_OSB_FINDER = _EsrallyFinder(OSB_ALIAS, OSB_TARGET)


def install() -> None:
    """Let track code import ``esrally`` and workload code ``osbenchmark`` (idempotent; a no-op for the names an
    installed Rally or OSB provides)."""
    for finder in (_FINDER, _OSB_FINDER):
        if any(isinstance(f, _EsrallyFinder) and f.alias == finder.alias for f in sys.meta_path):
            continue
        if finder.alias not in sys.modules and importlib.util.find_spec(finder.alias) is not None:
            continue  # Rally (or OSB) itself is installed
        sys.meta_path.insert(0, finder)
