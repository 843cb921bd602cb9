"""Rally's ``--enable-driver-profiling``, with the standard library: a thread in each local worker process samples
every thread's Python stack (``sys._current_frames``) every ``INTERVAL`` seconds and writes the counts as collapsed
stacks (``root;...;leaf <count>``, the format flame graphs read) when the worker exits.

These are wall-clock samples: a worker waiting for answers shows as its event loop's ``select``; the share of
samples elsewhere is where the driver spends its CPU. The race says where the files go through ``ENV`` (set for the
worker processes it spawns) and moves them into the trial (``<trial dir>/profiles/driver/``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

ENV = "BENCH_DRIVER_PROFILE"  # a folder: each worker writes worker-<id>.collapsed there
INTERVAL = 0.01
MAX_DEPTH = 128


def _name(frame: FrameType) -> str:
    module = frame.f_globals.get("__name__", "?")
    return f"{module}.{frame.f_code.co_qualname}".replace(";", ",").replace(" ", "_")


def _stack(frame: FrameType | None) -> list[str]:
    names: list[str] = []
    while frame is not None and len(names) < MAX_DEPTH:
        names.append(_name(frame))
        frame = frame.f_back
    return names[::-1]


class Sampler(threading.Thread):
    def __init__(self, interval: float = INTERVAL) -> None:
        super().__init__(name="bench-driver-profiler", daemon=True)
        self.interval = interval
        self.counts: Counter[str] = Counter()
        self._done = threading.Event()

    def run(self) -> None:
        me = threading.get_ident()
        while not self._done.wait(self.interval):
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                pool = "".join(c for c in names.get(ident, "thread") if not c.isdigit()) or "thread"
                self.counts[";".join([f"[{pool}]", *_stack(frame)])] += 1

    def stop(self) -> None:
        self._done.set()
        self.join(timeout=5)

    def collapsed(self) -> str:
        return "".join(f"{stack} {n}\n" for stack, n in sorted(self.counts.items()))


@contextlib.contextmanager
def profiled(wid: int) -> Iterator[None]:
    """Sample this process while the block runs when the race asked for it (``ENV``); write the file after."""
    folder = os.environ.get(ENV)
    if not folder:
        yield
        return
    sampler = Sampler()
    sampler.start()
    try:
        yield
    finally:
        sampler.stop()
        path = Path(folder) / f"worker-{wid}.collapsed"
        try:
            path.write_text(sampler.collapsed())
        except OSError:
            pass  # the race says which workers left no profile


DRIVER_PROFILES = Path("profiles") / "driver"  # in the trial folder: worker-<id>/all.collapsed


@contextlib.contextmanager
def driver_profiling(enabled: bool) -> Iterator[Path | None]:
    """While a race runs with driver profiling: a folder the worker processes it spawns write their samples to."""
    if not enabled:
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix="bench-driver-profile-"))
    before = os.environ.get(ENV)
    os.environ[ENV] = str(folder)  # spawned workers inherit it
    try:
        yield folder
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before
        shutil.rmtree(folder, ignore_errors=True)


def keep_driver_profiles(folder: Path | None, trial_id: str) -> None:
    """Move the workers' collapsed stacks into the trial (``DRIVER_PROFILES``); again later moves what came since."""
    if folder is None:
        return
    from bench.util.home import trials_dir

    for f in sorted(folder.glob("worker-*.collapsed")):
        target = trials_dir() / trial_id / DRIVER_PROFILES / f.stem
        target.mkdir(parents=True, exist_ok=True)
        shutil.move(str(f), target / "all.collapsed")
