"""``osbenchmark.workload.params``: the ``ParamSource`` base class (OSB's is Rally's, its first argument named
``workload``) and the corpus-reading helpers Rally's module has under the same names."""

from __future__ import annotations

from bench.compat.esrally.track.params import (
    IndexIdConflict,
    ParamSource,
    Slice,
    bounds,
    chain,
)
from bench.compat.osbenchmark import exceptions

__all__ = ["IndexIdConflict", "ParamSource", "Slice", "bounds", "chain", "exceptions"]
