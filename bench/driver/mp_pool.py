"""The load-driver workers as local processes (multiprocessing, spawn): the default WorkerPool."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import threading
import time
from typing import Any

from bench.driver.pool import Command, Message
from bench.driver.worker import worker_main
from bench.trials import TelemetryRow

READER_STOPPED = "the load driver's results reader stopped"


class MpWorkerPool:
    def __init__(self) -> None:
        self._ctx = mp.get_context("spawn")  # fork would copy the parent's event loop and threads
        self._procs: list[Any] = []
        self._cmds: list[Any] = []
        self._results: Any = None
        self._messages: asyncio.Queue[Message] | None = None
        self._reader: threading.Thread | None = None

    def start(self, count: int, extensions: dict[str, str]) -> None:
        self._results = self._ctx.Queue()
        for wid in range(count):
            q = self._ctx.Queue()
            p = self._ctx.Process(target=worker_main, args=(wid, q, self._results, extensions),
                                  name=f"bench-worker-{wid}", daemon=True)
            p.start()
            self._cmds.append(q)
            self._procs.append(p)

    def send(self, wid: int, cmd: Command) -> None:
        self._cmds[wid].put(cmd)

    def broadcast(self, cmd: Command) -> None:
        for q in self._cmds:
            q.put(cmd)

    async def next_message(self, timeout: float) -> Message | None:
        if self._messages is None:
            # The reader thread hands messages to the loop that waits for them, so it starts with the first wait.
            self._messages = asyncio.Queue()
            self._reader = threading.Thread(target=self._read, args=(asyncio.get_running_loop(), self._messages),
                                            daemon=True, name="bench-results")
            self._reader.start()
        try:
            return await asyncio.wait_for(self._messages.get(), timeout)
        except asyncio.TimeoutError:
            return None

    def _read(self, loop: asyncio.AbstractEventLoop, messages: asyncio.Queue[Message]) -> None:
        while True:
            try:
                msg = self._results.get()
            except (EOFError, OSError, ValueError):
                msg = ("error", -1, READER_STOPPED)
            except Exception as e:  # noqa: BLE001 - e.g. a message that cannot be unpickled
                # A reader that died silently would leave the step waiting forever: fail the race instead.
                msg = ("error", -1, f"load driver results could not be read: {type(e).__name__}: {e}")
            if msg[0] == "closed":
                return
            try:
                loop.call_soon_threadsafe(messages.put_nowait, msg)
            except RuntimeError:  # the loop is closed: nobody waits any more
                return
            if msg[0] == "error" and msg[1] == -1:
                return

    def exit_codes(self) -> dict[int, int | None]:
        return {wid: p.exitcode for wid, p in enumerate(self._procs)}

    def pids(self) -> list[int]:
        return [p.pid for p in self._procs if p.pid is not None]  # no is_alive(): it reaps, from another thread

    def telemetry(self) -> list[TelemetryRow]:
        return []  # host telemetry samples local workers by their pids

    def notes(self) -> list[str]:
        return []  # host telemetry's section flags busy local workers

    def close(self) -> None:
        for q in self._cmds:
            try:
                q.put(("shutdown",))
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 5
        for p in self._procs:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.terminate()
                p.join(2)
        if self._results is not None:
            # Wake the reader thread and wait for it, so it never reads from a queue being torn down.
            self._results.put(("closed",))
            if self._reader is not None:
                self._reader.join(5)
                self._reader = None
        self._procs.clear()
        self._cmds.clear()
