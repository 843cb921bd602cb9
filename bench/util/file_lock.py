"""One writer at a time per cached file, so benches running at once share the download cache safely.

Two benches (or the two clusters of one race, started from threads) often want the same archive or corpus file
at the same moment from an empty cache. Without a lock both download it, into the same ``.part``: one truncates
what the other wrote (checksum mismatch), or renames it away under the other (``FileNotFoundError``). So:

- ``exclusive(lock_file_for(target))`` holds ``fcntl.flock`` on a lock file beside the target while one process
  checks, downloads, verifies and renames; the others wait (saying so on the activity line), then find the verified
  file and use it. flock, not ``lockf``: its lock belongs to the open file, so threads of one process exclude each
  other too, and the kernel drops it when the holder dies (even by ``kill -9``): a lock file left behind is harmless
  and is never deleted (deleting it could let a waiter and a newcomer lock two different files).
- each writer writes its own part file (``part_path``: ``<target>.<pid>-<random>.part``), so even a writer that
  does not lock (an older bench on the same cache) never shares one; whoever holds the lock removes the part files
  a killed process left (``remove_stale_parts``), since no live writer of that target can exist then.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path

from bench.util.activity import say

log = logging.getLogger(__name__)


def lock_file_for(target: Path) -> Path:
    """The lock file that guards ``target``: ``<target>.lock`` beside it."""
    return target.with_name(target.name + ".lock")


@contextlib.contextmanager
def exclusive(lock_file: Path, *, waiting: str) -> Iterator[None]:
    """Hold the exclusive lock on ``lock_file`` for the block; if another process holds it, say ``waiting`` (on the
    activity line and in the log) and wait for it. Ctrl-C while waiting interrupts the wait."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "a") as f:  # "a": opening never truncates or replaces the file another process locks
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("%s (lock %s)", waiting, lock_file)
            say(waiting)
            fcntl.flock(f, fcntl.LOCK_EX)
            log.info("%s: done waiting", lock_file.name)
        yield  # closing the file releases the lock


def part_path(target: Path) -> Path:
    """A part file for ``target`` that no other writer uses: ``<target>.<pid>-<8 hex>.part``."""
    return target.with_name(f"{target.name}.{os.getpid()}-{secrets.token_hex(4)}.part")


def remove_stale_parts(target: Path) -> list[Path]:
    """Delete the part files of ``target`` (``part_path``'s and the older ``<target>.part``); call it only while
    holding ``target``'s lock, when they can only be a killed writer's. Returns what it deleted."""
    pattern = re.compile(re.escape(target.name) + r"\.(?:\d+-[0-9a-f]{8}\.)?part")
    removed = []
    with contextlib.suppress(FileNotFoundError):
        for p in target.parent.iterdir():
            if pattern.fullmatch(p.name):
                p.unlink(missing_ok=True)
                removed.append(p)
    if removed:
        log.info("removed part files a stopped process left: %s", ", ".join(p.name for p in removed))
    return removed


def write_atomically(target: Path, data: bytes) -> None:
    """Replace ``target`` with ``data`` at once: readers see the old content or the new, never a torn one."""
    part = part_path(target)
    try:
        part.write_bytes(data)
        os.replace(part, target)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
