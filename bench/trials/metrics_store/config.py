"""Which metrics store bench writes to and reads from, and how it connects.

Three sources, the first that names a store wins: ``--metrics-store URL`` (with ``--metrics-store-options``, the
same keys as ``--client-options``), the environment (``BENCH_METRICS_STORE``, ``BENCH_METRICS_STORE_OPTIONS``,
``BENCH_METRICS_STORE_PASSWORD``), and ``$BENCH_HOME/bench.ini`` with Rally's ``[reporting] datastore.*`` keys.
None of them: SQLite only. A password, wherever it comes from, is registered as a secret at once and kept out
of ``StoreConfig.key`` (what the local store records pushes under) and of everything stored.
"""

from __future__ import annotations

import configparser
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from bench.http.client import ClientOptions, parse_client_options
from bench.trials.metrics_store.layout import DEFAULT_PREFIX, LAYOUTS, Layout
from bench.util import redact
from bench.util.errors import ConfigError
from bench.util.home import bench_home_path

ENV_URL = "BENCH_METRICS_STORE"
ENV_OPTIONS = "BENCH_METRICS_STORE_OPTIONS"
ENV_PASSWORD = "BENCH_METRICS_STORE_PASSWORD"
INI_NAME = "bench.ini"


class StoreConfig(BaseModel):
    """A shared Elasticsearch/OpenSearch metrics store."""

    model_config = ConfigDict(frozen=True)
    url: str  # scheme://host:port, never with credentials
    options: ClientOptions = ClientOptions()
    # Rally's index names are rally-races-*, rally-metrics-*, rally-results-*: its dashboards read those. The osb
    # layout writes OSB's names instead (benchmark-test-runs-*, test-run-id, workload ...: ``layout``).
    prefix: str = "rally"
    layout: Layout = "rally"
    environment: str = "local"  # Rally's env.name
    # Rally's metrics.request.downsample.factor: only every n-th request sample reaches the store.
    downsample: int = Field(default=1, ge=1)

    @property
    def key(self) -> str:
        """Names this store in the local push records (no credentials)."""
        return f"{self.url}/{self.prefix}" + ("" if self.layout == "rally" else f"/{self.layout}")

    @property
    def tls(self) -> bool:
        return self.url.startswith("https://")


_configured: StoreConfig | None = None
_explicit = False


def configure(config: StoreConfig | None) -> None:
    """Set the store for this process (the command line's ``--metrics-store``); None: SQLite only."""
    global _configured, _explicit
    _configured, _explicit = config, True


def reset() -> None:
    global _configured, _explicit
    _configured, _explicit = None, False


def configured_store() -> StoreConfig | None:
    """The store to use: what ``configure`` set, else the environment, else ``bench.ini``; None for SQLite."""
    if _explicit:
        return _configured
    url = os.environ.get(ENV_URL, "").strip()
    if url:
        opts = _options_from_env()
        lay = _layout(opts.pop("layout", "rally"), what=ENV_OPTIONS)
        prefix = str(opts.pop("index_prefix", DEFAULT_PREFIX[lay]))
        return from_url(url, opts, password=os.environ.get(ENV_PASSWORD) or None, prefix=prefix, layout=lay,
                        what=ENV_URL)
    return from_ini(bench_home_path() / INI_NAME)


def _options_from_env() -> dict[str, Any]:
    raw = os.environ.get(ENV_OPTIONS, "").strip()
    if not raw:
        return {}
    from bench.track.track_params import parse_params

    return parse_params(raw, what=ENV_OPTIONS)


def _layout(value: Any, *, what: str) -> Layout:
    v = str(value).strip().lower()
    for lay in LAYOUTS:
        if v == lay:
            return lay
    raise ConfigError(f"{what}: layout {value!r} is not one of {', '.join(LAYOUTS)} (rally: Rally's index and field "
                      "names; osb: OpenSearch Benchmark's)")


def from_url(url: str, options: dict[str, Any] | None = None, *, password: str | None = None,
             prefix: str = "rally", environment: str = "local", downsample: int = 1, layout: Layout = "rally",
             what: str = "--metrics-store") -> StoreConfig:
    """``https://user[:password]@host:9200`` plus client options; the user and password may also be options."""
    opts = dict(options or {})
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{what}: {redact.redact_text(url)!r} is not http(s)://[user@]host:port")
    if parts.password:
        redact.register_secret(parts.password)
    if password:
        redact.register_secret(password)
    if parts.username and "basic_auth_user" not in opts:
        opts["basic_auth_user"] = parts.username
    pw = opts.get("basic_auth_password") or parts.password or password
    if pw:
        opts["basic_auth_password"] = pw
    if opts.get("use_ssl") in (True, "true", "True") and parts.scheme == "http" and "://" in url:
        raise ConfigError(f"{what}: an http:// store with use_ssl:true contradicts itself: write https://")
    scheme = "https" if parts.scheme == "https" or opts.pop("use_ssl", False) in (True, "true", "True") else "http"
    try:
        port = parts.port or 9200
    except ValueError:
        raise ConfigError(f"{what}: {redact.redact_text(url)!r} has no valid port") from None
    try:
        client = parse_client_options(opts)
    except ConfigError as e:
        raise ConfigError(str(e).replace("--client-options", f"{what} options")) from None
    return StoreConfig(url=f"{scheme}://{parts.hostname}:{port}", options=client, prefix=prefix,
                       environment=environment, downsample=downsample, layout=layout)


