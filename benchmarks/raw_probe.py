"""The ceiling a load driver is measured against: bare asyncio re-sending prebuilt _bulk bodies, no bookkeeping.

One process, ``--clients`` keep-alive HTTP/1.1 connections (asyncio streams), each sending the next prebuilt body,
reading the whole answer, sending the next, for ``--seconds``. Bodies are what bench sends for the driver-ceiling
track: the nginx generator's documents (seed 1) with the same action line, ``--bulk-size`` documents each, built
before the clock. No samples, no schedule, no latency: only documents answered per second and the process's CPU.
Prints one JSON object. Used by benchmarks/driver_ceiling.py; runnable alone against any bulk sink:

    python benchmarks/raw_probe.py --port PORT [--clients 8] [--bulk-size 5000] [--seconds 60] [--docs 200000]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import time
from pathlib import Path

import psutil

from bench.driver.bulk.bodies import action_line
from bench.track.generators import generate


def bodies(docs: int, bulk_size: int) -> list[bytes]:
    buf = io.BytesIO()
    generate("nginx", 1, docs, buf)
    lines = buf.getvalue().split(b"\n")[:-1]
    action = action_line("nginx")
    out = []
    for i in range(0, len(lines) - bulk_size + 1, bulk_size):
        out.append(b"".join(action + line + b"\n" for line in lines[i:i + bulk_size]))
    return out


async def client(host: str, port: int, prebuilt: list[bytes], offset: int, until: float, counts: list[int],
                 bulk_size: int) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    n = offset
    try:
        while time.monotonic() < until:
            body = prebuilt[n % len(prebuilt)]
            n += 1
            writer.write(b"POST /_bulk HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/x-ndjson\r\n"
                         b"Content-Length: %d\r\n\r\n" % (host.encode(), port, len(body)))
            writer.write(body)
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            if length:
                await reader.readexactly(length)
            if not head.startswith(b"HTTP/1.1 2"):
                raise RuntimeError(f"the sink answered {head.split(b' ', 2)[1].decode()}")
            counts[0] += bulk_size
    finally:
        writer.close()


async def run(host: str, port: int, clients: int, prebuilt: list[bytes], seconds: float, bulk_size: int
              ) -> tuple[int, float]:
    counts = [0]
    start = time.monotonic()
    await asyncio.gather(*(client(host, port, prebuilt, i * len(prebuilt) // clients, start + seconds, counts,
                                  bulk_size) for i in range(clients)))
    return counts[0], time.monotonic() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--bulk-size", type=int, default=5000)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--docs", type=int, default=200_000, help="documents to build bodies from (re-sent in a loop)")
    ap.add_argument("--json-file", help="also write the result here")
    a = ap.parse_args()
    prebuilt = bodies(a.docs, a.bulk_size)
    me = psutil.Process()
    cpu0 = sum(me.cpu_times()[:2])
    docs, wall = asyncio.run(run(a.host, a.port, a.clients, prebuilt, a.seconds, a.bulk_size))
    cpu = sum(me.cpu_times()[:2]) - cpu0
    result = json.dumps({"docs_per_s": round(docs / wall), "cpu_cores": round(cpu / wall, 2),
                         "seconds": round(wall, 1), "bodies": len(prebuilt), "clients": a.clients,
                         "bulk_size": a.bulk_size})
    print(result)
    if a.json_file:
        Path(a.json_file).write_text(result + "\n")


if __name__ == "__main__":
    main()
