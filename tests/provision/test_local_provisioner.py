"""The local provisioner against real Elasticsearch 8.19.21 nodes on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from bench.provision.local import LocalProvisioner, _Node
from bench.provision.model import ClusterSpec, NodeInfo
from bench.provision.stop import read_kept, stop_trial
from bench.util.errors import ConfigError, ProvisionError
from tests.support.esnode import default_cache, running_cluster, use_test_homes

pytestmark = [pytest.mark.usefixtures("local_engines"), pytest.mark.timeout(300)]
CAR = ["defaults", "512mheap"]


@pytest.fixture(autouse=True)
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_test_homes(tmp_path / "home", monkeypatch)


def _get(url: str, auth: tuple[str, str] | None = None, ca: Path | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(url)
    if auth:
        req.add_header("Authorization", "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode())
    context = ssl.create_default_context(cafile=str(ca)) if ca is not None else None
    try:
        with urllib.request.urlopen(req, timeout=10, context=context) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, {}


def _gone(pids: list[int], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]:
            return True
        time.sleep(0.5)
    return False


def _es_pids(marker: str) -> list[int]:
    """Java processes whose command line mentions marker (a node folder of this test)."""
    out = []
    for p in psutil.process_iter(["pid", "name", "cmdline"]):
        if p.info["name"] == "java" and marker in " ".join(p.info["cmdline"] or []):
            out.append(p.info["pid"])
    return out


def test_single_node_start_health_version_stop(tmp_path: Path) -> None:
    trial = tmp_path / "trial"
    with LocalProvisioner("single", trial) as prov:
        info = prov.start(ClusterSpec(car=CAR), timeout=180)
        assert info.version == "8.19.21" and info.engine == "elasticsearch" and info.name == "default"
        [node] = info.nodes
        assert node.name == "default-0" and info.hosts == [f"http://127.0.0.1:{node.http_port}"]
        assert info.transport_addresses == [f"127.0.0.1:{node.transport_port}"]
        status, health = _get(info.hosts[0] + "/_cluster/health")
        assert status == 200 and health["status"] in ("green", "yellow") and health["number_of_nodes"] == 1
        assert health["cluster_name"] == "default"
        status, nodes = _get(info.hosts[0] + "/_nodes/_all/jvm")
        [jvm] = [n["jvm"] for n in nodes["nodes"].values()]
        assert jvm["mem"]["heap_max_in_bytes"] == 512 * 1024 * 1024  # the car's heap reached the node

        procs = prov.processes()["default-0"]
        pids = [p.pid for p in procs]
        assert len(procs) == 2 and all(p.name() == "java" for p in procs)  # launcher + server JVM
        assert node.pid in pids
        if os.geteuid() == 0:
            assert {p.username() for p in procs} == {"bench-es"}
            assert str(node.home).startswith("/var/tmp/bench-nodes/")
        base = node.home.parent
    assert _gone(pids, 5), "node processes survived stop_all"
    assert prov.processes() == {"default-0": []}
    logs = trial / "logs" / "default" / "default-0"
    assert "started" in (logs / "default.log").read_text()
    assert not base.exists()  # node data deleted
    prov.stop_all()  # idempotent


def test_two_clusters_security_and_keep(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    trial = tmp_path / "trial"
    prov = LocalProvisioner("two", trial)
    try:
        leader = prov.start(ClusterSpec(name="leader", car=["defaults", "512mheap", "security", "trial-license"],
                                        car_params={"security_user": "racer"}), timeout=180)
        follower = prov.start(ClusterSpec(name="follower", nodes=2, car=CAR), timeout=180)
        ports = {n.http_port for n in leader.nodes + follower.nodes} | \
            {n.transport_port for n in leader.nodes + follower.nodes}
        assert len(ports) == 6
        assert [n.name for n in follower.nodes] == ["follower-0", "follower-1"]

        # Security: HTTPS with the race's CA; 401 without credentials, 200 with the generated ones.
        password, ca = leader.password.get_secret_value(), leader.tls_ca
        assert leader.username == "racer" and len(password) >= 20 and password not in repr(leader)
        assert ca is not None and leader.hosts[0].startswith("https://")
        assert _get(leader.hosts[0] + "/_cluster/health", ca=ca)[0] == 401
        status, health = _get(leader.hosts[0] + "/_cluster/health", ("racer", password), ca)
        assert status == 200 and health["cluster_name"] == "leader"
        assert _get(leader.hosts[0] + "/_license", ("racer", password), ca)[1]["license"]["type"] == "trial"

        status, health = _get(follower.hosts[1] + "/_cluster/health")
        assert status == 200 and health["cluster_name"] == "follower" and health["number_of_nodes"] == 2

        messages = prov.stop_all(keep=True)
        guard_pids = [n.guard_pid for n in leader.nodes + follower.nodes]
        assert len(messages) == 3 and all("stop it with: bench stop two" in m for m in messages)
        kept = read_kept(trial)
        assert kept is not None and sorted(n.guard.pid for n in kept.nodes if n.guard) == sorted(guard_pids)
        assert _get(follower.hosts[0] + "/_cluster/health")[0] == 200  # still running
        jvms = [p.pid for ps in prov.processes().values() for p in ps]
        assert len(jvms) == 6
    finally:
        prov.stop_all()  # no-op after keep; the kept nodes are stopped by hand below
    folders = [n.home.parent for n in leader.nodes + follower.nodes]
    assert all(f.is_dir() for f in folders)
    lines = stop_trial("two", trial)  # what 'bench stop' does
    assert len(lines) == 3 and all(line.startswith("stopped node") for line in lines), lines
    assert _gone(jvms + guard_pids, 60)
    assert not any(f.exists() for f in folders) and read_kept(trial) is None

    # The generated password never reaches logging or the node logs kept with the trial.
    assert password not in caplog.text
    files = [p for p in (trial / "logs").rglob("*") if p.is_file()]
    assert any(p.name == "leader.log" for p in files)
    for f in files:
        assert password.encode() not in f.read_bytes(), f


def test_port_in_use_fails_before_starting(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        before = _es_pids("bench-nodes")
        prov = LocalProvisioner("busy", tmp_path / "trial")
        with pytest.raises(ProvisionError) as e:
            prov.start(ClusterSpec(car=CAR, http_port=port))
    assert str(e.value).startswith(f"port {port} on 127.0.0.1 is already in use: ")
    assert "\n" not in str(e.value)
    assert prov.processes() == {} and _es_pids("bench-nodes") == before


def test_duplicate_cluster_name_and_bad_car_fail_early(tmp_path: Path) -> None:
    prov = LocalProvisioner("dup", tmp_path / "trial")
    with pytest.raises(ConfigError, match="unknown car 'nocar'"):
        prov.start(ClusterSpec(car=["nocar"]))
    with pytest.raises(ProvisionError, match="no bin/java"):
        prov.start(ClusterSpec(car=CAR, java_home=tmp_path))
    assert prov.clusters == {}


def test_invalid_setting_fails_with_log_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cars = tmp_path / "cars"
    cars.mkdir()
    (cars / "broken.yml").write_text("type: mixin\ndescription: bad\nsettings:\n  bogus.setting.name: 1\n")
    monkeypatch.setenv("BENCH_CAR_PATH", str(cars))
    with pytest.raises(ProvisionError) as e, running_cluster(tmp_path, car=["defaults", "512mheap", "broken"],
                                                             timeout=120):
        pass
    first, _, tail = str(e.value).partition("\n")
    assert first.startswith("node default-0 of cluster default exited during startup; see ")
    assert "bogus.setting.name" in tail and len(tail.splitlines()) <= 20
    node_base = Path(first.split("; see ")[1]).parent.parent
    assert _es_pids(str(node_base)) == [] and not node_base.exists()  # stopped and cleaned up
    kept = tmp_path / "trial" / "logs" / "default" / "default-0" / "console.log"
    assert "bogus.setting.name" in kept.read_text()  # the node log is kept with the trial


def test_bind_failure_message_names_the_port(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    console = logs / "console.log"
    console.write_text("starting\nBindTransportException[Failed to bind to 127.0.0.1:9311]; "
                       "nested: BindException[Address already in use];\n")
    node = _Node(info=NodeInfo(name="c-0", http_port=9211, transport_port=9311, home=tmp_path, log_dir=logs),
                 cluster="c", base=tmp_path, console_log=console, pid_file=tmp_path / "pid")
    err = LocalProvisioner("x", tmp_path)._node_failure(node, "exited during startup")
    assert str(err).startswith("node c-0 of cluster c could not bind port 9311 on 127.0.0.1 (Address already in use)")


_CHILD = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from tests.support.esnode import start_cluster
    prov_a, a = start_cluster(Path(sys.argv[1]) / "a", name="a", car=["defaults", "512mheap"])
    prov_b, b = start_cluster(Path(sys.argv[1]) / "b", name="b", car=["defaults", "512mheap"])
    print(json.dumps({name: {"guard": n.guard_pid, "jvms": [p.pid for ps in prov.processes().values() for p in ps],
                             "base": str(n.home.parent)}
                      for name, prov, n in (("a", prov_a, a.nodes[0]), ("b", prov_b, b.nodes[0]))}), flush=True)
    time.sleep(300)
""")


