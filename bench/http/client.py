"""Connecting to clusters: client options, target hosts, elasticsearch-py clients, and turning
connection/auth/TLS failures into one-line errors.

``RawHttp`` carries every request bench sends itself (runners, bulks, telemetry, CCR wiring, checks): plain JSON
over aiohttp, so the same calls work on Elasticsearch and OpenSearch; bulk bodies, prepared bytes (optionally
pre-gzipped), go through ``bench.http.http1`` uncopied, and a bulk answer is only parsed when it reports errors.
elasticsearch-py's AsyncElasticsearch (``es_client``) is made only for the runners a track's ``track.py``
registers, which Rally hands such a client.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import functools
import json
import logging
import os
import re
import socket
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import aiohttp
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from bench.http import cluster_plugins, cluster_runtime, request_scope
from bench.http.http1 import Http1Pool, header_bytes
from bench.util import redact
from bench.util.errors import ClusterError, ConfigError

log = logging.getLogger(__name__)

DEFAULT_CLUSTER = "default"


_REFUSED_OPTIONS = {
    "static_responses": "--client-options: static_responses (Rally's way of measuring its driver alone) is not "
                        "supported: bench measures its driver alone against its null sink (python -m "
                        "benchmarks.nullsink, then --target-hosts at it; see 'Benchmarks' in the developer docs)",
    "create_api_key_per_client": "--client-options: create_api_key_per_client is not supported: bench sends every "
                                 "client's requests with one identity; give it as api_key or basic_auth_user/"
                                 "basic_auth_password",
}


class ClientOptions(BaseModel):
    """``--client-options``: Rally's names where Rally has them."""

    model_config = ConfigDict(extra="forbid")
    basic_auth_user: str | None = None
    basic_auth_password: SecretStr | None = None
    api_key: SecretStr | None = None  # "id:key" or the base64 encoded form
    use_ssl: bool = False
    verify_certs: bool = True
    ca_certs: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None
    timeout: float | None = Field(default=60.0, gt=0)  # seconds; None (Rally's timeout:None): no timeout
    http_compress: bool = False
    # Rally's: the connection pool's size per cluster and load-driver process (default: its clients); whether
    # connections the server left half-closed (TLS) are closed by force.
    max_connections: int | None = Field(default=None, ge=1)
    enable_cleanup_closed: bool = True

    @model_validator(mode="before")
    @classmethod
    def _rally_values(cls, data: Any) -> Any:
        """Rally's value syntax: 'quoted' strings, None unquoted; and its options bench answers in one line."""
        if not isinstance(data, dict):
            return data
        out = {}
        for k, v in data.items():
            if isinstance(v, str) and len(v) >= 2 and v[0] == v[-1] == "'":
                v = v[1:-1]
            elif v == "None":
                v = None
            out[k] = v
        refusal = _REFUSED_OPTIONS.get(next((k for k in out if k in _REFUSED_OPTIONS), ""))
        if refusal:
            raise ConfigError(refusal)
        return out

    @field_validator("ca_certs", "client_cert", "client_key")
    @classmethod
    def _exists(cls, v: Path | None) -> Path | None:
        if v is not None and not Path(v).expanduser().is_file():
            raise ValueError(f"file {v} does not exist")
        return Path(v).expanduser() if v is not None else None

    def auth_header(self) -> str | None:
        if self.api_key is not None:
            key = self.api_key.get_secret_value()
            if ":" in key:
                key = base64.b64encode(key.encode()).decode()
            return f"ApiKey {key}"
        if self.basic_auth_user is not None:
            pw = self.basic_auth_password.get_secret_value() if self.basic_auth_password else ""
            return "Basic " + base64.b64encode(f"{self.basic_auth_user}:{pw}".encode()).decode()
        return None

    def public(self) -> dict[str, Any]:
        """What may be stored with a trial: everything but secrets."""
        d = self.model_dump(mode="json", exclude={"basic_auth_password", "api_key"})
        d["basic_auth_password"] = redact.MASK if self.basic_auth_password else None
        d["api_key"] = redact.MASK if self.api_key else None
        return d


