"""Where bench keeps its state: $BENCH_HOME (default ~/.bench)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from bench.util.errors import BenchError

# Errors that mean "this place cannot take bench's files", as opposed to a bug in bench.
STORAGE_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT})


def storage_error(path: Path | str, e: OSError, what: str = "bench home") -> BenchError:
    """One line naming the path, what is wrong with it and what to do."""
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return BenchError(f"no space left on device writing {e.filename or path}: free space or set BENCH_HOME "
                          "to a folder with free space")
    if e.errno == errno.EROFS:
        problem = f"{what} {path} is read-only"
    elif e.errno in (errno.EACCES, errno.EPERM) and e.filename and os.path.isfile(e.filename) \
            and not os.access(e.filename, os.R_OK):
        # A file bench only reads (a corpus, a config) is not a reason to move bench's home.
        return BenchError(f"{e.filename} is not readable (permission denied): make it readable by this user "
                          "(chmod) or run bench as its owner")
    elif e.errno in (errno.EACCES, errno.EPERM):
        problem = f"{what} {path} is not writable (permission denied on {e.filename or path})"
    else:
        problem = f"{what} {path} cannot be written ({e.strerror or e})"
    return BenchError(f"{problem}: make it writable or set BENCH_HOME to a writable folder")


def bench_home_path() -> Path:
    """$BENCH_HOME without creating it."""
    return Path(os.environ.get("BENCH_HOME") or Path.home() / ".bench").expanduser()


def bench_home() -> Path:
    home = bench_home_path()
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise storage_error(home, e) from None
    return home


def cache_home() -> Path:
    """Where downloads are cached: $BENCH_CACHE, else the bench home.

    Tests point BENCH_HOME at a fresh folder but keep BENCH_CACHE, so a distribution is downloaded once.
    """
    cache = os.environ.get("BENCH_CACHE")
    if not cache:
        return bench_home()
    p = Path(cache).expanduser()
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise storage_error(p, e, "BENCH_CACHE") from None
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
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise storage_error(p, e, "folder") from None
    return p