def test_kill_9_leaves_no_orphan_jvm(tmp_path: Path) -> None:
    env = {**os.environ, "BENCH_CACHE": default_cache()}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                             cwd=Path(__file__).resolve().parents[2], env=env)
    try:
        line = child.stdout.readline()
        assert line, "child did not start its clusters"
        pids = json.loads(line)
        assert all(len(v["jvms"]) == 2 for v in pids.values())
        # kill -9 of a node's guard: the launcher dies by its parent-death signal, the server JVM follows.
        os.kill(pids["b"]["guard"], signal.SIGKILL)
        assert _gone(pids["b"]["jvms"], 30), "orphan JVM after the guard was killed"
        # kill -9 of bench itself: the guard sees stdin close and stops the node.
        child.kill()
        child.wait(10)
        assert _gone(pids["a"]["jvms"] + [pids["a"]["guard"]], 30), "orphan JVM after bench was killed"
        # ... and, nobody else being left to do it, kept the node's logs with the trial and deleted its files.
        assert not Path(pids["a"]["base"]).exists(), "the orphaned node's files were left behind"
        assert list((tmp_path / "a" / "trial" / "logs" / "a").glob("*/*.log")), "the orphaned node's logs were not kept"
    finally:
        child.kill()
        for v in pids.values() if "pids" in locals() else ():
            for pid in v["jvms"] + [v["guard"]]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            shutil.rmtree(Path(v["base"]).parent.parent, ignore_errors=True)  # bench was killed: nobody else cleans up


