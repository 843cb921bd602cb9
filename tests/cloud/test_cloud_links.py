"""A cloud topology's links: which connections bench measures, the probe a node host runs without bench (run
here as a real process over real sockets), and the placement line of a measured link."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from datetime import datetime, timezone
from typing import Any

from bench.cloud.cloud_links import connections, probe_command
from bench.cloud.plan import make_plan, render_plan
from bench.cloud.topology import parse_topology
from bench.reporting.placement import PlacedTrial, placement_line, where_text
from bench.trials.model import TrialInfo


def test_every_remote_cluster_connection_is_measured() -> None:
    topo = parse_topology({"name": "t", "provider": "aws", "region": "us-east-1", "clusters": [
        {"name": "leader", "instance_type": "c5d.large"},
        {"name": "f1", "instance_type": "c5d.large", "remote_clusters": ["leader"]},
        {"name": "f2", "instance_type": "c5d.large", "remote_clusters": ["leader", "f1"]}]})
    assert connections(topo) == [("f1", "leader"), ("f2", "leader"), ("f2", "f1")]
    plan = render_plan(make_plan(topo, "t" * 32), topo)
    assert "Remote clusters: f1 -> leader; f2 -> leader, f1 (each link measured before the race" in plan


def _answering_server() -> tuple[socket.socket, threading.Thread]:
    """A transport port's behaviour for the probe: answers the first bytes of any connection at once."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        for _ in range(2):
            conn, _ = server.accept()
            with conn:
                if conn.recv(64):  # the connect probe sends nothing and hangs up
                    conn.sendall(b"This is not an HTTP port")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return server, t


def _shell(args: list[str]) -> subprocess.CompletedProcess[str]:
    # the probe as a host without bench runs it: its text through a shell, with python -I (no bench importable)
    return subprocess.run(["sh", "-c", probe_command(args, python=f"{sys.executable} -I")], capture_output=True,
                          text=True, timeout=60, cwd="/")


def test_the_probe_runs_without_bench_and_times_round_trips_and_a_transfer() -> None:
    server, t = _answering_server()
    try:
        for method in ("answer", "connect"):
            res = _shell(["rtt", f"127.0.0.1:{server.getsockname()[1]}", "1", method])
            assert res.returncode == 0, res.stderr
            values = json.loads(res.stdout)
            assert len(values) == 1 and 0 < values[0] < 1000
    finally:
        server.close()
        t.join(timeout=5)
    free = socket.create_server(("127.0.0.1", 0))
    lo = free.getsockname()[1]
    free.close()
    sink = subprocess.Popen(["sh", "-c", probe_command(["sink", str(lo), str(lo + 50), str(4 << 20)],
                                                       python=f"{sys.executable} -I")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert sink.stdout is not None
    port = json.loads(sink.stdout.readline())["port"]
    sent = _shell(["send", f"127.0.0.1:{port}", str(4 << 20)])
    assert sent.returncode == 0 and json.loads(sent.stdout) == {"bytes": 4 << 20}, sent.stderr
    got = json.loads(sink.stdout.read())
    assert sink.wait(timeout=30) == 0
    assert got["bytes"] == 4 << 20 and got["bps"] > 0 and got["seconds"] > 0


def test_a_probe_that_cannot_connect_exits_non_zero_with_one_line() -> None:
    free = socket.create_server(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    res = _shell(["rtt", f"127.0.0.1:{port}", "1"])
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr.startswith("link probe rtt: ") and len(res.stderr.strip().splitlines()) == 1


def _measured_link(rtt: float, bps: float) -> dict[str, Any]:
    return {"from": "follower", "to": "leader", "kind": "measured", "measured": {"rtt_ms": rtt, "throughput_bps": bps}}


def _cloud(tid: str, links: list[dict[str, Any]]) -> TrialInfo:
    return TrialInfo(id=tid, track="t", challenge="ccr", start_time=datetime.now(timezone.utc),
                     machine={"hostname": "driver", "provider": "aws", "instance_types": ["c5.large"]},
                     clusters=[{"name": "leader", "instance_type": "c5d.large", "nodes": 3},
                               {"name": "follower", "instance_type": "c5d.large", "nodes": 1, "links": links}])


def test_placement_says_a_measured_cloud_link() -> None:
    assert where_text(_cloud("a", [_measured_link(71.24, 2.5e9)])).endswith(
        "; follower->leader over the network between their hosts (measured before the race: round trip 71.2 ms, "
        "2500.0 Mbit/s)")
    line = placement_line([PlacedTrial(variant="x", info=_cloud("a", [_measured_link(70, 2e9)])),
                           PlacedTrial(variant="x", info=_cloud("b", [_measured_link(72, 3e9)]))])
    assert "Links as bench measured them before each race: x: follower->leader round trip 71.0 ms, 2500.0 Mbit/s." \
        in line
