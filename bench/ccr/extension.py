"""What the ccr extension registers with bench's seams (published as a ``bench.extensions`` entry point)."""

from __future__ import annotations


def setup() -> None:
    pass
    from bench.ccr.race_hook import CcrHook
    from bench.pipeline import register_race_hook

    register_race_hook(CcrHook)
