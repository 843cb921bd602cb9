"""The cloud nodes' startup script and the driver-host SSH path, run for real in network namespaces
(one per "host", tests/support/netns.py): the distribution comes from an HTTP server in another namespace, a
3-node leader cluster (security, trial license) and a follower connected to it by remote-cluster
seeds form from the same script a cloud VM runs; then a "driver host" namespace running Debian's sshd
gets bench installed over SSH, runs a test-mode race against both clusters and the trial (store rows,
node logs) is copied back into the local store."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

import bench
from bench.cloud import lifecycle
from bench.cloud.plan import make_plan
from bench.cloud.providers.base import Resource
from bench.cloud.race import drive_on_hosts
from bench.cloud.ssh import DriverHost, RemoteHost
from bench.cloud.startup import NodeBoot, render_startup_script
from bench.cloud.tls import make_transport_tls
from bench.cloud.topology import parse_topology
from bench.provision.distribution import distribution_url, download_archive
from bench.provision.java import resolve_java
from bench.provision.model import ENGINES
from bench.race.options import RaceOptions
from bench.reporting.placement import where_text
from bench.trials.sqlite import TrialStore
from bench.util.redact import register_secret
from tests.support.esnode import LocalEngines, default_cache
from tests.support.isolation import leaked
from tests.support.netns import NetnsLab, inside, serve_directory

VERSION = "8.19.21"
SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)


@dataclass
class CcrLab:
    lab: NetnsLab
    leader: list[str]
    follower: list[str]
    password: str
    boots: dict[str, NodeBoot]
    work: Path
    ca: Path  # the trial's CA certificate: the clusters answer HTTPS


def _curl(lab: NetnsLab, ns: str, url: str, auth: str, method: str = "GET", body: dict | None = None,
          ca: Path | None = None) -> dict:
    argv = ["curl", "-sS", "-m", "30", "-u", auth, "-X", method, url, *(["--cacert", str(ca)] if ca else [])]
    if body is not None:
        argv += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    res = lab.run(ns, argv, timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def ccr_lab(tmp_path_factory: pytest.TempPathFactory, netns_hosts: type[NetnsLab],
            local_engines: LocalEngines) -> Iterator[CcrLab]:
    # Namespaces (skipped where they cannot be made) running Elasticsearch nodes from the cloud startup script.
    os.environ.setdefault("BENCH_CACHE", default_cache())
    tmp = tmp_path_factory.mktemp("netns")
    archive = download_archive(distribution_url("elasticsearch", VERSION))
    www = tmp / "www"
    www.mkdir()
    name = f"elasticsearch-{VERSION}.zip"
    try:
        os.link(archive, www / name)
    except OSError:
        shutil.copy(archive, www / name)
    (www / f"{name}.sha1").write_text(hashlib.sha1((www / name).read_bytes()).hexdigest() + "\n")
    java_home = resolve_java(Path("/nonexistent"), ENGINES["elasticsearch"]).home  # the system JDK
    lab = netns_hosts()
    base = Path("/var/tmp/bench-cloud-netns") / lab.prefix
    try:
        srv = lab.add_host(2)
        serve_directory(lab, srv, www)
        url = f"http://{lab.hosts[srv]}:8000/{name}"
        leader = [lab.add_host(11 + i) for i in range(3)]
        follower = [lab.add_host(21)]
        password = secrets.token_urlsafe(16)
        register_secret(password)
        # as a cloud trial with security gets: the certificate names every node's address
        tls = make_transport_tls("netns" * 6, hosts=[lab.hosts[h] for h in leader + follower])
        (tmp / "ca.pem").write_text(tls.ca_pem)

        def boots(cluster: str, hosts: list[str], car: list[str], remote: dict[str, list[str]]) -> list[NodeBoot]:
            names = [f"{cluster}-{i}" for i in range(len(hosts))]
            return [NodeBoot(cluster_name=cluster, node_name=names[i], node_index=i, bind_host=lab.hosts[ns],
                             seed_hosts=[f"{lab.hosts[h]}:9300" for h in hosts], master_nodes=names,
                             remote_seeds=remote, distribution_url=url, car=car, base_dir=str(base / names[i]),
                             java_home=java_home, security_password=password, boot_timeout=480,
                             transport_tls=tls)
                    for i, ns in enumerate(hosts)]

        plan = list(zip(leader, boots("leader", leader, ["defaults", "512mheap", "security", "trial-license"], {})))
        plan += list(zip(follower, boots("follower", follower, ["defaults", "512mheap", "security"],
                                         {"leader": [f"{lab.hosts[h]}:9300" for h in leader]})))
        procs = []
        for ns, boot in plan:
            script = tmp / f"{boot.node_name}.sh"
            script.write_text(render_startup_script(boot))
            procs.append((boot, lab.popen(ns, ["bash", str(script)], stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True)))
        deadline = time.monotonic() + 600
        for boot, proc in procs:
            out, _ = proc.communicate(timeout=max(10, deadline - time.monotonic()))
            logs = Path(boot.base_dir) / "logs" / f"{boot.cluster_name}.log"
            tail = logs.read_text()[-3000:] if logs.exists() else "(no log)"
            assert proc.returncode == 0, f"{boot.node_name}: {out[-3000:]}\n{tail}"
            assert "BENCH-NODE-READY" in out
        yield CcrLab(lab, leader, follower, password, {b.node_name: b for _, b in plan}, tmp, tmp / "ca.pem")
    finally:
        lab.close()
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.timeout(900)
def test_startup_script_forms_leader_and_follower_across_namespaces(ccr_lab: CcrLab) -> None:
    lab, leader, follower = ccr_lab.lab, ccr_lab.leader, ccr_lab.follower
    for boot in ccr_lab.boots.values():
        ready = json.loads((Path(boot.base_dir) / "ready.json").read_text())
        assert ready["status"] == "ready" and ready["cluster"] == boot.cluster_name
    auth, ca = f"bench:{ccr_lab.password}", ccr_lab.ca
    # HTTPS, verified against the trial's CA (hostnames too)
    lurl, furl = f"https://{lab.hosts[leader[0]]}:9200", f"https://{lab.hosts[follower[0]]}:9200"
    nodes = _curl(lab, follower[0], f"{lurl}/_nodes/http", auth, ca=ca)["nodes"]
    assert sorted(n["name"] for n in nodes.values()) == ["leader-0", "leader-1", "leader-2"]
    assert {n["http"]["publish_address"].split(":")[0] for n in nodes.values()} == {lab.hosts[h] for h in leader}
    assert _curl(lab, leader[1], f"{lurl}/_license", auth, ca=ca)["license"]["type"] == "trial"
    res = lab.run(leader[0], ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-u", "bench:wrong",
                              "--cacert", str(ca), f"{lurl}/_cluster/health"])
    assert res.stdout == "401"  # security is on
    settings = _curl(lab, leader[0], f"{lurl}/_nodes/leader-1/settings?filter_path=**.transport.ssl.enabled", auth,
                     ca=ca)
    assert json.dumps(settings).count('"enabled": "true"') == 1  # nodes talk transport TLS
    _curl(lab, leader[2], f"{lurl}/docs/_doc/1?refresh=true", auth, "PUT", {"msg": "from the leader"}, ca=ca)
    # The follower's script reported ready only once its remote connection to the leader was up.
    info = _curl(lab, follower[0], f"{furl}/_remote/info", auth, ca=ca)
    assert info["leader"]["connected"] is True
    assert sorted(info["leader"]["seeds"]) == sorted(f"{lab.hosts[h]}:9300" for h in leader)
    hits = _curl(lab, follower[0], f"{furl}/leader:docs/_search", auth, ca=ca)["hits"]["hits"]
    assert [h["_source"]["msg"] for h in hits] == ["from the leader"]


def _ssh_keys(work: Path) -> Path:
    """A client key pair and an authorized_keys file in work; returns the client's private key."""
    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o700)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(work / "client_key")], check=True)
    (work / "authorized_keys").write_text((work / "client_key.pub").read_text())
    return work / "client_key"