def parse_client_options(raw: dict[str, Any]) -> ClientOptions:
    for key in ("basic_auth_password", "api_key"):
        if raw.get(key):
            redact.register_secret(str(raw[key]))
    try:
        return ClientOptions.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "?"
        raise ConfigError(f"--client-options: '{field}': {err['msg']}") from None


class ClusterTarget(BaseModel):
    """How to reach one cluster of a race."""

    name: str = DEFAULT_CLUSTER
    hosts: list[str]
    options: ClientOptions = Field(default_factory=ClientOptions)

    @model_validator(mode="after")
    def _one_scheme(self) -> "ClusterTarget":
        # use_ssl:true with an explicit http:// host is a contradiction; sending plain HTTP there would
        # quietly downgrade what the user asked for, so it is refused (ConfigError passes through pydantic).
        plain = [h for h in self.hosts if h.startswith("http://")]
        if self.options.use_ssl and plain:
            raise ConfigError(f"--target-hosts: {plain[0]} is plain HTTP but --client-options has use_ssl:true: "
                              f"write the host as https://... (or without a scheme), or drop use_ssl")
        return self

    @property
    def tls(self) -> bool:
        """TLS for this cluster: use_ssl, or any host given as https:// (which always means TLS)."""
        return self.options.use_ssl or any(h.startswith("https://") for h in self.hosts)

    def urls(self) -> list[str]:
        scheme = "https" if self.options.use_ssl else "http"
        return [h if "://" in h else f"{scheme}://{h}" for h in self.hosts]


def parse_target_hosts(spec: str) -> dict[str, list[str]]:
    """``host:port,host:port`` (one cluster named 'default'), ``leader:host:port,follower:host:port``
    (named clusters), or a JSON file ``{"leader": ["host:port"], "follower": [...]}`` (Rally's form)."""
    spec = spec.strip()
    p = Path(spec).expanduser()
    if spec.endswith(".json") or p.is_file():
        try:
            data = json.loads(p.read_text())
        except FileNotFoundError:
            raise ConfigError(f"--target-hosts: file {spec} does not exist") from None
        except json.JSONDecodeError as e:
            raise ConfigError(f"--target-hosts: {spec}:{e.lineno}:{e.colno}: {e.msg}") from None
        if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
            raise ConfigError(f"--target-hosts: {spec} must map cluster names to lists of host:port")
        return {k: [str(h) for h in v] for k, v in data.items()}
    out: dict[str, list[str]] = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        parts = item.split(":")
        if "://" in item:  # a URL; a cluster name may precede it as name:http://...
            name, _, url = item.partition(":") if not item.startswith(("http://", "https://")) else ("", "", item)
            out.setdefault(name or DEFAULT_CLUSTER, []).append(url)
        elif len(parts) == 3:
            out.setdefault(parts[0], []).append(f"{parts[1]}:{parts[2]}")
        elif len(parts) in (1, 2):
            out.setdefault(DEFAULT_CLUSTER, []).append(item)
        else:
            raise ConfigError(f"--target-hosts: cannot read '{item}': use host:port or name:host:port")
    if not out:
        raise ConfigError("--target-hosts is empty: give host:port[,host:port] or name:host:port,...")
    return out


def ssl_context(target: ClusterTarget) -> ssl.SSLContext | None:
    """The TLS context for a cluster (verifying, unless verify_certs:false), or None for plain HTTP."""
    return tls_context(target.options) if target.tls else None


def tls_context(opts: ClientOptions) -> ssl.SSLContext:
    """A TLS context from client options: their CA, certificate verification and client certificate."""
    ctx = ssl.create_default_context(cafile=str(opts.ca_certs) if opts.ca_certs else None)
    if not opts.verify_certs:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if opts.client_cert:
        ctx.load_cert_chain(str(opts.client_cert), str(opts.client_key) if opts.client_key else None)
    return ctx


