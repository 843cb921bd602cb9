"""TLS for cloud clusters with security on: a CA per trial and one node certificate signed by it
(bench/provision/certs.py), on transport (Elasticsearch's production bootstrap checks refuse security without it on a
non-loopback address; OpenSearch's security plugin requires it) and on HTTP (the security mixin's ``security_tls``,
on by default). The certificate names every node's private address, so clients verify hostnames over HTTPS; nodes
verify the chain only on transport, so the one certificate serves every node and the remote-cluster connections
between the trial's clusters. Keys live only in the trial's startup scripts and are never stored; the CA
certificate (public) is what the load driver trusts."""

from __future__ import annotations

from bench.provision.certs import Authority
from bench.provision.tls_files import NodeTls

TransportTls = NodeTls  # the name the cloud code knew it by: a node's CA, certificate and key (PEM) and DNs


def make_transport_tls(trial_id: str, days: int = 30, hosts: list[str] | None = None) -> NodeTls:
    """A new CA for the trial and the node certificate for ``hosts`` (the nodes' private addresses)."""
    return Authority(f"trial {trial_id[:12]}", days=days).node(hosts)
