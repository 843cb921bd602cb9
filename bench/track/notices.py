"""One-line warnings about a track that bench loads anyway (a legacy spelling, a variable rendered empty).

Each goes to stderr once per process, prefixed ``bench: warning:``, and to the log: the user sees what bench assumed
without a traceback or a repeated line per task.
"""

from __future__ import annotations

import logging
import sys
import threading

log = logging.getLogger(__name__)
_lock = threading.Lock()
_SEEN: set[str] = set()


def warn(line: str) -> None:
    with _lock:
        if line in _SEEN:
            return
        _SEEN.add(line)
    log.info("warning: %s", line)
    print(f"bench: warning: {line}", file=sys.stderr, flush=True)


def params_hint(names: list[str]) -> str:
    """How to give the named track parameters."""
    return "--track-params=" + ",".join(f"{n}:VALUE" for n in names)
