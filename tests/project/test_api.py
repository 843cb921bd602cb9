"""bench.api stays the whole extension API: every register_* seam of the core is exported, every name resolves."""

from __future__ import annotations

import ast
from pathlib import Path

import bench
import bench.api

EXTENSIONS = ("ccr", "cloud", "loadgen", "ray", "redline", "telemetry")  # their own registries are theirs


def _core_seams() -> set[str]:
    root = Path(bench.__file__).parent
    found = set()
    for path in root.rglob("*.py"):
        if path.relative_to(root).parts[0] in EXTENSIONS:
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("register_"):
                found.add(node.name)
    return found


def test_every_core_seam_is_in_the_api() -> None:
    seams = _core_seams()
    assert seams, "no register_* function found: the scan is broken"
    assert seams <= set(bench.api.__all__), f"missing from bench.api: {sorted(seams - set(bench.api.__all__))}"


def test_every_exported_name_resolves() -> None:
    assert [n for n in bench.api.__all__ if not hasattr(bench.api, n)] == []
    assert len(set(bench.api.__all__)) == len(bench.api.__all__)
