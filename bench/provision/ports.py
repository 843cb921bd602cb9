"""Choosing node ports on 127.0.0.1: free ones, or a given base checked before anything starts."""

from __future__ import annotations

import socket
import threading

from bench.util.errors import ProvisionError

HOST = "127.0.0.1"
_reserved: set[int] = set()  # handed out in this process but maybe not bound by a node yet
_lock = threading.Lock()


def port_problem(port: int, host: str = HOST) -> str | None:
    """Why port cannot be bound on host, or None if it can."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # Nodes bind with SO_REUSEADDR too, so TIME_WAIT leftovers do not count as in use.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            return e.strerror or str(e)
    return None


def node_ports(nodes: int, base_http_port: int | None) -> list[tuple[int, int]]:
    """(http, transport) per node. With a base: http base+i, transport base+100+i (like 9200/9300)."""
    with _lock:
        if base_http_port is None:
            ports = _free_ports(2 * nodes)
            pairs = [(ports[2 * i], ports[2 * i + 1]) for i in range(nodes)]
        else:
            pairs = [(base_http_port + i, base_http_port + 100 + i) for i in range(nodes)]
            for port in [p for pair in pairs for p in pair]:
                if port > 65535:
                    raise ProvisionError(f"http port {base_http_port} leaves no room for {nodes} nodes "
                                         f"(needs up to {port}); choose a lower --http-port")
                problem = "reserved by another cluster of this race" if port in _reserved else port_problem(port)
                if problem:
                    raise ProvisionError(f"port {port} on {HOST} is already in use: {problem}; "
                                         "choose another --http-port or omit it to pick free ports")
        _reserved.update(p for pair in pairs for p in pair)
        return pairs


def release(ports: list[int]) -> None:
    with _lock:
        _reserved.difference_update(ports)


def _ephemeral_range() -> str:
    """`` (net.ipv4.ip_local_port_range 32768-60999)`` where Linux says, else nothing."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = f.read().split()
    except (OSError, ValueError):
        return ""
    return f" (net.ipv4.ip_local_port_range {low}-{high})"


def _free_ports(n: int) -> list[int]:
    socks: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < n:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            try:
                s.bind((HOST, 0))
            except OSError as e:
                raise ProvisionError(f"no free port on {HOST} for the nodes' HTTP and transport ports: every port "
                                     f"of the range the system picks from{_ephemeral_range()} is taken "
                                     f"({e.strerror or e}); free some, widen the range, or give the nodes "
                                     "ports with --http-port") from None
            port = s.getsockname()[1]
            if port not in _reserved:
                ports.append(port)
    finally:
        for s in socks:
            s.close()
    return ports
