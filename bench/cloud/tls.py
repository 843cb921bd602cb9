"""Transport TLS for cloud clusters with security on: Elasticsearch's production bootstrap checks
(a non-loopback transport address) refuse security without transport TLS. bench makes a CA per trial
and one node certificate signed by it (bench/provision/certs.py); nodes verify the certificate chain
(verification_mode: certificate), so one certificate serves every node and remote-cluster connections between the
trial's clusters. Keys live only in the trial's startup scripts and are never stored."""

from __future__ import annotations

from pydantic import BaseModel

from bench.provision.certs import Authority


class TransportTls(BaseModel):
    ca_pem: str
    cert_pem: str
    key_pem: str


def make_transport_tls(trial_id: str, days: int = 30) -> TransportTls:
    node = Authority(f"trial {trial_id[:12]}", days=days).node()
    return TransportTls(ca_pem=node.ca_pem, cert_pem=node.cert_pem, key_pem=node.key_pem)
