"""The load-driver workers as local processes (multiprocessing, spawn): the default WorkerPool."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import threading
import time
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue

from bench.driver.messages import POOL_WID, Command, Message, Shutdown, WorkerError
from bench.driver.samples import TelemetryRow
from bench.driver.worker import worker_main
from bench.util.memory import out_of_memory

READER_STOPPED = "the load driver's results reader stopped"


@dataclass(frozen=True, slots=True)
class _CloseReader:
    """Put on the results queue by ``close``: the reader thread ends."""


class MpWorkerPool:
    def __init__(self) -> None:
        self._ctx = mp.get_context("spawn")  # fork would copy the parent's event loop and threads
        self._procs: list[BaseProcess] = []
        self._cmds: list[Queue[Command]] = []
        self._results: Queue[Message | _CloseReader] | None = None
        self._messages: asyncio.Queue[Message] | None = None
        self._reader: threading.Thread | None = None

    def start(self, count: int, extensions: dict[str, str]) -> None:
        self._results = self._ctx.Queue()
        for wid in range(count):
            q: Queue[Command] = self._ctx.Queue()
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
            assert self._results is not None, "start() first"
            self._reader = threading.Thread(target=self._read,
                                            args=(self._results, asyncio.get_running_loop(), self._messages),
                                            daemon=True, name="bench-results")
            self._reader.start()
        try:
            return await asyncio.wait_for(self._messages.get(), timeout)
        except asyncio.TimeoutError:
            return None

    def _read(self, results: Queue[Message | _CloseReader], loop: asyncio.AbstractEventLoop,
              messages: asyncio.Queue[Message]) -> None:
        while True:
            msg: Message | _CloseReader
            try:
                msg = results.get()
            except (EOFError, OSError, ValueError):
                msg = WorkerError(POOL_WID, READER_STOPPED)
            except MemoryError:  # bench's own limit (ulimit -v), met reading a worker's message
                msg = WorkerError(POOL_WID, out_of_memory("bench", "raise the limit, or run fewer clients per worker"))
            except Exception as e:  # noqa: BLE001 - e.g. a message that cannot be unpickled
                # A reader that died silently would leave the step waiting forever: fail the race instead.
                msg = WorkerError(POOL_WID, f"load driver results could not be read: {type(e).__name__}: {e}")
            if isinstance(msg, _CloseReader):
                return
            try:
                loop.call_soon_threadsafe(messages.put_nowait, msg)
            except RuntimeError:  # the loop is closed: nobody waits any more
                return
            if isinstance(msg, WorkerError) and msg.wid == POOL_WID:
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
                q.put(Shutdown())
            except (OSError, ValueError, RuntimeError):  # RuntimeError: no thread left to feed the queue
                pass  # the workers are terminated below
        deadline = time.monotonic() + 5
        for p in self._procs:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.terminate()
                p.join(2)
            if p.is_alive():  # a stopped process keeps SIGTERM pending: only SIGKILL ends it
                p.kill()
                p.join(2)
        if self._results is not None and self._reader is not None and self._reader.is_alive():
            # Wake the reader thread and wait for it, so it never reads from a queue being torn down.
            try:
                self._results.put(_CloseReader())
                self._reader.join(5)
            except RuntimeError:  # out of threads (ulimit): the daemon reader ends with bench
                pass
        self._reader = None
        self._procs.clear()
        self._cmds.clear()
