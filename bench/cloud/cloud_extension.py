"""What the cloud extension registers with bench's seams (published as a ``bench.extensions`` entry point)."""

from __future__ import annotations

from bench.api import register_source
from bench.cloud.source import topology_source


def setup() -> None:
    register_source(topology_source)