def test_opensearch_node(tmp_path: Path) -> None:
    """engine: opensearch uses its own template, binary, config file and OPENSEARCH_JAVA_HOME (2.19.1, Java 17)."""
    with LocalProvisioner("os", tmp_path / "trial") as prov:
        info = prov.start(ClusterSpec(engine="opensearch", version="2.19.1", car=CAR), timeout=180)
        assert info.version == "2.19.1"
        node = info.nodes[0]
        assert (node.home / "config" / "opensearch.yml").is_file()
        assert "xpack" not in (node.home / "config" / "opensearch.yml").read_text()
        assert _get(info.hosts[0] + "/_cluster/health")[1]["cluster_name"] == "default"
        pids = [p.pid for ps in prov.processes().values() for p in ps]
        assert pids
    assert _gone(pids, 5)


def test_a_running_node_folder_is_never_wiped(tmp_path: Path) -> None:
    # two benches given one trial id (two censuses at once did this) lay their nodes out in the same folder
    from bench.provision.local import clear_node_folder

    base = tmp_path / "census" / "default" / "default-0"
    (base / "data").mkdir(parents=True)
    node = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", f"-Dpath.home={base}/install"])
    try:
        (base / "node.pid").write_text(f"{node.pid}\n")
        running = f"{base} belongs to a node that is still running (pid {node.pid})"
        with pytest.raises(ProvisionError, match=re.escape(running)):
            clear_node_folder(base)
        assert (base / "data").is_dir()
    finally:
        node.kill()
        node.wait()
    clear_node_folder(base)  # its node is gone: the folder is an earlier run's leftovers
    assert not base.exists()
    (base / "data").mkdir(parents=True)
    (base / "node.pid").write_text(f"{os.getpid()}\n")  # a live pid that is not this folder's node
    clear_node_folder(base)
    assert not base.exists()