def from_ini(path: Path) -> StoreConfig | None:
    """Rally's ``[reporting]`` keys (``datastore.type = elasticsearch``, ``datastore.host``, ``.port``, ``.secure``,
    ``.user``, ``.password``, ``.ssl.verification_mode``, ``.ssl.certificate_authorities``,
    ``metrics.request.downsample.factor``), ``[system] env.name``, and bench's ``datastore.index_prefix`` and
    ``datastore.layout`` (``rally`` or ``osb``)."""
    if not path.is_file():
        return None
    ini = configparser.ConfigParser(interpolation=None)
    try:
        ini.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot be read: {str(e).splitlines()[0]}") from None
    rep = ini["reporting"] if ini.has_section("reporting") else {}
    kind = rep.get("datastore.type", "sqlite").strip().lower()
    if kind in ("sqlite", "in-memory", ""):
        return None
    if kind not in ("elasticsearch", "opensearch"):
        raise ConfigError(f"{path}: [reporting] datastore.type = {kind!r}: use elasticsearch, opensearch or sqlite")
    host = rep.get("datastore.host", "").strip()
    if not host:
        raise ConfigError(f"{path}: [reporting] datastore.host is missing: name the metrics store's host")
    secure = rep.get("datastore.secure", "false").strip().lower() in ("true", "yes", "1")
    opts: dict[str, Any] = {}
    if rep.get("datastore.user", "").strip():
        opts["basic_auth_user"] = rep["datastore.user"].strip()
    if rep.get("datastore.password", "").strip():
        opts["basic_auth_password"] = rep["datastore.password"].strip()
    if rep.get("datastore.api_key", "").strip():
        opts["api_key"] = rep["datastore.api_key"].strip()
    if rep.get("datastore.ssl.verification_mode", "full").strip().lower() == "none":
        opts["verify_certs"] = False
    if rep.get("datastore.ssl.certificate_authorities", "").strip():
        opts["ca_certs"] = rep["datastore.ssl.certificate_authorities"].strip()
    try:
        factor = int(rep.get("metrics.request.downsample.factor", "1"))
        port = int(rep.get("datastore.port", "9200"))
    except ValueError as e:
        raise ConfigError(f"{path}: [reporting] {e}: use a whole number") from None
    if factor < 1:
        raise ConfigError(f"{path}: [reporting] metrics.request.downsample.factor = {factor}: use 1 or more")
    env = ini.get("system", "env.name", fallback="local").strip() or "local"
    lay = _layout(rep.get("datastore.layout", "rally").strip() or "rally",
                  what=f"{path}: [reporting] datastore.layout")
    prefix = rep.get("datastore.index_prefix", "").strip() or DEFAULT_PREFIX[lay]
    return from_url(f"{'https' if secure else 'http'}://{host}:{port}", opts, prefix=prefix, environment=env,
                    downsample=factor, layout=lay, what=f"{path} [reporting]")


def from_cli(url: str, options: str | None, *, downsample: int | None = None) -> StoreConfig:
    """``--metrics-store`` and ``--metrics-store-options`` (k:v,... or a JSON file, as ``--client-options``)."""
    from bench.track.track_params import parse_params

    opts = parse_params(options, what="--metrics-store-options") if options else {}
    lay = _layout(opts.pop("layout", "rally"), what="--metrics-store-options")
    prefix = str(opts.pop("index_prefix", DEFAULT_PREFIX[lay]))
    env = str(opts.pop("environment", "local"))
    factor = opts.pop("downsample_factor", downsample or 1)
    try:
        factor = int(factor)
    except (TypeError, ValueError):
        raise ConfigError(f"--metrics-store-options: downsample_factor {factor!r} is not a whole number") from None
    if factor < 1:
        raise ConfigError(f"--metrics-store-options: downsample_factor {factor}: use 1 or more")
    return from_url(url, opts, password=os.environ.get(ENV_PASSWORD) or None, prefix=prefix, environment=env,
                    downsample=factor, layout=lay)


def describe(config: StoreConfig) -> str:
    """The store in one line, as logs and messages name it (no credentials)."""
    who = f"{config.options.basic_auth_user}@" if config.options.basic_auth_user else ""
    lay = "" if config.layout == "rally" else f", {config.layout} layout"
    return f"{config.url.replace('://', '://' + who, 1)} ({config.prefix}-*{lay})"
