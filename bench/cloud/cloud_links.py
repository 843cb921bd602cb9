"""A cloud topology's links: every remote-cluster connection (a CCR follower to its leader) is the real network
between the hosts, measured before the race from a host of the connecting cluster, and stored as a fact.

Round trip: ``link_probe.py``'s connect probe (the TCP handshake with the leader's transport port: with no proxy
between, one round trip of the network), median of several, run on the follower's first node host with
``python3 -c`` (node hosts have no bench). Not the answer probe bench uses through its own proxy: a transport port
with TLS (the security mixin) closes a plain-text line without answering.
Throughput: a timed transfer from the leader's first node host to a sink on the follower's, in the direction
CCR's data flows, on a port next to the follower's transport port (the topology's security group opens
transport_port..transport_port+100 between its machines)."""

from __future__ import annotations

import json
import logging
import shlex
import statistics
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench.cloud import link_probe
from bench.cloud.link_measure import LinkMeasurement
from bench.cloud.ssh import RemoteHost
from bench.cloud.topology import Topology
from bench.util.errors import ClusterError, ProvisionError

log = logging.getLogger(__name__)

SAMPLES = 7
TRANSFER_BYTES = 32 << 20
VIA = "the network between the clusters' hosts"


def connections(topo: Topology) -> list[tuple[str, str]]:
    """(from, to) for every remote cluster a cluster of the topology names: the links bench measures."""
    return [(c.name, r) for c in topo.clusters for r in c.remote_clusters]


def probe_command(args: list[str], python: str = "python3") -> str:
    """Shell running link_probe.py's text with ``args`` on a host without bench."""
    source = Path(link_probe.__file__).read_text()
    return f"{python} -c {shlex.quote(source)} {' '.join(shlex.quote(a) for a in args)}"


@contextmanager
def _open(host: RemoteHost) -> Iterator[RemoteHost]:
    """``host`` connected; closed after only if it was not connected before."""
    if host.client is not None:
        yield host
        return
    with host.connect(timeout=120):
        yield host


def _json(host: RemoteHost, args: list[str], what: str) -> Any:
    rc, out, err = host.run(probe_command(args), timeout=300, check=False)
    if rc != 0:
        raise ClusterError(f"{what} from {host.host} failed: {' '.join((err or out).split())[-300:]}")
    return json.loads(out.strip().splitlines()[-1])


def measure_rtt_from(host: RemoteHost, address: str, samples: int = SAMPLES) -> LinkMeasurement:
    values = _json(host, ["rtt", address, str(samples), "connect"], f"the round trip to {address}")
    return LinkMeasurement(rtt_ms=statistics.median(values), rtt_min_ms=min(values),
                           rtt_samples_ms=[round(v, 3) for v in values],
                           rtt_method=f"TCP connect to the transport port from {host.host}, median of {samples}")


def measure_transfer(sender: RemoteHost, receiver: RemoteHost, receiver_ip: str, ports: tuple[int, int],
                     total: int = TRANSFER_BYTES) -> dict[str, Any]:
    """``total`` bytes from ``sender`` to a sink on ``receiver`` (first free port of ``ports``), timed at the sink
    from its first block to its last: {"bytes", "seconds", "bps"}."""
    assert receiver.client, "connect() first"
    stdin, out, err = receiver.client.exec_command(probe_command(["sink", str(ports[0]), str(ports[1]), str(total)]),
                                                   timeout=300)
    stdin.close()
    first = out.readline()
    if not first:
        raise ClusterError(f"the throughput sink on {receiver.host} did not start: "
                           f"{' '.join(err.read().decode(errors='replace').split())[-300:]}")
    port = json.loads(first)["port"]
    _json(sender, ["send", f"{receiver_ip}:{port}", str(total)], f"sending {total} bytes to {receiver_ip}:{port}")
    rest = out.read().decode(errors="replace")
    if out.channel.recv_exit_status() != 0:
        raise ClusterError(f"the throughput sink on {receiver.host} failed: "
                           f"{' '.join(err.read().decode(errors='replace').split())[-300:]}")
    result: dict[str, Any] = json.loads(rest.strip().splitlines()[-1])
    return result


def measure_links(topo: Topology, node_ips: dict[str, str], hosts: dict[str, RemoteHost],
                  total: int = TRANSFER_BYTES) -> dict[str, list[dict[str, Any]]]:
    """Measure every connection of the topology; ``node_ips``: cluster -> its first node's private address,
    ``hosts``: cluster -> an SSH connection to that node's host. Returns cluster -> its links' facts."""
    facts: dict[str, list[dict[str, Any]]] = {}
    clusters = {c.name: c for c in topo.clusters}
    for source, target in connections(topo):
        missing = [n for n in (source, target) if n not in hosts or n not in node_ips]
        if missing:
            raise ProvisionError(f"link {source}->{target}: no SSH connection to a node host of {', '.join(missing)} "
                                 f"to measure it from")
        leader = f"{node_ips[target]}:{clusters[target].transport_port}"
        port = clusters[source].transport_port
        with ExitStack() as stack:
            follower_host = stack.enter_context(_open(hosts[source]))
            leader_host = stack.enter_context(_open(hosts[target]))
            rtt = measure_rtt_from(follower_host, leader)
            moved = measure_transfer(leader_host, follower_host, node_ips[source], (port + 1, port + 100), total)
        measured = rtt.model_copy(update={"throughput_bps": moved["bps"], "throughput_bytes": moved["bytes"]})
        fact = {"from": source, "to": target, "kind": "measured", "via": VIA, "from_host": node_ips[source],
                "leader_transport": leader, "measured": measured.model_dump(exclude_none=True),
                "throughput_method": f"{moved['bytes']} bytes from {node_ips[target]} to a sink on "
                                     f"{node_ips[source]}, timed at the sink ({moved['seconds']:.3f} s)"}
        log.info("link %s->%s measured: %s", source, target, fact["measured"])
        facts.setdefault(source, []).append(fact)
    return facts
