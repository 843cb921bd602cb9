"""What the cloud extension registers with bench's seams (published as a ``bench.extensions`` entry point)."""

from __future__ import annotations


def setup() -> None:
    pass
