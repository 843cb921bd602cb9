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

Work that must not be done twice at once (an experiment run, whose missing races two resumes would both run) takes
``held_or_refused(lock_file, command)`` instead: the same flock, never waited for; the holder writes who it is into the lock
file (pid, host, command line), and a second comer gets ``LockHeld`` with that record at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import secrets
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.util.activity import say
from bench.util.redact import redact_text

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


class LockHeld(Exception):
    """Another process holds the lock; ``holder``: what it wrote in the lock file (empty when it wrote nothing
    yet)."""

    def __init__(self, lock_file: Path, holder: dict[str, Any]) -> None:
        super().__init__(f"{lock_file} is held by {holder or 'another process'}")
        self.lock_file = lock_file
        self.holder = holder


def this_process(command: str) -> dict[str, Any]:
    """Who holds a lock: what a second comer is told (pid, host, ``command``, since when)."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "command": redact_text(command),
            "since": datetime.now(UTC).isoformat(timespec="seconds")}


@contextlib.contextmanager
def held_or_refused(lock_file: Path, command: str) -> Iterator[None]:
    """Hold the exclusive lock on ``lock_file`` for the block, writing ``this_process(command)`` into it; raise
    ``LockHeld`` at once (never wait) when another process holds it. The kernel frees it when the holder dies."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "a+") as f:  # "a+": opening never truncates what another process locks
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LockHeld(lock_file, _holder(lock_file)) from None
        f.truncate(0)  # the previous holder's record (it is gone: its lock is free)
        f.write(json.dumps(this_process(command)))
        f.flush()
        yield  # closing the file releases the lock


def _holder(lock_file: Path, wait: float = 1.0) -> dict[str, Any]:
    """The record the holder wrote; it writes it just after locking, so an empty file is read again briefly."""
    deadline = time.monotonic() + wait
    while True:
        try:
            record = json.loads(lock_file.read_text() or "null")
        except (OSError, ValueError):
            record = None
        if isinstance(record, dict) or time.monotonic() > deadline:
            return record if isinstance(record, dict) else {}
        time.sleep(0.05)


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
