"""CPU sets: Linux CPU lists (``0-1,4``) parsed and written back, the CPUs this process may use, and pinning a
running process to a set (which sets: ``bench.provision.pinning``).

Pinning uses ``sched_setaffinity`` (what ``taskset`` calls): a process started by a pinned thread inherits its
set, so a node is pinned by its guard before the guard launches it, and a running process (a load-driver worker)
by setting every one of its threads. ``/proc/<pid>/status`` (``Cpus_allowed_list``) says what the kernel
applies.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from bench.util.errors import ConfigError

# Auto pinning splits the machine only from this many CPUs on: with fewer, every slot would get one CPU or
# less, and bench itself (its main process, telemetry) would compete with what it measures.
AUTO_MIN_CPUS = 4


def parse_cpu_list(text: str) -> frozenset[int]:
    """``"0-1,4"`` -> {0, 1, 4}; ValueError (naming the bad part) for anything else or an empty list."""
    out: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        lo, dash, hi = part.partition("-")
        if not lo.strip().isdigit() or (dash and not hi.strip().isdigit()):
            raise ValueError(f"{part!r} is not a CPU number or range (use a list like 0-1,4)")
        first, last = int(lo), int(hi) if dash else int(lo)
        if last < first:
            raise ValueError(f"{part!r} is a range from high to low")
        out.update(range(first, last + 1))
    if not out:
        raise ValueError("no CPU given")
    return frozenset(out)


def cpu_list_text(cpus: set[int] | frozenset[int] | list[int]) -> str:
    """{0, 1, 4} -> ``"0-1,4"`` (as the kernel writes them)."""
    ordered = sorted(set(cpus))
    runs: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        runs.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(runs)


def usable_cpus() -> frozenset[int]:
    """The CPUs this process may run on (its own affinity: a container's or a taskset's limit included)."""
    return frozenset(os.sched_getaffinity(0))


def check_cpus(cpus: frozenset[int] | None, what: str) -> None:
    """A set to pin to must lie within the CPUs bench may use here: else one line naming them (ConfigError)."""
    if cpus is None:
        return
    usable = usable_cpus()
    if not cpus <= usable:
        raise ConfigError(f"{what} {cpu_list_text(cpus)}: CPU(s) {cpu_list_text(cpus - usable)} are not usable here "
                          f"(this machine lets bench use {cpu_list_text(usable)}): name CPUs from that list")


def pin_process(pid: int, cpus: frozenset[int]) -> None:
    """Pin every thread of a running process (threads it starts later inherit the set of their creator)."""
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        tids = [pid]
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cpus)
        except ProcessLookupError:  # a thread that just ended
            pass


@contextlib.contextmanager
def own_process_on(cpus: frozenset[int] | None) -> Iterator[None]:
    """Within the block, every thread of this process (and what they start) runs on ``cpus``; after it, where they
    ran before (an experiment races again from this process). None: nothing changes."""
    if cpus is None:
        yield
        return
    before = frozenset(os.sched_getaffinity(0))
    pin_process(os.getpid(), cpus)
    try:
        yield
    finally:
        pin_process(os.getpid(), before)


def allowed_cpus(pid: int) -> frozenset[int] | None:
    """The CPUs the kernel lets ``pid`` run on (``Cpus_allowed_list`` of ``/proc/<pid>/status``); None when the
    process is gone or the file unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return parse_cpu_list(line.split(":", 1)[1])
    except (OSError, ValueError):
        return None
    return None