def es_client(target: ClusterTarget, *, connections: int = 8) -> Any:
    """An AsyncElasticsearch for one cluster. Imported lazily: it is heavy and workers need it late."""
    from elasticsearch import AsyncElasticsearch

    o = target.options
    kw: dict[str, Any] = dict(
        request_timeout=o.timeout,
        http_compress=o.http_compress,
        connections_per_node=max(1, connections),
        retry_on_timeout=False,
        max_retries=0,
    )
    ctx = ssl_context(target)
    if ctx is not None:
        kw["ssl_context"] = ctx
    if o.api_key is not None:
        kw["api_key"] = o.api_key.get_secret_value()
    elif o.basic_auth_user is not None:
        kw["basic_auth"] = (o.basic_auth_user, o.basic_auth_password.get_secret_value() if o.basic_auth_password else "")
    return AsyncElasticsearch(target.urls(), **kw)


def opensearch_client(target: ClusterTarget, *, connections: int = 8) -> Any:
    """opensearch-py's AsyncOpenSearch for one cluster: what OpenSearch Benchmark hands a workload's own runners
    (elasticsearch-py refuses clusters that are not Elasticsearch). Imported lazily, as es_client."""
    from opensearchpy import AIOHttpConnection, AsyncOpenSearch

    o = target.options
    kw: dict[str, Any] = dict(
        connection_class=AIOHttpConnection,
        timeout=o.timeout,
        http_compress=o.http_compress,
        maxsize=max(1, connections),
        retry_on_timeout=False,
        max_retries=0,
    )
    ctx = ssl_context(target)
    if ctx is not None:
        kw["ssl_context"] = ctx
        kw["use_ssl"] = True
    if o.api_key is not None:
        kw["headers"] = {"Authorization": f"ApiKey {o.api_key.get_secret_value()}"}
    elif o.basic_auth_user is not None:
        kw["http_auth"] = (o.basic_auth_user, o.basic_auth_password.get_secret_value() if o.basic_auth_password else "")
    return AsyncOpenSearch(target.urls(), **kw)


