"""The TLS files of a node with security on: where they live in its config folder and how they are written.
Apart from ``certs`` (which makes them with ``cryptography``), so that code naming them imports no cryptography."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict

TLS_DIR = "bench-tls"  # inside a node's config folder: engines read only files below it
CA_FILE, CERT_FILE, KEY_FILE = "ca.pem", "node.pem", "node-key.pem"


class NodeTls(BaseModel):
    """What one node needs: the CA certificate, its own certificate and key (PEM)."""

    model_config = ConfigDict(frozen=True)
    ca_pem: str
    cert_pem: str
    key_pem: str
    node_dn: str
    admin_dn: str


def write_node_files(conf: Path, tls: NodeTls) -> Path:
    """The node's CA, certificate and key in ``conf/bench-tls`` (the key 0600, created so from the start);
    returns the folder. The caller hands the folder to the node user with the rest of the node."""
    folder = conf / TLS_DIR
    folder.mkdir(mode=0o700, exist_ok=True)
    for name, text, mode in ((CA_FILE, tls.ca_pem, 0o644), (CERT_FILE, tls.cert_pem, 0o644),
                             (KEY_FILE, tls.key_pem, 0o600)):
        path = folder / name
        path.unlink(missing_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "w") as f:
            f.write(text)
    return folder