def _sshd_host(lab: NetnsLab, work: Path, octet: int) -> tuple[str, subprocess.Popen]:
    """A "driver host": a namespace running Debian's sshd that accepts work's client key; (address, sshd)."""
    ns = lab.add_host(octet)
    return lab.hosts[ns], _sshd(lab, work, ns)


def _sshd(lab: NetnsLab, work: Path, ns: str) -> subprocess.Popen:
    """Debian's sshd in namespace ns (a driver host, or a node's host), accepting work's client key."""
    addr = lab.hosts[ns]
    conf = work / f"sshd-{addr.rsplit('.', 1)[-1]}"
    conf.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(conf / "host_key")], check=True)
    (conf / "sshd_config").write_text(
        f"ListenAddress {addr}\nPort 22\nHostKey {conf / 'host_key'}\nPidFile {conf / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {work / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        "Subsystem sftp internal-sftp\n")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    return lab.popen(ns, [str(SSHD), "-D", "-e", "-f", str(conf / "sshd_config")],
                     stdout=subprocess.DEVNULL, stderr=open(conf / "sshd.log", "w"))


LINK_RATE_MBIT = 200


def _cap_egress(lab: NetnsLab, ns: str, mbit: int | None) -> None:
    """An htb rate limit on what ns sends (its eth0), inside the lab's own namespace only; None removes it."""
    if mbit is None:
        lab.run(ns, ["tc", "qdisc", "del", "dev", "eth0", "root"])
        return
    for argv in (["tc", "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb", "default", "10"],
                 ["tc", "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:10", "htb", "rate",
                  f"{mbit}mbit"]):
        res = lab.run(ns, argv)
        assert res.returncode == 0, res.stderr