class RawHttp:
    """The client every runner uses: round-robins over a cluster's hosts, each through a ``bench.http.http1``
    pool of keep-alive connections (prepared bulk bodies go to the socket uncopied, a search's constant head is
    built once). aiohttp is kept for the connection check, whose errors it words."""

    def __init__(self, target: ClusterTarget, *, connections: int) -> None:
        self._urls = target.urls()
        self._i = 0
        self._headers: dict[str, str] = {}
        auth = target.options.auth_header()
        if auth:
            self._headers["Authorization"] = auth
        self._ssl = ssl_context(target)
        self._timeout = aiohttp.ClientTimeout(total=target.options.timeout)
        self._connections = target.options.max_connections or connections
        self._cleanup_closed = target.options.enable_cleanup_closed
        self._session: aiohttp.ClientSession | None = None
        self._pools: list[Http1Pool] = []
        self._by_node: dict[str, Http1Pool] = {}
        self._p = 0

    async def __aenter__(self) -> "RawHttp":
        conn = aiohttp.TCPConnector(limit=self._connections, ssl=self._ssl if self._ssl is not None else False,
                                    ttl_dns_cache=None, enable_cleanup_closed=self._cleanup_closed,
                                    socket_factory=_socket)
        # skip_auto_headers: no Accept-Encoding negotiation or per-request UA work.
        self._session = aiohttp.ClientSession(connector=conn, timeout=self._timeout,
                                              headers={"Content-Type": "application/json", **self._headers},
                                              skip_auto_headers=("User-Agent",), auto_decompress=True)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for pool in [*self._pools, *self._by_node.values()]:
            pool.close()
        if self._session is not None:
            await self._session.close()

    def _pool_for(self, url: str) -> Http1Pool:
        u = urlsplit(url)
        https = u.scheme == "https"
        return Http1Pool(u.hostname or "127.0.0.1", u.port or (443 if https else 80), headers=self._headers,
                         limit=self._connections, ssl_context=self._ssl if https else None,
                         timeout=self._timeout.total, send_buffer=SEND_BUFFER,
                         prefix=u.path.rstrip("/"))

    def _host_pools(self) -> list[Http1Pool]:
        if not self._pools:
            self._pools = [self._pool_for(url) for url in self._urls]
        return self._pools

    def _node_pool(self, url: str) -> Http1Pool:
        """A pool for one node's base URL (shard-aware bulks go straight to the node of their shards)."""
        pool = self._by_node.get(url)
        if pool is None:
            pool = self._by_node[url] = self._pool_for(url)
        return pool

    def _next_pool(self) -> Http1Pool:
        pools = self._host_pools()
        pool = pools[self._p]
        self._p = (self._p + 1) % len(pools)
        return pool

    async def connect(self, connections: int) -> None:
        """Open ``connections`` keep-alive connections now, spread over the hosts, so that a step's clients do not
        connect inside the measurement (a storm of thousands of connects is the server's accept queue, not
        its search speed). A connection the cluster refuses is left to the request that needs it (it fails as a
        request); running out of file descriptors is this machine's limit, a ClusterError naming it."""
        pools = self._host_pools()
        failed = [e for f in await asyncio.gather(*(p.connect(connections // len(pools) + (i < connections % len(pools)))
                                                    for i, p in enumerate(pools))) for e in f]
        if any(isinstance(e, OSError) and e.errno in (errno.EMFILE, errno.ENFILE) for e in failed):
            import resource

            soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
            raise ClusterError(f"cannot open {connections:,} connections to {self._urls[0]}: this process may open "
                               f"{soft:,} files (ulimit -n); raise the limit (ulimit -Hn, LimitNOFILE) or spread "
                               f"the clients over more --worker-processes")
        if failed:
            log.info("%d of %d connections to %s could not be opened ahead: %s", len(failed), connections,
                     self._urls[0], failed[0])

    async def post(self, path: str, body: bytes, *, gzipped: bool = False, node: str | None = None) -> tuple[int, bytes]:
        """The bulk hot path: send prepared bytes, return status and raw body. ``node`` (a base URL) sends to that
        node instead of the next host in turn."""
        pool = self._node_pool(node) if node is not None else self._next_pool()
        extra = _NDJSON_GZIP if gzipped else _NDJSON
        opts = request_scope.current()
        if opts is None:
            return await pool.post(path, body, extra)
        extra += header_bytes(opts.headers)
        result = await pool.request("POST", path, body, extra, timeout=opts.timeout)
        if opts.responses is not None:
            opts.responses.append(result)
        return result

    async def send(self, method: str, path: str, body: bytes | None = None, *,
                   params: dict[str, Any] | None = None, headers: dict[str, str] | None = None,
                   gzipped: bool = False, timeout: float | None = None,
                   idempotent: bool | None = None) -> tuple[int, bytes]:
        """One request with a prepared body; returns the status and the raw answer, unparsed (runners that
        only need a flag from the first bytes, or the answer's size, never parse it). ``idempotent`` (default:
        any method but POST) lets a request be sent again when its reused keep-alive connection had been closed by
        the server before it answered."""
        opts = request_scope.current()  # the operation's headers, opaque id and timeout
        if opts is None and not headers and not gzipped:
            extra = _JSON
        else:
            h = {"Content-Type": "application/json", "Accept": "application/json"}
            if opts is not None:
                _merge(h, opts.headers)
                if timeout is None:
                    timeout = opts.timeout
            if headers:
                _merge(h, headers)
            if gzipped:
                h["Content-Encoding"] = "gzip"
            extra = header_bytes(h)
        target = request_target(path)
        if params:
            target += ("&" if "?" in target else "?") + urlencode({k: _param(v) for k, v in params.items()},
                                                                    safe=",*:/")
        answer = await self._next_pool().request(method, target, body, extra, timeout=timeout,
                                                 retry_stale=method != "POST" if idempotent is None else idempotent)
        if opts is not None and opts.responses is not None:
            opts.responses.append(answer)
        return answer

    async def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                      body: Any = None, headers: dict[str, str] | None = None,
                      timeout: float | None = None) -> tuple[int, Any]:
        """A JSON request; returns status and the parsed body (or raw text when it is not JSON).

        Plain ``application/json`` on purpose: the same call works on Elasticsearch and OpenSearch
        (elasticsearch-py 8 rejects servers that do not identify as Elasticsearch).
        """
        if body is None or isinstance(body, bytes):
            data = body
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = json.dumps(body).encode()
        status, raw = await self.send(method, path, data, params=params, headers=headers, timeout=timeout)
        if not raw:
            return status, None
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")


