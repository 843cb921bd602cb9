"""The machine something ran on, as stored with a trial: machine id, host name, CPUs and memory.

The machine id (systemd's ``/etc/machine-id``) tells two hosts apart where host names repeat (containers, cloud
images); the placement line of a report compares it between the clusters and the load driver.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import psutil

_MACHINE_ID_FILES = (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id"))


def machine_id() -> str | None:
    for p in _MACHINE_ID_FILES:
        try:
            text = p.read_text(encoding="ascii").strip()
        except OSError:
            continue
        if text:
            return text
    return None


def this_host() -> dict[str, Any]:
    """machine_id, hostname, cpu_count (the machine's), memory_bytes: a node's host when bench started it here."""
    out: dict[str, Any] = {"hostname": socket.gethostname(), "cpu_count": os.cpu_count(),
                           "memory_bytes": psutil.virtual_memory().total}
    mid = machine_id()
    if mid:
        out["machine_id"] = mid
    return out
