"""The small process that owns one node: ``python -m bench.provision.guard`` (started by LocalProvisioner).

Why it exists: a node must die with bench (even on ``kill -9``), yet ``--keep-cluster`` must be able
to leave it running after bench exits. The guard reads a JSON launch spec as the first line on
stdin, starts the node (as the node user, with a parent-death SIGKILL set after the uid switch), and
then watches stdin: EOF (bench is gone: the pipe closes the instant bench dies, even on ``kill -9``, so it
serves as the guard's parent-death notice) stops the node after a 1 s grace, SIGTERM stops it gracefully,
then forcibly; the line ``detach`` makes it keep the node running on its own. When bench is gone (EOF), nobody else will
clean up, so the guard also copies the node's logs to the trial and removes the node's folder.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading

import psutil

from bench.provision.osuser import pdeathsig_preexec

# Bench died: nobody waits for a clean shutdown, and a node left running keeps load and ports busy.
ORPHAN_GRACE = 1.0


def kill_survivors(procs: list[psutil.Process], settle: float, reap: float = 10.0) -> None:
    """Wait up to ``settle`` s for processes already told to stop, SIGKILL the ones left, wait for those."""
    _, alive = psutil.wait_procs(procs, timeout=settle)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=reap)


def stop_tree(proc: subprocess.Popen, grace: float, settle: float | None = None) -> None:
    """SIGTERM the launcher (it shuts the server JVM down), then SIGKILL whatever of the tree is left.

    ``settle``: how long the rest of the tree may take after the launcher (default: a sixth of the grace)."""
    try:
        tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    for p in tree:
        try:
            p.terminate()
            p.resume()  # a stopped (SIGSTOP) process acts on the SIGTERM only once continued
        except psutil.NoSuchProcess:
            pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    kill_survivors(tree, max(1.0, grace / 6) if settle is None else settle)
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)


def copy_path(src: str, dst: str) -> None:
    """A folder (merged into ``dst``) or a file; nothing when ``src`` does not exist."""
    if os.path.isdir(src):
        shutil.copytree(src, dst, dirs_exist_ok=True)
    elif os.path.isfile(src):
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst)


def clean_up_orphan(spec: dict) -> None:
    """Bench died: keep the node's logs with the trial, then delete the node's files (data can be GBs)."""
    for src, dst in spec.get("copy", []):
        try:
            copy_path(src, dst)
        except OSError as e:
            print(f"guard: could not copy {src} to {dst}: {e}", file=sys.stderr)
    remove = spec.get("remove")
    if remove:
        shutil.rmtree(remove, ignore_errors=True)
        parent = os.path.dirname(remove)
        for _ in range(2):  # the cluster's and the trial's folders, once empty
            try:
                os.rmdir(parent)
            except OSError:
                break
            parent = os.path.dirname(parent)


def main() -> int:
    spec = json.loads(sys.stdin.readline())
    user = spec.get("user")
    kwargs = {"user": user["uid"], "group": user["gid"], "extra_groups": []} if user else {}
    if spec.get("cpus"):  # the node's CPU set: its launcher and server JVM inherit it from this (only) thread
        os.sched_setaffinity(0, spec["cpus"])
    with open(spec["console_log"], "ab") as console:
        proc = subprocess.Popen(spec["argv"], cwd=spec["cwd"], env=spec["env"], stdin=subprocess.DEVNULL,
                                stdout=console, stderr=subprocess.STDOUT, close_fds=True,
                                # Safe: no other thread exists yet.
                                preexec_fn=pdeathsig_preexec(signal.SIGKILL), **kwargs)
    print(json.dumps({"launcher_pid": proc.pid}), flush=True)

    stop = threading.Event()
    detached = threading.Event()
    orphaned = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGHUP, lambda *_: stop.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is bench's to handle; it stops us in order.

    def watch_stdin() -> None:
        for line in sys.stdin:
            if line.strip() == "detach":
                detached.set()
                return
            if line.strip() == "stop":
                stop.set()
                return
        orphaned.set()  # EOF: bench died.
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    while proc.poll() is None and not stop.wait(0.5):
        pass
    if proc.poll() is None:
        if orphaned.is_set():
            stop_tree(proc, ORPHAN_GRACE, settle=0.0)
        else:
            stop_tree(proc, float(spec.get("grace", 30)))
    if orphaned.is_set() and not detached.is_set():
        clean_up_orphan(spec.get("orphan", {}))
    return proc.returncode if proc.returncode and proc.returncode > 0 else 0


if __name__ == "__main__":
    sys.exit(main())
