"""The GCP path end to end against a local replay of the Compute Engine REST API (instances insert/list/
get/delete, firewalls, zone/global operations with wait), served on 127.0.0.1 and reached by
google-cloud-compute's own REST client through ``api_endpoint``: plan, up (instances, labels, firewall
rules), a failure injected half-way, down, ls and the stale sweep."""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import yaml

from bench.cli import main
from bench.cloud import lifecycle
from bench.cloud.plan import TAG_CREATED, TAG_MANAGED, TAG_TRIAL
from bench.cloud.providers.gcp import GcpProvider
from bench.cloud.topology import load_topology
from bench.util.errors import ProvisionError
from tests.support.http_serving import serving

ROOT = Path(__file__).resolve().parents[2]
PROJECT, ZONE = "my-benchmarks", "us-central1-a"
_ZONAL = re.compile(r"^/compute/v1/projects/([^/]+)/zones/([^/]+)/(instances|operations)(?:/([^/]+))?(?:/(wait))?$")
_GLOBAL = re.compile(r"^/compute/v1/projects/([^/]+)/global/(firewalls|operations)(?:/([^/]+))?(?:/(wait))?$")


class ComputeReplay:
    """In-memory Compute Engine: enough of the REST API for bench's GCP provider, with the API's JSON
    shapes (camelCase fields, operations that are RUNNING until waited on, instances that go
    PROVISIONING -> STAGING -> RUNNING as they are read, 404/409 errors)."""

    def __init__(self) -> None:
        self.instances: dict[str, dict[str, Any]] = {}
        self.firewalls: dict[str, dict[str, Any]] = {}
        self.operations: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        self._ids = itertools.count(1000)
        self._lock = threading.Lock()

    def op(self, kind: str, target: str, zone: str | None) -> dict[str, Any]:
        name = f"operation-{next(self._ids)}"
        op = {"kind": "compute#operation", "name": name, "id": str(next(self._ids)), "operationType": kind,
              "status": "RUNNING", "targetLink": target, "progress": 0}
        if zone:
            op["zone"] = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{zone}"
        self.operations[name] = op
        return op

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        with self._lock:
            self.requests.append((method, path))
            if m := _ZONAL.match(path):
                _, zone, coll, name, _wait = m.groups()
                if coll == "operations":
                    return self._finish(name)
                return self._instances(method, zone, name, query, body)
            if m := _GLOBAL.match(path):
                _, coll, name, _wait = m.groups()
                if coll == "operations":
                    return self._finish(name)
                return self._firewalls(method, name, body)
            return 404, _error(404, f"no such resource {path}")

    def _finish(self, name: str | None) -> tuple[int, Any]:
        op = self.operations.get(name or "")
        if op is None:
            return 404, _error(404, f"operation {name} not found")
        op.update(status="DONE", progress=100)
        return 200, op

    def _instances(self, method: str, zone: str, name: str | None, query: dict[str, list[str]],
                   body: Any) -> tuple[int, Any]:
        if method == "POST" and name is None:
            if body["name"] in self.instances:
                return 409, _error(409, f"The resource 'projects/{PROJECT}/zones/{zone}/instances/{body['name']}' "
                                        f"already exists")
            inst = dict(body)
            inst.update(id=str(next(self._ids)), status="PROVISIONING", zone=zone,
                        creationTimestamp=time.strftime("%Y-%m-%dT%H:%M:%S.000-00:00"))
            for nic in inst.get("networkInterfaces", []):
                for ac in nic.get("accessConfigs", []):
                    ac["natIP"] = f"203.0.113.{len(self.instances) % 250 + 1}"
            self.instances[inst["name"]] = inst
            return 200, self.op("insert", inst["name"], zone)
        if method == "GET" and name is None:
            terms = re.findall(r'labels\.([\w-]+)\s*=\s*"([^"]*)"', (query.get("filter") or [""])[0])
            items = [i for i in self.instances.values() if all(i.get("labels", {}).get(k) == v for k, v in terms)]
            return 200, {"kind": "compute#instanceList", "items": items}
        inst = self.instances.get(name or "")
        if inst is None:
            return 404, _error(404, f"The resource 'instances/{name}' was not found")
        if method == "GET":
            inst["status"] = {"PROVISIONING": "STAGING", "STAGING": "RUNNING"}.get(inst["status"], inst["status"])
            return 200, inst
        if method == "DELETE":
            del self.instances[name]  # type: ignore[arg-type]
            return 200, self.op("delete", name or "", zone)
        return 405, _error(405, "method not allowed")

    def _firewalls(self, method: str, name: str | None, body: Any) -> tuple[int, Any]:
        if method == "POST" and name is None:
            if body["name"] in self.firewalls:
                return 409, _error(409, f"firewall {body['name']} already exists")
            self.firewalls[body["name"]] = dict(body, id=str(next(self._ids)))
            return 200, self.op("insert", body["name"], None)
        if method == "GET" and name is None:
            return 200, {"kind": "compute#firewallList", "items": list(self.firewalls.values())}
        if name not in self.firewalls:
            return 404, _error(404, f"firewall {name} was not found")
        if method == "DELETE":
            del self.firewalls[name]
            return 200, self.op("delete", name or "", None)
        return 200, self.firewalls[name]


