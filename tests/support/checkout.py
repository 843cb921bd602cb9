"""The checkout the tests run from: its bench/ sources, benchmarks/, example files and test-artifacts/.
bench itself never looks for a checkout (its data comes with the package: bench/util/bundled.py)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
