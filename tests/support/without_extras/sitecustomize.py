"""Put first on PYTHONPATH by tests/project/test_extras.py: every Python process it starts behaves as a core install of
bench (``pip install bench`` without extras) would, the optional packages' imports failing as if they were
absent; then hands over to the next sitecustomize on the path (the tier guard's)."""

import importlib.machinery
import importlib.util
import os
import sys

HIDDEN = tuple(n for n in os.environ.get("BENCH_TEST_HIDDEN_MODULES", "").split(",") if n)


class _Absent:
    """A meta-path finder that finds the hidden packages' modules nowhere."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        if any(name == h or name.startswith(h + ".") for h in HIDDEN):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Absent())

_here = os.path.dirname(os.path.abspath(__file__))
# Off the path before the next one runs, which would otherwise find this one again as "another sitecustomize".
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
_rest = list(sys.path)
_other = importlib.machinery.PathFinder.find_spec("sitecustomize", _rest)
if _other is not None and _other.loader is not None:
    _other.loader.exec_module(importlib.util.module_from_spec(_other))
