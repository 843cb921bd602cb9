"""What the loadgen extension registers with bench's seams (published as a ``bench.extensions`` entry point)."""

from __future__ import annotations

from bench.loadgen.runner import register as register_loadgen_operations


def setup() -> None:
    register_loadgen_operations()
