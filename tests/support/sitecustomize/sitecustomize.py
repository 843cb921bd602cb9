"""Loaded by every Python process a test starts (tests/support/tier_guard.py puts this folder first on PYTHONPATH):
installs the test's tier guard in that process, then hands over to any other sitecustomize on the path."""

import importlib.machinery
import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
if os.environ.get("BENCH_TEST_TIER_GUARD"):
    _spec = importlib.util.spec_from_file_location("_bench_tier_guard",
                                                   os.path.join(os.path.dirname(_here), "tier_guard.py"))
    if _spec is not None and _spec.loader is not None:
        _module = importlib.util.module_from_spec(_spec)
        sys.modules["_bench_tier_guard"] = _module
        _spec.loader.exec_module(_module)
        _module.install_from_env()

# Another sitecustomize (the interpreter's own, if it has one) still runs: found on the path without this folder,
# run as a module of its own (this one stays sys.modules["sitecustomize"], as the import system expects).
_rest = [p for p in sys.path if os.path.abspath(p or ".") != _here]
_other = importlib.machinery.PathFinder.find_spec("sitecustomize", _rest)
if _other is not None and _other.loader is not None:
    _other.loader.exec_module(importlib.util.module_from_spec(_other))
