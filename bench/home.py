"""Where bench keeps its state: $BENCH_HOME (default ~/.bench)."""

from __future__ import annotations

import os
from pathlib import Path


def bench_home() -> Path:
    home = Path(os.environ.get("BENCH_HOME") or Path.home() / ".bench").expanduser()
    home.mkdir(parents=True, exist_ok=True)
    return home


def cache_home() -> Path:
    """Where downloads are cached: $BENCH_CACHE, else the bench home.

    Tests point BENCH_HOME at a fresh folder but keep BENCH_CACHE, so a distribution is downloaded once.
    """
    cache = os.environ.get("BENCH_CACHE")
    if not cache:
        return bench_home()
    p = Path(cache).expanduser()
    p.mkdir(parents=True, exist_ok=True)
    return p


def distributions_dir() -> Path:
    """Downloaded distribution archives and their unpacked installs (a cache, safe to delete)."""
    return _sub("distributions", cache_home())


def data_dir() -> Path:
    """Corpora: downloaded or generated documents (a cache, safe to delete)."""
    return _sub("data", cache_home())


def trials_dir() -> Path:
    """Per-trial files that do not belong in the database, e.g. node logs."""
    return _sub("trials")


def db_path() -> Path:
    return bench_home() / "bench.db"


def _sub(name: str, base: Path | None = None) -> Path:
    p = (base or bench_home()) / name
    p.mkdir(parents=True, exist_ok=True)
    return p


def project_root() -> Path:
    """The checkout bench runs from; built-in tracks, car configs, profiles and templates live here."""
    return Path(__file__).resolve().parent.parent