def _deployment(ccr_lab: CcrLab, trial_id: str, drivers: list[str]) -> lifecycle.Deployment:
    """The lab's clusters and the given driver addresses as the Deployment a cloud 'up' would have made."""
    topo = parse_topology({"name": "ccr-netns", "provider": "local", "clusters": [
        {"name": "leader", "nodes": 3, "car": ["defaults", "security"]},
        {"name": "follower", "nodes": 1, "car": ["defaults", "security"], "remote_clusters": ["leader"]}],
        "drivers": [{"name": "driver", "count": len(drivers)}]})
    resources = [Resource(provider="netns", kind="instance", id=name, name=name, role="node",
                          cluster=boot.cluster_name, private_ip=boot.bind_host)
                 for name, boot in ccr_lab.boots.items()]
    resources += [Resource(provider="netns", kind="instance", id=f"driver-{i}", name=f"driver-{i}", role="driver",
                           cluster="driver", private_ip=addr, public_ip=addr) for i, addr in enumerate(drivers)]
    return lifecycle.Deployment(trial_id=trial_id, topology=topo, plan=make_plan(topo, trial_id),
                                resources=resources, boots=ccr_lab.boots,
                                passwords={"leader": ccr_lab.password, "follower": ccr_lab.password})


@pytest.mark.timeout(900)
@pytest.mark.skipif(SSHD is None, reason="the SSH path needs Debian's openssh-server (sshd) installed")
def test_driver_host_over_ssh_runs_race_and_copies_trial_back(ccr_lab: CcrLab, tmp_path: Path) -> None:
    lab = ccr_lab.lab
    work = ccr_lab.work / "driver"
    key = _ssh_keys(work)
    addr, sshd = _sshd_host(lab, work, 31)
    # the first leader and follower hosts answer SSH too: bench measures the link between them from there
    node_sshd = [_sshd(lab, work, ccr_lab.leader[0]), _sshd(lab, work, ccr_lab.follower[0])]
    _cap_egress(lab, ccr_lab.leader[0], LINK_RATE_MBIT)  # what the leader host sends: a throughput to find
    try:
        trial_id = "c0ffee" + "0" * 26
        dep = _deployment(ccr_lab, trial_id, [addr])
        host = DriverHost(addr, "root", key, known_hosts=tmp_path / "known_hosts", workdir=str(work),
                          python=sys.executable)
        # --client-options reach the driver host's race beside the generated password.
        opts = RaceOptions(track="nginx", test_mode=True, user_tags={"study": "ssh"}, progress=False,
                           client_options={"timeout": 45})
        from rich.console import Console

        # The orchestrator's side of each SSH connection is opened from a namespace of the lab ("the
        # orchestrator's machine"); the test process itself stays in the machine's own namespace.
        orchestrator = lab.add_host(3)
        # The node logs are read over SSH like on a cloud node (the namespaces share one filesystem).
        node_hosts = {"leader-1": RemoteHost(addr, "root", key, known_hosts=tmp_path / "known_hosts")}
        link_hosts = {c: RemoteHost(ccr_lab.boots[f"{c}-0"].bind_host, "root", key,
                                    known_hosts=tmp_path / "known_hosts") for c in ("leader", "follower")}
        with inside(orchestrator):
            host.connect(timeout=60)
            node_hosts["leader-1"].connect(timeout=60)
            for h in link_hosts.values():
                h.connect(timeout=60)
        with host:
            got = drive_on_hosts(opts, dep, [host], Console(stderr=True), offline=True, boot_timeout=120,
                                 node_log_hosts=node_hosts, link_hosts=link_hosts)
            _, out, _ = host.run(f"{host.venv}/bin/bench --version")
            _, path, _ = host.run(f"{host.venv}/bin/python -c 'import json, sys; print(json.dumps(sys.path))'")
        assert got == trial_id
        # The driver venv borrows this test environment only, never the base interpreter's packages.
        assert not leaked(json.loads(path)), path
        assert out.split()[-1] == bench.__version__  # the orchestrator's version
        assert (tmp_path / "known_hosts").read_text().startswith(addr)
        with TrialStore() as store:
            trial = store.get_trial(trial_id)
            samples = store.samples(trial_id)
            summary = store.summary(trial_id)
        assert trial.status == "complete" and trial.test_mode
        assert trial.user_tags == {"study": "ssh", "topology": "ccr-netns", "provider": "local"}
        assert [c["name"] for c in trial.clusters] == ["leader", "follower"]
        assert trial.clusters[0]["hosts"] == [f"{ccr_lab.boots[f'leader-{i}'].bind_host}:9200" for i in range(3)]
        assert not samples.empty and samples["success"].all()
        assert summary is not None
        assert ccr_lab.password not in json.dumps(trial.model_dump(mode="json"))
        assert trial.options["client_options"]["timeout"] == 45
        assert trial.options["client_options"]["basic_auth_user"]
        _check_measured_link(ccr_lab, trial.clusters, trial_id)
        logs = Path(os.environ["BENCH_HOME"]) / "trials" / trial_id / "logs" / "leader" / "leader-1"
        assert (logs / "leader.log").stat().st_size > 0 and (logs / "startup.log").exists()
    finally:
        _cap_egress(lab, ccr_lab.leader[0], None)
        for h in link_hosts.values() if "link_hosts" in locals() else ():
            h.close()
        for p in (sshd, *node_sshd):
            p.terminate()
            p.wait(timeout=30)


