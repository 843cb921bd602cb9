"""Certificates bench makes for clusters with security on: one CA per race (or cloud trial) and node certificates
it signs. Every node certificate has the same distinguished name, so the clusters of one topology trust each
other's nodes (OpenSearch's ``nodes_dn``; remote-cluster connections over transport TLS) with one setting.
Subject alternative names: 127.0.0.1, localhost and the node hosts, so clients verify hostnames too.

Private keys stay in memory until written into a node's own config folder (``tls_files.write_node_files``, mode
0600); nothing here is stored with a trial. Only races with security on import this module: ``cryptography``'s
x509 costs bench's start 15 MB of address space and ~30 ms otherwise (the file names and the node's files are in
``tls_files``)."""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from bench.provision.tls_files import NodeTls

NODE_CN = "bench-node"
ADMIN_CN = "bench-admin"
_DAYS = 30
_PEM = serialization.Encoding.PEM


def _name(cn: str, label: str) -> x509.Name:
    # O, OU, CN: RFC 4514 (and Java's RFC 2253) render the last first, "CN=...,OU=...,O=bench"
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "bench"),
                      x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, label),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def dn(cn: str, label: str) -> str:
    """The distinguished name a certificate for ``cn`` gets, as the engines write it (``CN=..,OU=..,O=bench``)."""
    return _name(cn, label).rfc4514_string()


def _key() -> rsa.RSAPrivateKey:
    # RSA: every engine's PEM reader takes PKCS#8 RSA keys (EC support differs between versions)
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class Authority:
    """A CA made in memory; ``node`` signs node certificates with it."""

    def __init__(self, label: str, days: int = _DAYS) -> None:
        self.label = label
        self._now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
        self._days = days
        self._key = _key()
        subject = _name(f"bench CA {label}", label)
        self.cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                     .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(self._now).not_valid_after(self._now + dt.timedelta(days=days))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                     .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                  content_commitment=False, key_encipherment=False,
                                                  data_encipherment=False, key_agreement=False,
                                                  encipher_only=False, decipher_only=False), critical=True)
                     .sign(self._key, hashes.SHA256()))

    @property
    def ca_pem(self) -> str:
        return self.cert.public_bytes(_PEM).decode()

    def node(self, hosts: list[str] | None = None) -> NodeTls:
        """A node certificate (server and client use) for 127.0.0.1, localhost and ``hosts``."""
        key = _key()
        names: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        for h in dict.fromkeys(hosts or []):
            try:
                ip = x509.IPAddress(ipaddress.ip_address(h))
                if ip not in names:
                    names.append(ip)
            except ValueError:
                if x509.DNSName(h) not in names:
                    names.append(x509.DNSName(h))
        cert = (x509.CertificateBuilder().subject_name(_name(NODE_CN, self.label)).issuer_name(self.cert.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(self._now).not_valid_after(self._now + dt.timedelta(days=self._days))
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.SubjectAlternativeName(names), critical=False)
                .add_extension(x509.ExtendedKeyUsage([x509.ExtendedKeyUsageOID.SERVER_AUTH,
                                                      x509.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                .sign(self._key, hashes.SHA256()))
        key_pem = key.private_bytes(_PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
        return NodeTls(ca_pem=self.ca_pem, cert_pem=cert.public_bytes(_PEM).decode(), key_pem=key_pem,
                       node_dn=dn(NODE_CN, self.label), admin_dn=dn(ADMIN_CN, self.label))


def write_ca(path: Path, authority: Authority) -> Path:
    """The CA certificate (public) where clients read it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(authority.ca_pem)
    return path
