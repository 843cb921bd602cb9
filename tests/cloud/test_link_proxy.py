"""bench's emulated link between clusters (bench/cloud/link_proxy.py) adds the round trip it is given and caps the
throughput at its rate, each within 10 %: measured by bench's own link measurement and, beside it, by a probe of
this test's own (an echo server and a sink behind the proxy, timed here). The proxy ends with the process that
started it, even when that one is killed."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import psutil
import pytest

from bench.cloud.link_measure import measure_rtt, measure_throughput
from bench.cloud.link_process import LinkProcess
from bench.cloud.links import Link
from bench.cloud.local_links import LocalLinks
from bench.cloud.topology import parse_topology

TOLERANCE = 0.10


def _link(**values: str) -> Link:
    return Link.model_validate({"from": "follower", "to": "leader", **values})


@pytest.fixture
def echo() -> Iterator[str]:
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=_echo, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()


def _echo(conn: socket.socket) -> None:
    with conn, contextlib.suppress(OSError):  # a prober closing with bytes unread resets the connection
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while data := conn.recv(1 << 16):
            conn.sendall(data)


def probe_rtt_ms(port: int, samples: int = 7) -> float:
    """This test's own round trips: one byte to the echo server behind the proxy and back, on one connection."""
    times = []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(samples):
            t0 = time.monotonic()
            s.sendall(b"x")
            assert s.recv(1) == b"x"
            times.append((time.monotonic() - t0) * 1000)
    return statistics.median(times)


@pytest.mark.parametrize("rtt", [50, 100, 200])
def test_link_adds_the_configured_round_trip(echo: str, rtt: int) -> None:
    with LinkProcess(_link(rtt=f"{rtt}ms"), echo) as proxy:
        bench_ms = measure_rtt(proxy.address, samples=7).rtt_ms
        probe_ms = probe_rtt_ms(proxy.port)
    assert bench_ms is not None
    print(f"rtt {rtt} ms: bench measured {bench_ms:.1f} ms, probe {probe_ms:.1f} ms; load {os.getloadavg()[0]:.2f}")
    assert abs(bench_ms - rtt) <= TOLERANCE * rtt, bench_ms
    assert abs(probe_ms - rtt) <= TOLERANCE * rtt, probe_ms


def test_without_a_link_the_round_trip_is_loopback(echo: str) -> None:
    with LinkProcess(_link(), echo) as proxy:  # the proxy itself adds (almost) nothing
        assert probe_rtt_ms(proxy.port) < 5


def probe_throughput_bps(link: Link, total: int) -> float:
    """This test's own: ``total`` bytes through the proxy into a sink, from the first send to the last byte in."""
    server = socket.create_server(("127.0.0.1", 0))
    got: list[float] = []

    def sink() -> None:
        conn, _ = server.accept()
        n = 0
        with conn:
            while data := conn.recv(1 << 16):
                n += len(data)
        got.extend([time.monotonic(), n])

    thread = threading.Thread(target=sink, daemon=True)
    thread.start()
    with LinkProcess(link, f"127.0.0.1:{server.getsockname()[1]}") as proxy:
        with socket.create_connection(("127.0.0.1", proxy.port)) as s:
            t0 = time.monotonic()
            s.sendall(b"\0" * total)
        thread.join(30)
    server.close()
    assert got and got[1] == total
    return total * 8 / (got[0] - t0)


def test_link_caps_the_throughput_at_its_rate() -> None:
    link = _link(rate="50mbit")
    bench_bps = measure_throughput(link, seconds=1.0).throughput_bps
    probe_bps = probe_throughput_bps(link, 50_000_000 // 8)
    assert bench_bps is not None
    print(f"rate 50mbit: bench measured {bench_bps / 1e6:.2f} Mbit/s, probe {probe_bps / 1e6:.2f} Mbit/s")
    assert abs(bench_bps - 50e6) <= TOLERANCE * 50e6, bench_bps
    assert abs(probe_bps - 50e6) <= TOLERANCE * 50e6, probe_bps


def test_the_proxy_ends_with_the_process_that_started_it(echo: str) -> None:
    """Killed without a chance to clean up (SIGKILL), the starter's pipe closes and its proxy exits."""
    code = ("import sys, time; from bench.cloud.link_process import LinkProcess; from bench.cloud.links import Link; "
            f"p = LinkProcess(Link.model_validate({{'from': 'a', 'to': 'b', 'rtt': '10ms'}}), {echo!r}); "
            "print(p.pid, flush=True); time.sleep(60)")
    starter = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert starter.stdout is not None
    proxy = psutil.Process(int(starter.stdout.readline()))
    assert proxy.is_running()
    os.kill(starter.pid, signal.SIGKILL)
    starter.wait()
    proxy.wait(timeout=10)  # raises psutil.TimeoutExpired if it outlived its starter


def test_a_proxy_that_dies_during_the_race_is_said(echo: str) -> None:
    """Without its proxy the follower is cut off from the leader: the race's health check says so, rather than
    the lag that follows being read as the link's."""
    topo = parse_topology({"name": "t", "clusters": [{"name": "leader"},
                                                     {"name": "follower", "remote_clusters": ["leader"]}],
                           "links": [{"from": "follower", "to": "leader", "rtt": "10ms"}]})
    links = LocalLinks(topo)
    links.proxies.append(LinkProcess(topo.links[0], echo))
    try:
        assert links.died() is None
        os.kill(links.proxies[0].pid, signal.SIGKILL)
        links.proxies[0]._proc.wait(10)
        assert links.died() == (f"link follower->leader: its proxy (pid {links.proxies[0].pid}) ended during the "
                                f"race, cutting cluster follower off from leader")
    finally:
        links.stop()
    assert links.proxies == []
