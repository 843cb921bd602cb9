"""A node's security configuration when its car has the security mixin: TLS on transport and HTTP from the race's
CA (bench/provision/certs.py) and the race user, for Elasticsearch (x-pack security, file realm: local.py adds the
user with the engine's tool) and OpenSearch (the security plugin, its users in ``internal_users.yml``).

OpenSearch's integ-test build from Maven lacks the security plugin: ``security_plugin_source`` names the plugin's
zip on Maven Central, fetched through the plugin download cache (checksum verified) like any named plugin."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from bench.provision.plugin_download import PluginSource
from bench.provision.tls_files import CA_FILE, CERT_FILE, KEY_FILE, TLS_DIR, NodeTls, write_node_files
from bench.util.errors import ConfigError

SECURITY_PLUGIN = "opensearch-security"
MAVEN_SECURITY_URL = ("https://repo1.maven.org/maven2/org/opensearch/plugin/opensearch-security/{version}/"
                      "opensearch-security-{version}.zip")
# Maven Central has no checksum beside these zips: their sha512, as downloaded from Maven Central on 2026-11-28
# (curl -O .../opensearch-security-2.19.1.0.zip; sha512sum), so a changed file is refused.
PINNED_SHA512 = {
    "2.19.1.0": "89db39616847243fc02392c224164828caccd445ccf85143846ad1e382362f3cf1ce22f87052631eff1fa573dd1d0e6a2e1"
                "2a54fe8947674cee552b10b736b8a",
}
_SUPERUSER = "superuser"  # the security block's role for "everything": all_access on OpenSearch


def security_plugin_source(cluster: str, version: str | None) -> PluginSource:
    """The security plugin built for OpenSearch ``version`` (2.19.1 -> 2.19.1.0) on Maven Central."""
    if not version:
        raise ConfigError(f"cluster {cluster}: the security mixin needs the OpenSearch version to fetch the security "
                          f"plugin for a build without it; give the version, or a distribution that ships the plugin")
    plugin_version = version if version.count(".") >= 3 else f"{version}.0"
    url = MAVEN_SECURITY_URL.format(version=plugin_version)
    return PluginSource(name=SECURITY_PLUGIN, version=plugin_version, url=url, origin="Maven Central", official=False,
                        pinned=f"sha512:{PINNED_SHA512[plugin_version]}" if plugin_version in PINNED_SHA512 else None)


def tls_settings(engine: str, tls: NodeTls, conf: Path) -> dict[str, Any]:
    """Write the node's certificate files into its config folder; the node settings that use them."""
    write_node_files(conf, tls)
    return tls_node_settings(engine, tls)


def tls_node_settings(engine: str, tls: NodeTls, http: bool = True) -> dict[str, Any]:
    """The node settings for TLS from the files ``write_node_files`` writes (``bench-tls/`` in the config folder);
    ``http``: TLS on HTTP too (OpenSearch's security plugin has it on always)."""
    ca, cert, key = (f"{TLS_DIR}/{f}" for f in (CA_FILE, CERT_FILE, KEY_FILE))
    if engine == "elasticsearch":
        out: dict[str, Any] = {} if http else {"xpack.security.http.ssl.enabled": False}
        for layer in ("transport", "http") if http else ("transport",):
            out |= {f"xpack.security.{layer}.ssl.enabled": True, f"xpack.security.{layer}.ssl.key": key,
                    f"xpack.security.{layer}.ssl.certificate": cert,
                    f"xpack.security.{layer}.ssl.certificate_authorities": [ca]}
        # nodes of other clusters (remote clusters) present the same CA's certificates; the hostnames of cloud
        # nodes are not in them
        out["xpack.security.transport.ssl.verification_mode"] = "certificate"
        return out
    out = {}
    for layer in ("transport", "http"):
        out |= {f"plugins.security.ssl.{layer}.pemcert_filepath": cert,
                f"plugins.security.ssl.{layer}.pemkey_filepath": key,
                f"plugins.security.ssl.{layer}.pemtrustedcas_filepath": ca}
    out |= {"plugins.security.ssl.transport.enforce_hostname_verification": False,
            "plugins.security.ssl.http.enabled": True,
            # every node of the topology (leader and follower alike) has this DN: each trusts the others
            "plugins.security.nodes_dn": [tls.node_dn],
            "plugins.security.authcz.admin_dn": [tls.admin_dn],
            "plugins.security.allow_default_init_securityindex": True,
            "plugins.security.restapi.roles_enabled": ["all_access", "security_rest_api_access"],
            "plugins.security.audit.type": "noop"}
    return out


def opensearch_security_off(settings: dict[str, Any]) -> dict[str, Any]:
    """Security not asked for: a distribution that ships the plugin gets it switched off (it refuses to start
    without certificates), unless the car configures it itself."""
    if any(k.startswith("plugins.security.") for k in settings):
        return settings
    return {**settings, "plugins.security.disabled": True}


def write_internal_users(conf: Path, user: str, password: str, role: str) -> None:
    """The security plugin's users: only the race user (the bundle's demo users with well-known passwords are
    replaced), its password as a bcrypt hash, the file readable by the node only."""
    folder = conf / SECURITY_PLUGIN
    if not folder.is_dir():
        raise ConfigError(f"{folder} is missing: the {SECURITY_PLUGIN} plugin is not installed in this node")
    text = internal_users_yaml(user, password_hash(password), role)
    path = folder / "internal_users.yml"
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def password_hash(password: str) -> str:
    """The bcrypt hash the security plugin checks a password against."""
    import bcrypt  # only with security on: its import is not every race's

    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(12)).decode()


def internal_users_yaml(user: str, hashed: str, role: str) -> str:
    """``internal_users.yml`` with only the race user (the bundle's demo users with well-known passwords are
    replaced), its password as the bcrypt hash ``hashed``."""
    entry: dict[str, Any] = {"hash": hashed, "reserved": True, "description": "bench's race user"}
    if role == _SUPERUSER:
        entry["backend_roles"] = ["admin"]  # mapped to all_access by the plugin's roles_mapping.yml
    else:
        entry["opendistro_security_roles"] = [role]
    doc = {"_meta": {"type": "internalusers", "config_version": 2}, user: entry}
    return yaml.safe_dump(doc, sort_keys=False)
