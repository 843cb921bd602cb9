"""Security on OpenSearch cloud clusters: the startup script a cloud node runs installs the security plugin into a
build without it (checksum pinned), writes the trial's TLS files and the race user's bcrypt hash, and the node answers
HTTPS only, verified against the trial's CA; the load driver's client options trust that CA. For real: a leader and
a follower (one OpenSearch 2.19.1 node each, Maven's integ-test build, 256 MB heaps) booted on 127.0.0.1 from their
rendered scripts, then a test-mode race with the driver host's client options against both."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import pytest
import yaml
from cryptography import x509

from bench.cli import main
from bench.cloud import lifecycle
from bench.cloud.plan import make_plan
from bench.cloud.providers.aws import USER_DATA_LIMIT
from bench.cloud.providers.base import Resource
from bench.cloud.race import check_one_scheme, driver_client_options
from bench.cloud.startup import NodeBoot, render_startup_script
from bench.cloud.topology import load_topology, parse_topology
from bench.provision.distribution import distribution_url, download_archive
from bench.provision.java import resolve_java
from bench.provision.model import ENGINES
from bench.provision.node_security import security_plugin_source
from bench.provision.plugin_download import obtain_plugin
from bench.provision.ports import node_ports, release
from bench.race.options import RaceOptions
from bench.trials.sqlite import TrialStore
from bench.util.errors import ConfigError
from bench.util.redact import register_secret
from tests.support.esnode import LocalEngines, default_cache

VERSION = "2.19.1"


def _topology(http: dict[str, int], transport: dict[str, int], security: bool = True) -> dict:
    cluster = {"nodes": 1, "instance_type": "t3.small", "engine": "opensearch", "version": VERSION,
               "car": ["defaults", "256mheap"], "repository": "maven-integ-test"}
    return {"name": "os-sec", "provider": "aws", "region": "us-east-1", "security": security,
            "drivers": [{"name": "driver", "instance_type": "t3.small"}],
            "clusters": [{"name": "leader", **cluster, "http_port": http["leader"],
                          "transport_port": transport["leader"]},
                         {"name": "follower", **cluster, "http_port": http["follower"],
                          "transport_port": transport["follower"], "remote_clusters": ["leader"]}]}


@dataclass
class Booted:
    dep: lifecycle.Deployment
    password: str
    seconds: float


def _served(folder: Path, archive: Path) -> str:
    """The archive as a file:// URL with its .sha1 beside it, as a repository publishes it."""
    target = folder / archive.name
    try:
        os.link(archive, target)
    except OSError:
        shutil.copy(archive, target)
    (folder / f"{archive.name}.sha1").write_text(hashlib.sha1(target.read_bytes()).hexdigest() + "\n")
    return target.as_uri()


@pytest.fixture(scope="module")
def booted(tmp_path_factory: pytest.TempPathFactory, local_engines: LocalEngines) -> Iterator[Booted]:
    os.environ.setdefault("BENCH_CACHE", default_cache())
    if os.geteuid() != 0:
        pytest.skip("a cloud node's startup script runs as root (it creates the node user)")
    tmp = tmp_path_factory.mktemp("os-sec")
    dist = _served(tmp, download_archive(distribution_url("opensearch", VERSION, "maven-integ-test")))
    # The plugin's zip from bench's download cache (Maven Central's, checksum verified) stands in for Maven Central
    plugin = obtain_plugin(security_plugin_source("leader", VERSION)).as_uri()
    java = resolve_java(Path("/nonexistent"), ENGINES["opensearch"]).home
    pairs = node_ports(2, None)
    http = {"leader": pairs[0][0], "follower": pairs[1][0]}
    transport = {"leader": pairs[0][1], "follower": pairs[1][1]}
    topo = parse_topology(_topology(http, transport))
    trial = secrets.token_hex(16)
    plan = make_plan(topo, trial)
    ips = {i.name: "127.0.0.1" for i in plan.instances}
    password = secrets.token_urlsafe(24)
    register_secret(password)
    base = Path("/var/tmp/bench-cloud-ossec") / trial[:8]
    boots = {name: b.model_copy(update={"base_dir": str(base / name), "java_home": java, "distribution_url": dist,
                                        "security_plugin_url": plugin, "boot_timeout": 240})
             for name, b in lifecycle.node_boots(topo, plan, ips, {"leader": password, "follower": password},
                                                 lifecycle.trial_tls(trial, plan, ips)).items()}
    resources = [Resource(provider="aws", kind="instance", id=name, name=name, role="node", cluster=b.cluster_name,
                          private_ip=b.bind_host) for name, b in boots.items()]
    dep = lifecycle.Deployment(trial_id=trial, topology=topo, plan=plan, resources=resources, boots=boots,
                               passwords={"leader": password, "follower": password})
    procs: list[tuple[NodeBoot, subprocess.Popen[str]]] = []
    began = time.monotonic()
    try:
        for boot in boots.values():
            script = tmp / f"{boot.node_name}.sh"
            script.write_text(render_startup_script(boot))
            procs.append((boot, subprocess.Popen(["bash", str(script)], stdout=subprocess.PIPE,
                                                 stderr=subprocess.STDOUT, text=True)))
        for boot, proc in procs:
            out, _ = proc.communicate(timeout=300)
            log = Path(boot.base_dir) / "logs" / f"{boot.cluster_name}.log"
            assert proc.returncode == 0, f"{boot.node_name}: {out[-3000:]}\n{log.read_text()[-3000:] if log.exists() else ''}"
            assert "BENCH-NODE-READY" in out
        yield Booted(dep, password, time.monotonic() - began)
    finally:
        release([p for pair in pairs for p in pair])
        for boot, proc in procs:
            proc.kill()
            pid = Path(boot.base_dir) / "node.pid"
            if pid.exists():
                subprocess.run(["kill", "-9", pid.read_text().strip()], check=False)
        shutil.rmtree(base, ignore_errors=True)


