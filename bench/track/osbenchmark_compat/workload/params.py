"""``osbenchmark.workload.params``: the ``ParamSource`` base class (OSB's is Rally's, its first argument named
``workload``) and the corpus-reading helpers Rally's module has under the same names."""

from __future__ import annotations

from bench.track.esrally_compat.track.params import (
    IndexIdConflict,
    ParamSource,
    Slice,
    bounds,
    chain,
)
from bench.track.osbenchmark_compat import exceptions

__all__ = ["IndexIdConflict", "ParamSource", "Slice", "bounds", "chain", "exceptions"]