def _check_measured_link(ccr_lab: CcrLab, clusters: list[dict], trial_id: str) -> None:
    """The follower's facts hold the link to the leader as bench measured it from the follower's host before the
    race: a round trip on the leader's transport port, and the leader host's capped sending rate."""
    leader = ccr_lab.boots["leader-0"].bind_host
    assert "links" not in clusters[0]
    (link,) = clusters[1]["links"]
    print(json.dumps(link, indent=1))  # the fact, for whoever reads the test's output
    assert {k: link[k] for k in ("from", "to", "kind", "from_host", "leader_transport")} == {
        "from": "follower", "to": "leader", "kind": "measured", "from_host": ccr_lab.boots["follower-0"].bind_host,
        "leader_transport": f"{leader}:9300"}
    m = link["measured"]
    assert len(m["rtt_samples_ms"]) == 7 and 0 < m["rtt_min_ms"] <= m["rtt_ms"] < 50  # no netem: about 0 here
    assert m["throughput_bytes"] == 32 << 20
    assert abs(m["throughput_bps"] / (LINK_RATE_MBIT * 1e6) - 1) < 0.1, m["throughput_bps"]
    with TrialStore() as store:
        info = store.get_trial(trial_id)
    mbit = m["throughput_bps"] / 1e6
    assert where_text(info).endswith(f"; follower->leader over the network between their hosts (measured before "
                                     f"the race: round trip {m['rtt_ms']:.1f} ms, {mbit:.1f} Mbit/s)")


