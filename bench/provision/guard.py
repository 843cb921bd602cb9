"""The small process that owns one node: ``python -m bench.provision.guard`` (started by LocalProvisioner).

Why it exists: a node must die with bench (even on ``kill -9``), yet ``--keep-cluster`` must be able
to leave it running after bench exits. The guard reads a JSON launch spec as the first line on
stdin, starts the node (as the node user, with a parent-death SIGKILL set after the uid switch), and
then watches stdin: EOF (bench is gone) or SIGTERM stops the node gracefully, then forcibly; the
line ``detach`` makes it keep the node running on its own.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading

import psutil

from bench.provision.osuser import pdeathsig_preexec


def stop_tree(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM the launcher (it shuts the server JVM down), then SIGKILL whatever of the tree is left."""
    try:
        tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    for p in tree:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    _, alive = psutil.wait_procs(tree, timeout=max(1.0, grace / 6))
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=10)
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)


def main() -> int:
    spec = json.loads(sys.stdin.readline())
    user = spec.get("user")
    kwargs = {"user": user["uid"], "group": user["gid"], "extra_groups": []} if user else {}
    with open(spec["console_log"], "ab") as console:
        proc = subprocess.Popen(spec["argv"], cwd=spec["cwd"], env=spec["env"], stdin=subprocess.DEVNULL,
                                stdout=console, stderr=subprocess.STDOUT, close_fds=True,
                                # Safe: no other thread exists yet.
                                preexec_fn=pdeathsig_preexec(signal.SIGKILL), **kwargs)  # noqa: PLW1509
    print(json.dumps({"launcher_pid": proc.pid}), flush=True)

    stop = threading.Event()
    detached = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGHUP, lambda *_: stop.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is bench's to handle; it stops us in order.

    def watch_stdin() -> None:
        for line in sys.stdin:
            if line.strip() == "detach":
                detached.set()
                return
            if line.strip() == "stop":
                break
        stop.set()  # EOF: bench died (or asked us to stop).

    threading.Thread(target=watch_stdin, daemon=True).start()
    while proc.poll() is None and not stop.wait(0.5):
        pass
    if proc.poll() is None:
        stop_tree(proc, float(spec.get("grace", 30)))
    return proc.returncode if proc.returncode and proc.returncode > 0 else 0


if __name__ == "__main__":
    sys.exit(main())
