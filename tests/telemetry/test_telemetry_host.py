"""The host device finds the processes of nodes bench did not start (a benchmark-only race on this machine)
and reports their own disk IO; a pid that is not the node's (not listening on its HTTP port) is never taken."""

from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.request

import psutil
import pytest

from bench.http.client import ClusterTarget
from bench.telemetry.device import TelemetryContext
from bench.telemetry.host import Host, local_node_pids


def _nodes(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/_nodes/process,http", timeout=30) as r:
        return json.loads(r.read())


def _bulk(url: str, n: int) -> None:
    body = "".join('{"index":{}}\n' + json.dumps({"m": "x" * 200, "i": i}) + "\n" for i in range(n))
    req = urllib.request.Request(f"{url}/host-io/_bulk?refresh=true", data=body.encode(), method="POST",
                                 headers={"Content-Type": "application/x-ndjson"})
    with urllib.request.urlopen(req, timeout=60) as r:
        assert not json.loads(r.read())["errors"]


@pytest.mark.cluster
def test_only_a_pid_listening_on_the_nodes_http_port_is_the_node(es_cluster):
    url = es_cluster.hosts[0]
    body = _nodes(url)
    [(name, node)] = [(n["name"], n) for n in body["nodes"].values()]
    assert local_node_pids(body) == {name: node["process"]["id"]}
    node["process"]["id"] = os.getpid()  # alive here, but not listening on the node's port
    assert local_node_pids(body) == {}
    node["process"]["id"] = 2 ** 22 + 17  # no such process on this machine
    assert local_node_pids(body) == {}


@pytest.mark.cluster
def test_host_device_reports_the_disk_io_of_a_node_it_did_not_start(es_cluster):
    url = es_cluster.hosts[0]
    target = ClusterTarget(name="default", hosts=[url.removeprefix("http://")])
    host = Host({}, TelemetryContext(targets={"default": target}))  # no node_processes: bench started none

    async def run() -> tuple[list, list]:
        await host.open()
        first = (await host.sample("host", time.time())).rows
        await asyncio.to_thread(_bulk, url, 20000)
        await asyncio.to_thread(urllib.request.urlopen, f"{url}/host-io/_flush", timeout=60)
        last = (await host.sample("host", time.time())).rows
        await host.close()
        return first, last

    first, last = asyncio.run(run())
    node = next(iter(_nodes(url)["nodes"].values()))["name"]
    value = lambda rows, m: next(r.value for r in rows if (r.cluster, r.node, r.metric) == ("default", node, m))
    written = value(last, "process.write_bytes") - value(first, "process.write_bytes")
    print(f"node {node}: wrote {written / 1e6:.1f} MB for 20,000 docs + flush")
    assert written > 1e6  # its segments and translog: the node's own IO, not the machine's
    assert value(last, "process.rss_bytes") > 100e6


def test_unreadable_io_counters_are_no_rows_not_zero_io(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process of another user (bench not root) has IO counters bench cannot read: nothing measured."""
    def denied(self: psutil.Process) -> None:
        raise psutil.AccessDenied(self.pid)

    host = Host({}, TelemetryContext(targets={}, driver_pids=lambda: [os.getpid()]))
    readable = {r.metric for r in host._sample(time.time()).rows if (r.cluster, r.node) == ("driver", "main")}
    assert {"process.rss_bytes", "process.write_bytes"} <= readable
    monkeypatch.setattr(psutil.Process, "io_counters", denied)
    denied_rows = {r.metric for r in host._sample(time.time()).rows if (r.cluster, r.node) == ("driver", "main")}
    assert "process.rss_bytes" in denied_rows
    assert not denied_rows & {"process.read_bytes", "process.write_bytes"}