_JSON = b"Content-Type: application/json\r\nAccept: application/json\r\n"
_NDJSON = b"Content-Type: application/x-ndjson\r\n"
_NDJSON_GZIP = _NDJSON + b"Content-Encoding: gzip\r\n"


def _merge(into: dict[str, str], more: dict[str, str]) -> None:
    """Header names are case-insensitive: a track's ``content-type`` replaces bench's ``Content-Type``."""
    lower = {k.lower(): k for k in into}
    for k, v in more.items():
        old = lower.get(k.lower())
        if old is not None and old != k:
            del into[old]
        into[k] = v


@functools.lru_cache(maxsize=4096)
def request_target(path: str) -> str:
    """A path (with or without its query) as a request target: characters a URL cannot carry percent-encoded, the
    rest (``*``, ``,``, ``:``, date math's ``<>{}`` encoded, an existing ``%XX`` kept) as written. Paths repeat, so
    each is encoded once."""
    p, q, query = path.partition("?")
    if not p.startswith("/"):
        p = "/" + p
    return quote(p, safe="/@:!$&'()*+,;=%~") + (q + quote(query, safe="=&/?:@!$'()*+,;%~") if q else "")


# A send buffer large enough for most of a bulk body lets one send() take it, instead of asyncio copying
# the rest into its own buffer and trickling it out over many loop iterations.
SEND_BUFFER = int(os.environ.get("BENCH_SEND_BUFFER", 4 << 20))


def _socket(addr_info: Any) -> socket.socket:
    family, type_, proto, _, _ = addr_info
    sock = socket.socket(family=family, type=type_, proto=proto)
    if SEND_BUFFER > 0:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
    return sock