def _error(code: int, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "errors": [{"message": message, "reason": "x"}]}}


@pytest.fixture(scope="module")
def replay() -> Iterator[tuple[ComputeReplay, str]]:
    api = ComputeReplay()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            url = urlparse(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"null") if length else None
            status, payload = api.handle(self.command, url.path, parse_qs(url.query), body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = _serve

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Handler) as server:
        yield api, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def gcp(replay: tuple[ComputeReplay, str], monkeypatch: pytest.MonkeyPatch) -> tuple[ComputeReplay, GcpProvider]:
    api, endpoint = replay
    monkeypatch.setenv("BENCH_GCP_ENDPOINT", endpoint)
    return api, GcpProvider(PROJECT, ZONE, endpoint)


def _topology(tmp_path: Path, **changes: Any) -> Path:
    raw = yaml.safe_load((ROOT / "topologies" / "ccr-gcp.yml").read_text())
    key = tmp_path / "id.pub"
    key.write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIbench test@bench\n")
    raw.update({"ssh": {**raw["ssh"], "allow_from": "198.51.100.9/32", "public_key": str(key)}, **changes})
    path = tmp_path / "topo.yml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_plan_prints_study_machines(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cloud", "plan", str(ROOT / "topologies" / "ccr-gcp.yml")]) == 0
    out = capsys.readouterr().out
    assert "6 x custom-16-32768, 2 x n1-standard-16" in out and "8 instance-hours for 1 h" in out
    assert "Load drivers: a Ray cluster of 2 hosts" in out
    assert "firewall rules" in out and "300 GB pd-ssd" in out


def test_up_labels_everything_and_teardown_removes_it(gcp: tuple[ComputeReplay, GcpProvider],
                                                     tmp_path: Path) -> None:
    api, provider = gcp
    topo = load_topology(_topology(tmp_path))
    trial = "f1" * 16
    dep = lifecycle.up(topo, provider, trial, yes=True)
    try:
        assert len(dep.instances("node")) == 6 and len(dep.instances("driver")) == 2
        assert all(r.state == "RUNNING" and r.public_ip for r in dep.instances())
        mine = [i for i in api.instances.values() if i["labels"].get(TAG_TRIAL) == trial]
        assert sorted(i["machineType"].rsplit("/", 1)[1] for i in mine) == ["custom-16-32768"] * 6 + ["n1-standard-16"] * 2
        for inst in mine:
            assert inst["labels"][TAG_MANAGED] == "true" and inst["labels"]["team"] == "search"
            assert abs(int(inst["labels"][TAG_CREATED]) - time.time()) < 600
            assert inst["tags"]["items"] == [f"bench-{trial[:8]}"]
            assert inst["disks"][0]["initializeParams"]["diskSizeGb"] in ("300", "200", 300, 200)
            meta = {m["key"]: m["value"] for m in inst["metadata"]["items"]}
            assert meta["ssh-keys"].startswith("bench:ssh-ed25519 ")
        follower = next(i for i in mine if i["labels"]["bench-cluster"] == "follower")
        script = {m["key"]: m["value"] for m in follower["metadata"]["items"]}["startup-script"]
        leader_ips = [i["networkInterfaces"][0]["networkIP"] for i in mine if i["labels"]["bench-cluster"] == "leader"]
        assert len(set(leader_ips)) == 3 and all(f"{ip}:9300" in script for ip in leader_ips)
        cluster_fw, ssh_fw = api.firewalls[f"bench-{trial[:8]}-cluster"], api.firewalls[f"bench-{trial[:8]}-ssh"]
        assert cluster_fw["sourceTags"] == cluster_fw["targetTags"] == [f"bench-{trial[:8]}"]
        assert cluster_fw["allowed"] == [{"IPProtocol": "tcp", "ports": ["9200-9400", "6379-6999"]}]
        assert "sourceRanges" not in cluster_fw
        assert ssh_fw["sourceRanges"] == ["198.51.100.9/32"] and ssh_fw["allowed"][0]["ports"] == ["22"]
        assert {r.kind for r in provider.list_resources(trial)} == {"instance", "firewall"}
        assert any(m == "POST" and p.endswith("/wait") for m, p in api.requests)  # operations are waited on
    finally:
        lifecycle.teardown(provider, trial, dep.resources, backoff=0.1)
    assert provider.list_resources(trial) == []
    assert not [i for i in api.instances.values() if i["labels"].get(TAG_TRIAL) == trial]


