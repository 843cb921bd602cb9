"""A tiny HTTPS server on 127.0.0.1 with a freshly generated self-signed certificate that answers the
few calls a race makes like a one-node Elasticsearch 8.19.21 (``GET _nodes``, ``GET _cluster/health``,
``GET _stats``). Faster than an Elasticsearch with TLS, and enough to test certificate verification.

    with tls_es_server(tmp_path) as (url, cert_file):
        ...
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import json
import ssl
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.http_serving import serving

NODES = {"cluster_name": "tls-test", "nodes": {"n1": {"name": "tls-node", "version": "8.19.21",
                                                     "build_flavor": "default", "roles": ["master", "data"],
                                                     "transport_address": "127.0.0.1:9300"}}}


def self_signed_cert(folder: Path) -> tuple[Path, Path]:
    """(cert.pem, key.pem) for CN/IP 127.0.0.1, valid for a day; its own CA, so it can be ca_certs."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(ski, critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
            .sign(key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        path = self.path.split("?")[0]
        if path.startswith("/_nodes"):
            body = NODES
        elif path.startswith("/_cluster/health"):
            body = {"cluster_name": "tls-test", "status": "green", "timed_out": False, "number_of_nodes": 1}
        else:
            body = {"acknowledged": True}
        raw = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-elastic-product", "Elasticsearch")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _answer

    def log_message(self, format: str, *args: object) -> None:  # quiet test output
        pass


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients that reject our certificate (the point of the tests) are not server errors


@contextlib.contextmanager
def tls_es_server(folder: Path) -> Iterator[tuple[str, Path]]:
    """Serve HTTPS on a free port of 127.0.0.1; yields (host:port, the certificate file)."""
    cert_file, key_file = self_signed_cert(folder)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert_file, key_file)
    # Handshake per connection in the handler thread, so a client that rejects the cert cannot block accept().
    with serving(_Handler, server_class=_QuietServer,
                 wrap=lambda s: ctx.wrap_socket(s, server_side=True, do_handshake_on_connect=False)) as server:
        yield f"127.0.0.1:{server.server_address[1]}", cert_file
