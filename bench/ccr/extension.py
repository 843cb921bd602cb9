"""What the ccr extension registers with bench's seams (published as a ``bench.extensions`` entry point)."""

from __future__ import annotations


def setup() -> None:
    pass
    from bench.ccr.runners import register as register_ccr_operations
    register_ccr_operations()