def _get(dep: lifecycle.Deployment, cluster: str, path: str, auth: str, ca: Path | None) -> tuple[int, dict]:
    scheme = "https" if ca else "http"
    req = urllib.request.Request(f"{scheme}://{dep.http_hosts(cluster)[0]}{path}")
    req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    context = ssl.create_default_context(cafile=str(ca)) if ca else None
    try:
        with urllib.request.urlopen(req, timeout=30, context=context) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, {}


@pytest.mark.timeout(600)
def test_opensearch_cloud_nodes_boot_secured_over_https(booted: Booted, tmp_path: Path) -> None:
    dep = booted.dep
    assert dep.https_clusters() == {"leader", "follower"}
    ca = tmp_path / "ca.pem"
    ca.write_text(dep.ca_pem() or "")
    auth = f"bench:{booted.password}"
    status, health = _get(dep, "leader", "/_cluster/health", auth, ca)  # hostname and chain verified
    assert status == 200 and health["cluster_name"] == "leader"
    assert _get(dep, "leader", "/_cluster/health", "bench:wrong", ca)[0] == 401
    with pytest.raises((urllib.error.URLError, ConnectionError)):  # no plain HTTP beside HTTPS
        _get(dep, "leader", "/_cluster/health", auth, None)
    # The follower's script reported ready once its transport-TLS connection to the leader was up (one CA)
    status, info = _get(dep, "follower", "/_remote/info", auth, ca)
    assert status == 200 and info["leader"]["connected"] is True
    status, account = _get(dep, "follower", "/_plugins/_security/api/account", auth, ca)
    assert status == 200 and account["user_name"] == "bench" and "all_access" in account["roles"]
    for boot in dep.boots.values():
        home = Path(boot.base_dir) / "install"
        # Installed by the script from the URL it was given (the integ-test build lacks the plugin)
        assert f"installing opensearch-security from {boot.security_plugin_url}" in \
            (Path(boot.base_dir) / "startup.log").read_text()
        users = home / "config" / "opensearch-security" / "internal_users.yml"
        assert users.stat().st_mode & 0o077 == 0
        text = users.read_text()
        assert booted.password not in text and list(yaml.safe_load(text)) == ["_meta", "bench"]
        assert bcrypt.checkpw(booted.password.encode(), yaml.safe_load(text)["bench"]["hash"].encode())
        assert (home / "config" / "bench-tls" / "node-key.pem").stat().st_mode & 0o077 == 0
    print(f"two secured nodes booted from their scripts in {booted.seconds:.1f} s")


@pytest.mark.timeout(600)
def test_driver_client_options_race_both_clusters_over_https(booted: Booted, tmp_path: Path) -> None:
    dep = booted.dep
    ca = tmp_path / "ca.pem"
    ca.write_text(dep.ca_pem() or "")
    opts = RaceOptions(track="nginx", client_options={"timeout": 45})
    options = driver_client_options(opts, dep, str(ca))  # what the driver host's race reads
    assert options == {"timeout": 45, "basic_auth_user": "bench", "basic_auth_password": booted.password,
                       "use_ssl": True, "ca_certs": str(ca)}
    assert driver_client_options(RaceOptions(track="nginx", client_options={"ca_certs": "/mine.pem"}), dep,
                                 str(ca))["ca_certs"] == "/mine.pem"
    (tmp_path / "client.json").write_text(json.dumps(options))
    hosts = ",".join(f"{c}:{h}" for c in ("leader", "follower") for h in dep.http_hosts(c))
    race_id = str(uuid.uuid4())
    trial = race_id.replace("-", "")
    rc = main(["--quiet", "race", "--track", "nginx", "--challenge", "index-only", "--test-mode",
               "--target-hosts", hosts, "--client-options", str(tmp_path / "client.json"), "--race-id", race_id])
    assert rc == 0
    with TrialStore() as store:
        t = store.get_trial(trial)
        samples = store.samples(trial)
    assert t.status == "complete" and not samples.empty and samples["success"].all()
    assert booted.password not in json.dumps(t.model_dump(mode="json"))
    status, count = _get(dep, "leader", "/_cat/count?format=json", f"bench:{booted.password}", ca)
    assert status == 200 and int(count[0]["count"]) > 0


