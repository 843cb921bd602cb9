"""A TCP proxy that behaves like a network link: every byte is delayed by half the round trip each way and the
link's rate is shared by all its connections, per direction (serialisation, then propagation, as on a wire).

It runs in a process of its own (``python -m bench.cloud.link_proxy``) so that the race's event loop and the
link's timing do not disturb each other; it prints its port, then serves until its stdin closes, so it ends
with the process that started it however that one ends. A userspace proxy cannot drop packets: no loss here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time

CHUNK = 64 * 1024
QUEUE_CHUNKS = 64  # per connection and direction: backpressure on the sender beyond ~4 MiB in flight


class Wire:
    """One direction of the link: when the next byte may start (shared by every connection)."""

    def __init__(self, rate_bps: int | None) -> None:
        self.rate_bps = rate_bps
        self.free_at = 0.0

    def sent_at(self, arrived: float, size: int) -> float:
        """When a chunk that reached the link at ``arrived`` has left it (serialised at the link's rate)."""
        if not self.rate_bps:
            return arrived
        start = max(arrived, self.free_at)
        self.free_at = start + size * 8 / self.rate_bps
        return self.free_at


async def _read(reader: asyncio.StreamReader, queue: asyncio.Queue[tuple[float, bytes]]) -> None:
    while True:
        data = await reader.read(CHUNK)
        await queue.put((time.monotonic(), data))
        if not data:
            return


async def _write(writer: asyncio.StreamWriter, queue: asyncio.Queue[tuple[float, bytes]], wire: Wire,
                 one_way: float) -> None:
    while True:
        arrived, data = await queue.get()
        if not data:
            with contextlib.suppress(OSError):
                writer.write_eof()
            return
        due = wire.sent_at(arrived, len(data)) + one_way
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        writer.write(data)
        await writer.drain()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, wire: Wire, one_way: float,
                ends: list[asyncio.StreamWriter]) -> None:
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(QUEUE_CHUNKS)
    try:
        await asyncio.gather(_read(reader, queue), _write(writer, queue, wire, one_way))
    except (OSError, asyncio.IncompleteReadError):
        for w in ends:  # a reset on one side ends the connection on both, as it would end-to-end
            w.close()


class LinkServer:
    def __init__(self, target_host: str, target_port: int, rtt_ms: float, rate_bps: int | None) -> None:
        self.target = (target_host, target_port)
        self.one_way = rtt_ms / 2000.0
        self.up, self.down = Wire(rate_bps), Wire(rate_bps)

    async def handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(*self.target)
        except OSError:
            client_w.close()
            return
        ends = [client_w, server_w]
        try:
            await asyncio.gather(_pump(client_r, server_w, self.up, self.one_way, ends),
                                 _pump(server_r, client_w, self.down, self.one_way, ends))
        finally:
            for w in ends:
                w.close()


async def serve(target_host: str, target_port: int, rtt_ms: float, rate_bps: int | None, port: int = 0) -> None:
    link = LinkServer(target_host, target_port, rtt_ms, rate_bps)
    server = await asyncio.start_server(link.handle, "127.0.0.1", port)
    print(server.sockets[0].getsockname()[1], flush=True)
    loop = asyncio.get_running_loop()
    stdin_closed = loop.run_in_executor(None, sys.stdin.buffer.read)  # EOF: whoever started us is gone
    async with server:
        await stdin_closed
    os._exit(0)  # open connections end as a cut link would; no teardown to wait for


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.cloud.link_proxy")
    p.add_argument("target", help="host:port the link leads to")
    p.add_argument("--rtt-ms", type=float, default=0.0)
    p.add_argument("--rate-bps", type=int, default=None)
    p.add_argument("--port", type=int, default=0)
    a = p.parse_args(argv)
    host, _, port = a.target.rpartition(":")
    asyncio.run(serve(host, int(port), a.rtt_ms, a.rate_bps, a.port))


if __name__ == "__main__":
    main()
