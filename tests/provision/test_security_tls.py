"""The security mixin's TLS: certificates bench makes (one CA per race, node certificates both clusters of a topology
trust), the engines' TLS settings, OpenSearch's users file, the security plugin's source, the topology key; and a
real 2-node Elasticsearch 8.19.21 with the security car forming its cluster over transport TLS, HTTPS only, with the
CCR privileges check answered by the real node."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import stat
import urllib.error
import urllib.request
from pathlib import Path

import bcrypt
import pytest
import yaml
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import padding

from bench.ccr.es_privileges import check_ccr_privileges, missing_privileges
from bench.cloud.topology import parse_topology
from bench.http.client import ClusterTarget, RawHttp
from bench.provision.car import load_car
from bench.provision.certs import Authority
from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterSpec
from bench.provision.node_security import (
    opensearch_security_off,
    security_plugin_source,
    tls_settings,
    write_internal_users,
)
from bench.provision.tls_files import KEY_FILE, TLS_DIR, write_node_files
from bench.race.cluster_source import target_for
from bench.util.errors import ConfigError
from tests.support.esnode import LocalEngines


def _verify(ca: Authority, pem: str) -> x509.Certificate:
    cert = x509.load_pem_x509_certificate(pem.encode())
    key = ca.cert.public_key()
    key.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(),  # type: ignore[union-attr,call-arg]
               cert.signature_hash_algorithm)  # type: ignore[arg-type]
    return cert


def test_node_certificates_of_one_ca_share_a_dn_and_name_their_hosts() -> None:
    ca = Authority("race-1")
    a, b = ca.node(["127.0.0.1"]), ca.node(["10.0.0.7", "node-b.internal"])
    cert_a, cert_b = _verify(ca, a.cert_pem), _verify(ca, b.cert_pem)
    assert a.node_dn == b.node_dn == cert_a.subject.rfc4514_string() == "CN=bench-node,OU=race-1,O=bench"
    san = cert_b.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(i) for i in san.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "10.0.0.7"}
    assert set(san.get_values_for_type(x509.DNSName)) == {"localhost", "node-b.internal"}
    other = Authority("race-2").node()
    with pytest.raises(InvalidSignature):  # another race's CA did not sign it
        _verify(ca, other.cert_pem)
    assert other.ca_pem != a.ca_pem


def test_node_files_keep_the_key_private(tmp_path: Path) -> None:
    folder = write_node_files(tmp_path, Authority("r").node())
    assert folder == tmp_path / TLS_DIR
    assert stat.S_IMODE((folder / KEY_FILE).stat().st_mode) == 0o600
    assert "PRIVATE KEY" in (folder / KEY_FILE).read_text()


def test_tls_settings_of_both_engines(tmp_path: Path) -> None:
    tls = Authority("r").node()
    (tmp_path / "es").mkdir()
    es = tls_settings("elasticsearch", tls, tmp_path / "es")
    assert es["xpack.security.transport.ssl.enabled"] is es["xpack.security.http.ssl.enabled"] is True
    assert es["xpack.security.http.ssl.certificate_authorities"] == [f"{TLS_DIR}/ca.pem"]
    (tmp_path / "os").mkdir()
    os_ = tls_settings("opensearch", tls, tmp_path / "os")
    assert os_["plugins.security.ssl.http.enabled"] is True
    assert os_["plugins.security.nodes_dn"] == [tls.node_dn] and os_["plugins.security.authcz.admin_dn"] != [tls.node_dn]
    assert os_["plugins.security.ssl.transport.pemkey_filepath"] == f"{TLS_DIR}/{KEY_FILE}"


def test_internal_users_hold_only_the_race_user_with_a_bcrypt_hash(tmp_path: Path) -> None:
    (tmp_path / "opensearch-security").mkdir()
    write_internal_users(tmp_path, "bench", "s3cret-pw", "superuser")
    path = tmp_path / "opensearch-security" / "internal_users.yml"
    doc = yaml.safe_load(path.read_text())
    assert set(doc) == {"_meta", "bench"} and doc["bench"]["backend_roles"] == ["admin"]
    assert bcrypt.checkpw(b"s3cret-pw", doc["bench"]["hash"].encode()) and "s3cret-pw" not in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(ConfigError, match="opensearch-security plugin is not installed"):
        write_internal_users(tmp_path / "nowhere", "bench", "x", "superuser")


def test_security_plugin_source_and_the_default_stays_security_off() -> None:
    src = security_plugin_source("leader", "2.19.1")
    assert src.url == ("https://repo1.maven.org/maven2/org/opensearch/plugin/opensearch-security/2.19.1.0/"
                       "opensearch-security-2.19.1.0.zip") and (src.pinned or "").startswith("sha512:")
    assert security_plugin_source("x", "2.19.3").pinned is None  # Maven publishes .sha1 beside newer ones
    with pytest.raises(ConfigError, match="needs the OpenSearch version"):
        security_plugin_source("leader", None)
    assert opensearch_security_off({})["plugins.security.disabled"] is True
    assert opensearch_security_off({"plugins.security.ssl_only": True}) == {"plugins.security.ssl_only": True}


def test_topology_security_key_adds_the_mixin_to_every_cluster() -> None:
    raw = {"name": "t", "security": True, "clusters": [{"name": "leader"}, {"name": "follower", "car": "defaults,security"}]}
    topo = parse_topology(raw)
    assert [c.car for c in topo.clusters] == [["defaults", "security"], ["defaults", "security"]]
    assert all(load_car(s.car).security for s in topo.cluster_specs())
    assert parse_topology({**raw, "security": False}).clusters[0].car == ["defaults"]


def test_the_security_car_turns_tls_on_unless_asked_not_to(tmp_path: Path, local_engines: LocalEngines) -> None:
    # local_engines: the refusal comes from the provisioner's start, before any node is installed
    assert load_car(["defaults", "security"]).security.tls is True  # type: ignore[union-attr]
    assert load_car(["defaults", "security"], {"security_tls": False}).security.tls is False  # type: ignore[union-attr]
    spec = ClusterSpec(engine="opensearch", version="2.19.1", car=["defaults", "security"],
                       car_params={"security_tls": False})
    with LocalProvisioner("t", tmp_path) as prov, pytest.raises(ConfigError, match="needs TLS on transport"):
        prov.start(spec)


def test_privileges_missing_from_a_has_privileges_answer() -> None:
    answer = {"username": "u", "has_all_requested": False, "cluster": {"manage_ccr": False},
              "index": {"f": {"monitor": True, "write": False}}}
    assert missing_privileges(answer) == ["manage_ccr", "f:write"]
    assert missing_privileges({**answer, "has_all_requested": True}) == []


def _get(url: str, auth: tuple[str, str], ca: Path | None) -> tuple[int, dict]:
    req = urllib.request.Request(url, headers={"Authorization": "Basic " + base64.b64encode(
        f"{auth[0]}:{auth[1]}".encode()).decode()})
    with urllib.request.urlopen(req, timeout=20, context=ssl.create_default_context(cafile=str(ca))) as r:
        return r.status, json.loads(r.read())


@pytest.mark.timeout(400)
def test_secured_elasticsearch_forms_over_transport_tls_and_answers_https_only(tmp_path: Path,
                                                                              local_engines: LocalEngines) -> None:
    # two nodes: they form one cluster only if transport TLS with the race's certificates works both ways
    with local_engines.running_cluster(tmp_path, nodes=2, car=["defaults", "512mheap", "security"]) as info:
        assert info.password is not None and info.username and info.tls_ca is not None
        auth = (info.username, info.password.get_secret_value())
        status, health = _get(info.hosts[1] + "/_cluster/health", auth, info.tls_ca)
        assert status == 200 and health["number_of_nodes"] == 2
        status, certs = _get(info.hosts[0] + "/_ssl/certificates", auth, info.tls_ca)
        used = {Path(c["path"]).name for c in certs}
        assert {"node.pem", "ca.pem"} <= used, certs
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            urllib.request.urlopen(info.hosts[0].replace("https://", "http://") + "/_cluster/health", timeout=10)
        target = target_for(info, ClusterTarget(name="x", hosts=["h:1"]).options)
        assert target.tls and target.options.ca_certs == info.tls_ca

        async def check() -> None:
            async with RawHttp(target, connections=1) as http:
                for side in ("leader", "follower"):
                    await check_ccr_privileges(http, "c", side, "idx")  # a superuser holds them all

        asyncio.run(check())