class _FailsAfterFirstInstance(GcpProvider):
    calls = 0

    def create_instance(self, *a, **kw):  # type: ignore[no-untyped-def]
        type(self).calls += 1
        if type(self).calls == 2:
            raise ProvisionError("injected: ZONE_RESOURCE_POOL_EXHAUSTED")
        return super().create_instance(*a, **kw)


def test_failure_after_first_instance_leaves_nothing(gcp: tuple[ComputeReplay, GcpProvider],
                                                     replay: tuple[ComputeReplay, str], tmp_path: Path) -> None:
    api, _ = gcp
    provider = _FailsAfterFirstInstance(PROJECT, ZONE, replay[1])
    trial = "f2" * 16
    with pytest.raises(ProvisionError, match="injected"):
        lifecycle.up(load_topology(_topology(tmp_path)), provider, trial, yes=True)
    assert _FailsAfterFirstInstance.calls == 2
    assert ("DELETE", f"/compute/v1/projects/{PROJECT}/zones/{ZONE}/instances/bench-{trial[:8]}-leader-0") \
        in api.requests
    assert provider.list_resources(trial) == []
    assert not [f for f in api.firewalls if f.startswith(f"bench-{trial[:8]}")]


def test_duplicate_instance_is_a_one_line_error(gcp: tuple[ComputeReplay, GcpProvider], tmp_path: Path) -> None:
    api, provider = gcp
    trial = "f3" * 16
    api.instances[f"bench-{trial[:8]}-solo-0"] = {"name": f"bench-{trial[:8]}-solo-0", "labels": {}}
    path = _topology(tmp_path, clusters=[{"name": "solo", "instance_type": "e2-small"}], drivers=[])
    try:
        with pytest.raises(ProvisionError, match="already exists") as e:
            lifecycle.up(load_topology(path), provider, trial, yes=True)
        assert "\n" not in str(e.value)
        assert provider.list_resources(trial) == []  # its firewall rules were removed again
    finally:
        api.instances.pop(f"bench-{trial[:8]}-solo-0", None)


def test_cli_up_ls_down_and_stale_sweep(gcp: tuple[ComputeReplay, GcpProvider], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    api, provider = gcp
    path = _topology(tmp_path, clusters=[{"name": "solo", "instance_type": {"gcp": "e2-small"}}], drivers=[])
    assert main(["cloud", "up", str(path), "--yes"]) == 0
    trial = capsys.readouterr().out.split("Created trial ")[1].split(":")[0]
    assert len(provider.list_resources(trial)) == 3  # 1 instance, 2 firewall rules
    assert main(["cloud", "ls", "--provider", "gcp", "--project", PROJECT, "--zone", ZONE]) == 0
    out = capsys.readouterr().out
    assert out.count(trial[:12]) == 3
    assert main(["cloud", "down", "--topology", str(path), "--all-stale", "--older-than", "6h", "--yes"]) == 0
    assert len(provider.list_resources(trial)) == 3
    old = str(int(time.time() - 8 * 3600))
    for inst in api.instances.values():
        if inst["labels"].get(TAG_TRIAL) == trial:
            inst["labels"][TAG_CREATED] = old
    assert main(["cloud", "ls", "--topology", str(path), "--older-than", "6h"]) == 0
    assert trial[:12] in capsys.readouterr().out
    assert main(["cloud", "down", "--topology", str(path), "--all-stale", "--yes"]) == 0
    assert provider.list_resources(trial) == []  # the trial's firewall rules went with its old instance
