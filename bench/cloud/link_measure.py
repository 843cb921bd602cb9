"""Measuring a link between clusters: the round trip on the leader's transport port and the throughput.

Round trip: through a proxy a TCP connect completes at the proxy, so bench times an application round trip
instead: a line of HTTP sent to the transport port, which OpenSearch and Elasticsearch answer at once ("This is not
an HTTP port"), first byte back. Without a proxy (a real network) the TCP connect time is the round trip too.
Throughput: bytes pushed through the link (the same proxy settings) into a local sink, timed at the sink.
The probes themselves are in ``link_probe.py`` (standard library only: a cloud host runs them too)."""

from __future__ import annotations

import socket
import statistics
import threading
import time

from pydantic import BaseModel

from bench.cloud.link_probe import answer_rtt_ms, connect_rtt_ms
from bench.cloud.link_process import LinkProcess
from bench.cloud.links import Link
from bench.util.errors import ClusterError


class LinkMeasurement(BaseModel):
    rtt_ms: float | None = None  # median of the samples
    rtt_min_ms: float | None = None  # the least: the link without queueing (on the machine or at the far end)
    # Without the link (straight to the leader's transport port), probed in turn with it: what the link adds is
    # the difference, free of the leader's own answer time on a busy machine
    direct_rtt_ms: float | None = None
    added_rtt_ms: float | None = None
    rtt_samples_ms: list[float] = []
    rtt_method: str = ""
    throughput_bps: float | None = None
    throughput_bytes: int | None = None


def measure_rtt(address: str, samples: int = 7, method: str = "answer") -> LinkMeasurement:
    """The median round trip of ``samples`` probes (``answer`` through a proxy, ``connect`` on a real network)."""
    probe = answer_rtt_ms if method == "answer" else connect_rtt_ms
    try:
        values = [probe(address) for _ in range(samples)]
    except OSError as e:
        raise ClusterError(f"measuring the round trip to {address} failed: {e}") from None
    return LinkMeasurement(rtt_ms=statistics.median(values), rtt_min_ms=min(values), rtt_samples_ms=[round(v, 3) for v in values],
                           rtt_method=f"{method} round trip on the transport port, median of {samples}")


def measure_added_rtt(direct: str, via: str, samples: int = 7) -> LinkMeasurement:
    """Round trips through the link (``via``) and straight to where it leads (``direct``), in turn: the link's
    median, and what it adds (median through it minus median without it)."""
    try:
        pairs = [(answer_rtt_ms(via), answer_rtt_ms(direct)) for _ in range(samples)]
    except OSError as e:
        raise ClusterError(f"measuring the round trip to {direct} through {via} failed: {e}") from None
    linked, plain = [a for a, _ in pairs], [b for _, b in pairs]
    return LinkMeasurement(rtt_ms=statistics.median(linked), rtt_min_ms=min(linked),
                           rtt_samples_ms=[round(v, 3) for v in linked], direct_rtt_ms=statistics.median(plain),
                           added_rtt_ms=statistics.median(linked) - statistics.median(plain),
                           rtt_method=f"answer round trip on the transport port through the link and without it, "
                                      f"in turn, medians of {samples}")


def _sink(server: socket.socket, times: list[float], counts: list[int]) -> None:
    conn, _ = server.accept()
    with conn:
        while data := conn.recv(1 << 16):
            times.append(time.perf_counter())
            counts.append(len(data))


def measure_throughput(link: Link, seconds: float = 1.0) -> LinkMeasurement:
    """Bits per second through a proxy with the link's settings into a sink on this machine: ``seconds`` worth of
    the link's rate (at most 64 MiB) sent, timed from the first byte at the sink to the last."""
    if not link.rate_bps:
        return LinkMeasurement()
    total = min(int(link.rate_bps / 8 * seconds), 64 << 20)
    server = socket.create_server(("127.0.0.1", 0))
    times: list[float] = []
    counts: list[int] = []
    sink = threading.Thread(target=_sink, args=(server, times, counts), daemon=True)
    sink.start()
    try:
        with LinkProcess(link, f"127.0.0.1:{server.getsockname()[1]}") as proxy:
            with socket.create_connection(("127.0.0.1", proxy.port), timeout=30) as s:
                block = b"\0" * (1 << 16)
                sent = 0
                while sent < total:
                    sent += s.send(block[: total - sent])
            sink.join(timeout=30 + 2 * seconds)
    finally:
        server.close()
    if len(times) < 2 or sum(counts) < total:
        raise ClusterError(f"link {link.label}: the throughput probe received {sum(counts)} of {total} bytes")
    bps = (sum(counts) - counts[0]) * 8 / (times[-1] - times[0])
    return LinkMeasurement(throughput_bps=bps, throughput_bytes=total)
