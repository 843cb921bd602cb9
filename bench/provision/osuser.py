"""The unprivileged OS user nodes run as when bench runs as root (Elasticsearch refuses root)."""

from __future__ import annotations

import ctypes
import grp
import logging
import os
import pwd
import signal
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.util.errors import ProvisionError

log = logging.getLogger(__name__)

NODE_USER = "bench-es"
_PR_SET_PDEATHSIG = 1
_lock = threading.Lock()


@dataclass(frozen=True)
class NodeUser:
    name: str
    uid: int
    gid: int


def node_user(name: str = NODE_USER) -> NodeUser | None:
    """None when not root (nodes run as us); else the unprivileged user, created once with useradd --system."""
    if os.geteuid() != 0:
        return None
    with _lock:
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            log.info("running as root: creating system user %s to run the nodes", name)
            cmd = ["useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", name]
            try:
                res = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
            except (OSError, subprocess.TimeoutExpired) as e:
                raise ProvisionError(f"running as root and cannot create user {name} with useradd: {e}; "
                                     "create it yourself or run bench as a normal user") from e
            # exit 9: created concurrently by someone else.
            if res.returncode not in (0, 9):
                raise ProvisionError(f"running as root and `{' '.join(cmd)}` failed (exit {res.returncode}): "
                                     f"{res.stderr.strip()}; create the user yourself or run bench as a normal user")
            pw = pwd.getpwnam(name)
    return NodeUser(name=name, uid=pw.pw_uid, gid=pw.pw_gid)


def chown_tree(path: Path, user: NodeUser | None) -> None:
    if user is None:
        return
    os.chown(path, user.uid, user.gid)
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            os.lchown(os.path.join(root, n), user.uid, user.gid)


def make_traversable(path: Path, stop_at: Path | None = None) -> None:
    """Give 'others' execute permission on path and its parents (up to stop_at) so the node user can reach it."""
    for p in [path, *path.parents]:
        if stop_at is not None and p == stop_at.parent:
            break
        try:
            mode = p.stat().st_mode
            if not mode & 0o001:
                os.chmod(p, mode | 0o005)
        except OSError:
            pass


def popen_user_kwargs(user: NodeUser | None) -> dict:
    """subprocess.Popen keyword arguments that run the child as user (nothing when not root)."""
    if user is None:
        return {}
    return {"user": user.uid, "group": user.gid, "extra_groups": []}


def user_name(user: NodeUser | None) -> str:
    return user.name if user else pwd.getpwuid(os.geteuid()).pw_name


def pdeathsig_preexec(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """A preexec_fn asking the kernel to send sig to the child when its parent dies.

    subprocess runs preexec_fn after switching uid/gid, which matters: changing credentials clears
    the parent-death signal. Note the signal fires when the *thread* that forked the child exits.
    """
    libc = ctypes.CDLL(None, use_errno=True)

    def _set() -> None:
        if libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        # The parent may already be gone between fork and prctl.
        if os.getppid() == 1:
            os.kill(os.getpid(), int(sig))

    return _set


def clear_pdeathsig() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, 0, 0, 0, 0)


def group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)
