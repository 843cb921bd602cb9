"""The probes of a link, standard library only: bench runs this file's text with ``python3 -c`` on a cloud
host that has no bench installed (a node host), and imports it here (``link_measure.py``).

``rtt ADDRESS SAMPLES [answer|connect]``: round trips to a transport port: ``answer`` sends an HTTP line and times
the first byte of the answer; ``connect`` times the TCP handshake.
``sink PORT_LO PORT_HI BYTES``: listen on the first free port of the range, print it, take one connection and
print, as JSON, the bytes received and the time from the first byte to the last. ``send ADDRESS BYTES``: send
that many bytes. Each prints one line of JSON; a failure exits non-zero with one line on stderr."""

from __future__ import annotations

import json
import socket
import sys
import time

PROBE = b"GET / HTTP/1.0\r\n\r\n"


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


def answer_rtt_ms(address: str, timeout: float = 10.0) -> float:
    """One application round trip: send an HTTP line to the transport port, time the first byte of its answer."""
    with socket.create_connection(_split(address), timeout=timeout) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        t0 = time.perf_counter()
        s.sendall(PROBE)
        if not s.recv(1):
            raise ConnectionError(f"{address} closed the connection without answering the round-trip probe")
        return (time.perf_counter() - t0) * 1000.0


def connect_rtt_ms(address: str, timeout: float = 10.0) -> float:
    t0 = time.perf_counter()
    with socket.create_connection(_split(address), timeout=timeout):
        return (time.perf_counter() - t0) * 1000.0


def _listen(lo: int, hi: int) -> socket.socket:
    for port in range(lo, hi + 1):
        try:
            return socket.create_server(("0.0.0.0", port))
        except OSError:
            continue
    raise OSError(f"no free port in {lo}-{hi}")


def sink(lo: int, hi: int, total: int, timeout: float = 120.0) -> dict[str, float | int]:
    server = _listen(lo, hi)
    server.settimeout(timeout)
    print(json.dumps({"port": server.getsockname()[1]}), flush=True)
    conn, _ = server.accept()
    conn.settimeout(timeout)
    first = last = 0.0
    got = first_block = 0
    with conn:
        while data := conn.recv(1 << 16):
            last = time.perf_counter()
            if not got:
                first, first_block = last, len(data)
            got += len(data)
    server.close()
    if got < total or last <= first:
        raise OSError(f"received {got} of {total} bytes")
    # the first block's arrival starts the clock: its bytes are not counted
    return {"bytes": got, "seconds": last - first, "bps": (got - first_block) * 8 / (last - first)}


def send(address: str, total: int, timeout: float = 120.0) -> dict[str, int]:
    block = b"\0" * (1 << 16)
    sent = 0
    with socket.create_connection(_split(address), timeout=timeout) as s:
        while sent < total:
            sent += s.send(block[: total - sent])
    return {"bytes": sent}


def main(argv: list[str]) -> int:
    try:
        if argv[0] == "rtt":
            probe = connect_rtt_ms if argv[3:] == ["connect"] else answer_rtt_ms
            out: object = [probe(argv[1]) for _ in range(int(argv[2]))]
        elif argv[0] == "sink":
            out = sink(int(argv[1]), int(argv[2]), int(argv[3]))
        else:
            out = send(argv[1], int(argv[2]))
    except OSError as e:
        print(f"link probe {argv[0]}: {e}", file=sys.stderr)
        return 1
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