def _param(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


def describe_connection_error(url: str, exc: BaseException) -> ClusterError:
    """One line a user can act on, for the usual ways of not reaching a cluster."""
    text = redact.redact_text(str(exc))
    low = text.lower()
    chain = [exc] + [getattr(exc, "__cause__", None), getattr(exc, "__context__", None)]
    if any(isinstance(e, ssl.SSLCertVerificationError) for e in chain if e is not None) or \
            "certificate verify failed" in low:
        return ClusterError(f"TLS certificate verification failed for {url}: pass --client-options="
                            f"ca_certs:/path/to/ca.pem (or verify_certs:false to skip verification)")
    if "wrong version number" in low or "ssl" in low and "record" in low:
        return ClusterError(f"TLS handshake with {url} failed ({text[:120]}): does the cluster speak "
                            f"{'https' if url.startswith('https') else 'http'}? set use_ssl accordingly")
    if "server disconnected" in low and url.startswith("http://"):
        # An https-only node closes plain-HTTP connections without an answer.
        return ClusterError(f"cannot reach {url}: the server closed the connection without answering - if the "
                            f"cluster uses TLS, pass --client-options=use_ssl:true")
    if "refused" in low or "cannot connect" in low or "connect call failed" in low:
        return ClusterError(f"cannot connect to {url}: connection refused - is the cluster running and "
                            f"--target-hosts right?")
    if "timed out" in low or "timeout" in low:
        return ClusterError(f"cannot reach {url}: timed out - check --target-hosts and the network")
    return ClusterError(f"cannot reach {url}: {text[:200] or type(exc).__name__}")


def timed_out(url: str, options: ClientOptions) -> ClusterError:
    """The cluster did not answer within --client-options' ``timeout``: say so, and whether that was the user's."""
    if "timeout" in options.model_fields_set:
        return ClusterError(f"{url} did not answer GET _nodes within {options.timeout:g} s: timeout:"
                            f"{options.timeout:g} in --client-options is too short; raise it (default 60)")
    return ClusterError(f"{url} did not answer GET _nodes within {options.timeout:g} s (timeout of "
                        f"--client-options): is the cluster overloaded, or --target-hosts wrong?")


def _what_it_was(body: bytes, content_type: str) -> str:
    """An answer that is not a node list, in a few words: its type and, for a page, its title."""
    text = body[:4096].decode(errors="replace")
    title = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
    if title:
        return f"an HTML page titled {' '.join(title.group(1).split())[:80]!r}"
    if not body.strip():
        return "an empty body"
    return f"{content_type or 'a body'} ({len(body):,} bytes)"


async def check_cluster(target: ClusterTarget) -> dict[str, Any]:
    """Connect once and read what the race needs to know, without ``GET /`` (absent in some builds).

    Returns ``{"name", "cluster_name", "engine", "version", "nodes"}``; raises ClusterError with one
    line on connection, TLS or authentication problems.
    """
    url = target.urls()[0]
    async with RawHttp(target, connections=1) as http:
        assert http._session is not None
        try:
            async with http._session.get(url + "/_nodes/_all/none?filter_path=cluster_name,nodes.*.version,"
                                               "nodes.*.name,nodes.*.build_flavor,nodes.*.roles,"
                                               "nodes.*.attributes,nodes.*.transport_address") as resp:
                body = await resp.read()
                status = resp.status
                content_type = resp.content_type
        except TimeoutError:  # aiohttp's connect/read timeouts too; their text is often empty
            raise timed_out(url, target.options) from None
        except (aiohttp.ClientError, OSError) as e:
            raise describe_connection_error(url, e) from None
        plugins = await _plugins(http) if status < 400 else {}
        runtime = await _runtime(http) if status < 400 else {}
    if status == 401:
        raise ClusterError(f"authentication failed at {url} (HTTP 401): check basic_auth_user/basic_auth_password "
                           f"or api_key in --client-options")
    if status == 403:
        raise ClusterError(f"{url} refused the request (HTTP 403): the user lacks the 'monitor' privilege")
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if status >= 400 and data is not None:
        snippet = " ".join(body[:200].decode(errors="replace").split())  # one line
        raise ClusterError(f"{url} answered HTTP {status} to GET _nodes: {redact.redact_text(snippet)}")
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), dict):
        raise ClusterError(f"{url} does not look like Elasticsearch/OpenSearch: GET _nodes answered HTTP {status} "
                           f"with {_what_it_was(body, content_type)}, not a node list; is the port in "
                           "--target-hosts the engine's HTTP port (9200 by default)?")
    nodes = data.get("nodes", {})
    versions = sorted({n.get("version", "?") for n in nodes.values()})
    flavor = {n.get("build_flavor") for n in nodes.values()}
    # OpenSearch reports its own version and no build_flavor; Elasticsearch 8 reports "default".
    engine = "opensearch" if flavor == {None} else "elasticsearch"
    return {"name": target.name, "cluster_name": data.get("cluster_name"), "engine": engine,
            "version": versions[0] if len(versions) == 1 else ",".join(versions), "nodes": len(nodes),
            "hosts": target.urls(), **plugins, **runtime}


async def _runtime(http: RawHttp) -> dict[str, Any]:
    """Heap and processors per node (bench.http.cluster_runtime); {} when the cluster will not say (a record of what
    ran, never a reason to fail the race)."""
    try:
        status, body = await http.request("GET", cluster_runtime.PATH, params={"filter_path": cluster_runtime.FILTER})
    except (aiohttp.ClientError, OSError, TimeoutError) as e:
        log.info("GET _nodes/jvm,os failed: %s", e)
        return {}
    return cluster_runtime.runtime_facts(body) if status < 400 else {}


async def _plugins(http: RawHttp) -> dict[str, Any]:
    """The cluster's plugins and modules (bench.http.cluster_plugins); {} when it will not say (they are a record of
    what ran, never a reason to fail the race)."""
    try:
        status, body = await http.request("GET", cluster_plugins.PATH, params={"filter_path": cluster_plugins.FILTER})
    except (aiohttp.ClientError, OSError, TimeoutError) as e:
        log.info("GET _nodes/plugins failed: %s", e)
        return {}
    return cluster_plugins.plugin_facts(body) if status < 400 else {}