def _ray_processes(marker: str) -> list[psutil.Process]:
    """Processes whose command line names marker (a Ray node's address or temp dir)."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(marker in a for a in p.info["cmdline"] or []):
                out.append(p)
        except psutil.NoSuchProcess:
            continue
    return out


@pytest.mark.timeout(900)
@pytest.mark.skipif(SSHD is None, reason="the SSH path needs Debian's openssh-server (sshd) installed")
@pytest.mark.usefixtures("ray_nodes")  # Ray nodes on the namespace hosts, started over SSH
def test_two_driver_hosts_form_a_ray_cluster_that_drives_the_race(ccr_lab: CcrLab, tmp_path: Path) -> None:
    """A topology with two driver hosts: bench is installed on both over SSH, Ray is started on both (head on the
    first, ports pinned), the race runs on the head with its Ray cluster as the load driver (a worker on each
    host), the trial comes back, and no Ray process is left on either host."""
    lab = ccr_lab.lab
    work = ccr_lab.work / "ray-drivers"
    key = _ssh_keys(work)
    started = [_sshd_host(lab, work, octet) for octet in (32, 33)]
    addrs = [a for a, _ in started]
    ray_tmp = Path(f"/tmp/bnr{os.getpid() % 100000}")  # short: Ray's unix sockets live under it
    try:
        trial_id = "c0ffee" + "1" * 26
        dep = _deployment(ccr_lab, trial_id, addrs)
        hosts = [DriverHost(a, "root", key, known_hosts=tmp_path / "known_hosts", workdir=str(work / f"home-{i}"),
                            python=sys.executable) for i, a in enumerate(addrs)]
        for i in range(len(hosts)):
            (work / f"home-{i}").mkdir()
        orchestrator = lab.add_host(4)
        with inside(orchestrator):
            for h in hosts:
                h.connect(timeout=60)
        opts = RaceOptions(track="nginx", test_mode=True, user_tags={"study": "ray"}, progress=False)
        from rich.console import Console

        try:
            got = drive_on_hosts(opts, dep, hosts, Console(stderr=True), offline=True, boot_timeout=120,
                                 ray_options={"temp_dir": str(ray_tmp), "num_cpus": 1,
                                              "object_store_bytes": 100 * 1024 * 1024})
        finally:
            for h in hosts:
                h.close()
        assert got == trial_id
        with TrialStore() as store:
            trial = store.get_trial(trial_id)
            samples = store.samples(trial_id)
            telemetry = store.telemetry(trial_id)
        assert trial.status == "complete" and trial.options.get("load_driver") == f"ray:{addrs[0]}:6379"
        assert not samples.empty and samples["success"].all()
        rows = telemetry[(telemetry["device"] == "load-driver") & (telemetry["metric"] == "workers")]
        # One worker actor on each driver host's Ray node (num_cpus=1 each): both hosts drove.
        assert sorted((n.split()[2], v) for n, v in zip(rows["node"], rows["value"])) == [(a, 1.0) for a in addrs]
        offsets = telemetry[(telemetry["device"] == "load-driver") & (telemetry["metric"] == "clock_offset_ms")]
        assert len(offsets) == 2
        # The second host's worker prepared the corpus itself, in its own bench home, before the common start.
        prepared = telemetry[(telemetry["device"] == "load-driver") & (telemetry["metric"] == "corpus_prepare_s")]
        assert [n.split()[2] for n in prepared["node"]] == [addrs[1]]
        assert list((work / "home-1" / "bench-home" / "data" / "nginx").glob("*.json"))
        # Every Ray process of both hosts is gone (stopped by bench, not by the lab's teardown).
        deadline = time.monotonic() + 20
        while _ray_processes(str(ray_tmp)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _ray_processes(str(ray_tmp))
    finally:
        for _, sshd in started:
            sshd.terminate()
            sshd.wait(timeout=30)
        shutil.rmtree(ray_tmp, ignore_errors=True)
