"""A load-driver worker as a Ray actor: the same worker loop as a local worker process, in a thread of the actor,
with the actor's methods as its command queue and its (bounded) outbox."""

from __future__ import annotations

import os
import queue
import threading
import time
from typing import Any

from bench.driver.messages import Command, Message, Shutdown, WorkerError
from bench.driver.worker import raise_nofile_limit, run_worker

# Messages an actor holds for the coordinator. A worker puts a batch of samples every half second, so a full
# outbox means the coordinator fell minutes behind: then the worker waits (bounded memory) rather than drop samples.
OUTBOX_SIZE = 256
POLL_BATCH = 64  # messages one poll returns at most


class _Results:
    """What the worker loop puts messages into; errors name the node, since "worker 3" says little on a cluster."""

    def __init__(self, outbox: queue.Queue[Message], where: str) -> None:
        self._outbox = outbox
        self._where = where

    def put(self, msg: Message) -> None:
        if isinstance(msg, WorkerError):
            msg = WorkerError(msg.wid, f"{msg.message} (on {self._where})")
        self._outbox.put(msg)


class RayWorker:
    """Made a Ray actor by ``ray.remote`` where the pool starts it (ray stays an import of the pool only)."""

    def __init__(self, wid: int, extensions: dict[str, str], where: str, prepare_corpora: bool = False) -> None:
        """``prepare_corpora``: the actor is not on the coordinator's Ray node, so it prepares each step's corpus
        files in its node's own data cache (``$BENCH_HOME`` there) instead of reading the coordinator's paths."""
        raise_nofile_limit()
        self._commands: queue.Queue[Command] = queue.Queue()
        self._outbox: queue.Queue[Message] = queue.Queue(OUTBOX_SIZE)
        self._thread = threading.Thread(target=run_worker, name=f"bench-worker-{wid}", daemon=True,
                                        args=(wid, self._commands, _Results(self._outbox, where), extensions),
                                        kwargs={"prepare_corpora": prepare_corpora})
        self._thread.start()

    def info(self) -> dict[str, Any]:
        """Where the actor runs and its clock, read at one instant (the pool measures the clock's offset)."""
        import ray

        ctx = ray.get_runtime_context()
        return {"pid": os.getpid(), "node_id": ctx.get_node_id(), "ip": ray.util.get_node_ip_address(),
                "monotonic": time.monotonic()}

    def monotonic(self) -> float:
        return time.monotonic()

    def cpu_seconds(self) -> float:
        t = os.times()
        return t.user + t.system

    def send(self, cmd: Command) -> None:
        self._commands.put(cmd)

    def poll(self, wait: float) -> list[Message]:
        """The messages waiting (up to POLL_BATCH), after at most ``wait`` seconds for the first."""
        out: list[Message] = []
        try:
            out.append(self._outbox.get(timeout=wait))
        except queue.Empty:
            return out
        while len(out) < POLL_BATCH:
            try:
                out.append(self._outbox.get_nowait())
            except queue.Empty:
                break
        return out

    def stop(self, timeout: float) -> bool:
        """Shut the worker loop down; True if it ended within ``timeout`` seconds."""
        self._commands.put(Shutdown())
        self._thread.join(timeout)
        return not self._thread.is_alive()
