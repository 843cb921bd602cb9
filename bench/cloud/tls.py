"""Transport TLS for cloud clusters with security on: Elasticsearch's production bootstrap checks
(a non-loopback transport address) refuse security without transport TLS. bench makes a CA per trial
and one node certificate signed by it; nodes verify the certificate chain (verification_mode:
certificate), so one certificate serves every node and remote-cluster connections between the
trial's clusters. Keys live only in the trial's startup scripts and are never stored."""

from __future__ import annotations

import datetime as dt

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from pydantic import BaseModel


class TransportTls(BaseModel):
    ca_pem: str
    cert_pem: str
    key_pem: str


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_transport_tls(trial_id: str, days: int = 30) -> TransportTls:
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name(f"bench trial {trial_id[:12]} CA"))
          .issuer_name(_name(f"bench trial {trial_id[:12]} CA")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now)
          .not_valid_after(now + dt.timedelta(days=days))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name(f"bench-node-{trial_id[:12]}")).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.ExtendedKeyUsageOID.SERVER_AUTH,
                                                  x509.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return TransportTls(
        ca_pem=ca.public_bytes(pem).decode(), cert_pem=cert.public_bytes(pem).decode(),
        key_pem=key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode())