def test_stage1_cloud_topologies_render_secured_opensearch_nodes() -> None:
    for name in ("ccr-aws-opensearch", "ccr-gcp-opensearch"):
        topo = load_topology(name)
        assert topo.security and all("security" in c.car for c in topo.clusters)
        plan = make_plan(topo, "ab" * 16)
        ips = {i.name: f"10.0.0.{n + 10}" for n, i in enumerate(plan.instances)}
        tls = lifecycle.trial_tls("ab" * 16, plan, ips)
        names = x509.load_pem_x509_certificate(tls.cert_pem.encode()).extensions.get_extension_for_class(
            x509.SubjectAlternativeName).value.get_values_for_type(x509.IPAddress)
        nodes = [i for i in plan.instances if i.role == "node"]
        assert len(nodes) == 6
        assert {str(a) for a in names} == {"127.0.0.1", *(ips[i.name] for i in nodes)}
        password = "p-" + secrets.token_urlsafe(16)
        boots = lifecycle.node_boots(topo, plan, ips, {c.name: password for c in topo.clusters}, tls)
        for inst in (i for i in nodes if i.index == 0):  # one node of each cluster: bcrypt takes its time
            script = render_startup_script(boots[inst.name])
            config = yaml.safe_load(script.split("<<'BENCH_YML'\n", 1)[1].split("BENCH_YML", 1)[0])
            assert config["plugins.security.ssl.http.enabled"] is True
            assert not any(k.startswith("xpack.") for k in config)
            assert "https://repo1.maven.org/maven2/org/opensearch/plugin/opensearch-security/2.19.1.0/" in script
            # The password: once, for the script's own readiness checks (curl reads it from a pipe); the users
            # file holds its hash
            assert script.count(password) == 1 and f"BENCH_AUTH=bench:{password}\n" in script
            assert "-u bench" not in script
            if topo.provider == "aws":  # EC2 refuses larger user-data (the GCE metadata limit is 256 KB)
                assert len(script.encode()) < USER_DATA_LIMIT


def test_opensearch_security_without_tls_and_mixed_schemes_are_one_line() -> None:
    boot = NodeBoot(cluster_name="c", node_name="c-0", bind_host="10.0.0.1", seed_hosts=["10.0.0.1:9300"],
                    master_nodes=["c-0"], engine="opensearch", version=VERSION, distribution_url="https://x/o.zip",
                    car=["defaults", "security"], car_params={"security_tls": False}, security_password="x" * 20,
                    transport_tls=lifecycle.make_transport_tls("cd" * 16))
    with pytest.raises(ConfigError, match=r"^car defaults,security: OpenSearch's security plugin needs TLS on "
                                          r"transport; leave security_tls at true for opensearch$"):
        render_startup_script(boot)
    topo = parse_topology(_topology({"leader": 9200, "follower": 9200}, {"leader": 9300, "follower": 9300},
                                    security=False))
    topo.clusters[0].car = [*topo.clusters[0].car, "security"]
    with pytest.raises(ConfigError, match=r"^topology os-sec: cluster\(s\) leader answer HTTPS .* but follower "
                                          r"plain HTTP"):
        check_one_scheme(topo)


def test_opensearch_without_security_switches_a_bundled_plugin_off_only() -> None:
    def script(car: list[str], password: str | None) -> str:
        return render_startup_script(NodeBoot(
            cluster_name="c", node_name="c-0", bind_host="10.0.0.1", seed_hosts=["10.0.0.1:9300"],
            master_nodes=["c-0"], engine="opensearch", version=VERSION, distribution_url="https://x/o.zip", car=car,
            security_password=password, transport_tls=lifecycle.make_transport_tls("ef" * 16) if password else None))

    off = 'then echo "plugins.security.disabled: true" >> "$HOME_DIR/config/opensearch.yml"'
    plain = script(["defaults"], None)
    # Only where the distribution ships the plugin: an unknown setting would stop a build without it
    assert 'if [ -d "$HOME_DIR/plugins/opensearch-security" ]; ' + off in plain
    assert "SCHEME=http\n" in plain and "opensearch-security/internal_users.yml" not in plain
    assert off not in script(["defaults", "security"], "y" * 20)
