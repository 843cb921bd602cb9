"""The coordinator's view of its load-driver workers: a set of worker processes it sends commands to and
receives messages from. ``bench.driver.mp_pool`` implements it with multiprocessing; another execution engine
(e.g. Ray) implements the same interface. Commands and messages are the classes of ``bench.driver.messages``;
every message, samples included, comes back through ``next_message``.
"""

from __future__ import annotations

from typing import Protocol

from bench.driver.messages import Command, Message
from bench.driver.samples import TelemetryRow

__all__ = ["Command", "Message", "WorkerPool"]


class WorkerPool(Protocol):
    def start(self, count: int, extensions: dict[str, str]) -> None:
        """Start ``count`` workers (ids 0..count-1); each registers ``extensions`` (name -> "module:setup")
        besides the installed ones before it runs a step."""

    def send(self, wid: int, cmd: Command) -> None: ...

    def broadcast(self, cmd: Command) -> None: ...

    async def next_message(self, timeout: float) -> Message | None:
        """The next message of any worker, or None after ``timeout`` seconds without one. A pool that can no
        longer deliver messages answers ``WorkerError(POOL_WID, why)`` once."""

    def exit_codes(self) -> dict[int, int | None]:
        """Each worker's exit code, None while it runs."""

    def pids(self) -> list[int]:
        """The workers' process ids (telemetry counts their CPU as the driver's)."""

    def close(self) -> None:
        """Shut the workers down, killing those that do not stop in time; safe to call more than once."""

    def telemetry(self) -> list[TelemetryRow]:
        """What the pool measured about its workers, stored with the trial after ``close`` (a distributed
        backend: each machine's clock offset and driver CPU); none for local processes."""

    def notes(self) -> list[str]:
        """What the race's summary should say about the load driver, known after ``close`` (a distributed
        backend: a machine whose workers were busy enough to have limited the load); none for local processes."""
