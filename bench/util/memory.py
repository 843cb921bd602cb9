"""What to tell the user when a process of bench runs out of memory (``MemoryError``): never a failed request or
a traceback, one line naming the process and the limit it met."""

from __future__ import annotations

import resource


def address_space_limit() -> int | None:
    """This process's soft address-space limit in bytes (``ulimit -v``), None when unlimited."""
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    return None if soft == resource.RLIM_INFINITY else soft


def out_of_memory(who: str, remedy: str) -> str:
    """``who`` ran out of memory: the line, with the address-space limit when one is set."""
    limit = address_space_limit()
    limited = f" with its address space limited to {limit / 2**20:,.0f} MB (ulimit -v)" if limit else ""
    return f"{who} ran out of memory (MemoryError){limited}: {remedy}"


def no_thread(who: str) -> str:
    """``who`` could not start a thread (CPython's ``RuntimeError: can't start new thread``): a thread's stack
    did not fit the address space, or the process limit was reached."""
    limit = address_space_limit()
    why = (f"its address space is limited to {limit / 2**20:,.0f} MB (ulimit -v) and a thread's stack did not "
           "fit" if limit else "the system's limit on processes and threads (ulimit -u) may be reached")
    return f"{who} could not start a thread: {why}; raise the limit"
