"""Start and stop real Elasticsearch/OpenSearch nodes on 127.0.0.1.

Each node gets its own copy of the unpacked distribution, its own config/data/log folders and free
ports. Nodes are owned by a guard process (bench/provision/guard.py) so they die with bench, even on
``kill -9``, unless ``stop_all(keep=True)`` detaches them. As root, nodes run as an unprivileged user
under /var/tmp/bench-nodes (root's home is not traversable for that user).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import psutil
import yaml
from pydantic import SecretStr

import bench.provision.ports as portalloc
from bench.provision.car import CarConfig, load_car
from bench.provision.cpus import allowed_cpus, check_cpus
from bench.provision.distribution import obtain
from bench.provision.guard import kill_survivors
from bench.provision.host import this_host
from bench.provision.java import resolve_java
from bench.provision.model import (
    ENGINES,
    ClusterInfo,
    ClusterSpec,
    EngineLayout,
    JavaFacts,
    NodeInfo,
    node_jvm_options,
)
from bench.provision.node_security import (
    SECURITY_PLUGIN,
    opensearch_security_off,
    security_plugin_source,
    tls_settings,
    write_internal_users,
)
from bench.provision.osuser import NodeUser, chown_tree, make_traversable, node_user, popen_user_kwargs
from bench.provision.plugin_download import PluginSource, obtain_plugin, plugin_source
from bench.provision.plugin_install import install_failure
from bench.provision.stop import KeptNode, keep_logs, process_record, record_kept
from bench.util.activity import say
from bench.util.errors import ConfigError, ProvisionError
from bench.util.redact import redact_text, register_secret

if TYPE_CHECKING:
    from bench.provision.certs import Authority

log = logging.getLogger(__name__)

ROOT_NODES_BASE = Path("/var/tmp/bench-nodes")
STOP_GRACE = 30.0
_TAIL_LINES = 20
# Keys bench owns: a car overriding them would break port allocation, health checks or cleanup.
_MANAGED = ("cluster.name", "node.name", "network.host", "http.port", "transport.port", "path.data", "path.logs")


@dataclass
class _Node:
    info: NodeInfo
    cluster: str
    base: Path
    console_log: Path
    pid_file: Path
    guard: subprocess.Popen | None = None
    stopped: bool = False
    # Killed on purpose during the race (a failover drill): its death is planned, not a failure.
    down_on_purpose: bool = False
    java_home: Path | None = None  # the JDK this node runs on (a bundled JDK: the node's own copy of it)
    bundled_jdk: bool = False


@dataclass
class _Cluster:
    info: ClusterInfo
    nodes: list[_Node] = field(default_factory=list)


class LocalProvisioner:
    """Provisions any number of named clusters for one trial; use as a context manager to always stop them."""

    def __init__(self, trial_id: str, trial_dir: Path):
        self.trial_id = re.sub(r"[^A-Za-z0-9_.-]", "_", trial_id) or "trial"
        self.trial_dir = Path(trial_dir)
        self._clusters: dict[str, _Cluster] = {}
        self._lock = threading.Lock()
        self._ca: Authority | None = None
        self._secret: str | None = None

    # -- public API -------------------------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()

    @property
    def clusters(self) -> dict[str, ClusterInfo]:
        return {name: c.info for name, c in self._clusters.items()}

    def start(self, spec: ClusterSpec, timeout: float = 120.0) -> ClusterInfo:
        """Install, configure and start spec.nodes nodes; returns once the cluster is yellow/green."""
        with self._lock:
            if spec.name in self._clusters:
                raise ConfigError(f"cluster name {spec.name!r} is used twice in this race; give each cluster its own name")
            self._clusters[spec.name] = _Cluster(info=ClusterInfo(name=spec.name, engine=spec.engine, version="",
                                                                  car=spec.car, nodes=[]))
        cluster = self._clusters[spec.name]
        try:
            return self._start(spec, cluster, timeout)
        except BaseException:
            try:
                self._stop_cluster(cluster, keep=False)
                self._remove_empty_folders()
            finally:
                with self._lock:
                    self._clusters.pop(spec.name, None)
            raise

    def stop_all(self, keep: bool = False) -> list[str]:
        """Stop every node (SIGTERM, then SIGKILL after 30 s), keep their logs in the trial dir, delete their
        data unless keep. keep=True leaves the nodes running on their own and returns how to reach/stop them."""
        messages: list[str] = []
        for cluster in reversed(list(self._clusters.values())):
            messages += self._stop_cluster(cluster, keep)
        for m in messages:
            log.info("%s", m)
        self._remove_empty_folders()
        return messages

    def _remove_empty_folders(self) -> None:
        base = ROOT_NODES_BASE / self.trial_id if os.geteuid() == 0 else self.trial_dir / "nodes"
        for folder in [*(base / name for name in self._clusters), base]:
            try:
                folder.rmdir()  # only succeeds when empty, i.e. nothing was kept
            except OSError:
                pass

    def processes(self) -> dict[str, list[psutil.Process]]:
        """node name -> the node's live processes (launcher JVM and server JVM)."""
        out: dict[str, list[psutil.Process]] = {}
        for cluster in self._clusters.values():
            for node in cluster.nodes:
                out[node.info.name] = _node_processes(node)
        return out

    def kill_cluster(self, name: str) -> list[str]:
        """SIGKILL every node process of cluster ``name`` now (a crash, as a failover drill wants it) and mark
        its nodes down on purpose; ``stop_all`` still keeps their logs and deletes their folders. Returns the
        names of the nodes killed."""
        cluster = self._clusters.get(name)
        if cluster is None:
            raise ConfigError(f"no cluster {name!r} was started by this race (clusters: {', '.join(self._clusters)})")
        procs: list[psutil.Process] = []
        for node in cluster.nodes:
            node.down_on_purpose = True
            procs += _node_processes(node)
        for p in procs:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(procs, timeout=10)
        return [n.info.name for n in cluster.nodes]

    def down_on_purpose(self) -> set[str]:
        """Names of the nodes ``kill_cluster`` killed."""
        return {n.info.name for c in self._clusters.values() for n in c.nodes if n.down_on_purpose}

    def node_log_paths(self) -> dict[str, Path]:
        return {n.info.name: n.info.log_dir for c in self._clusters.values() for n in c.nodes}

    # -- start ------------------------------------------------------------------------------------------

    def _start(self, spec: ClusterSpec, cluster: _Cluster, timeout: float) -> ClusterInfo:
        layout = ENGINES[spec.engine]
        car = load_car(spec.car, spec.car_params)
        check_cpus(spec.cpus, f"cluster {spec.name}: cpus")
        if car.security and not car.security.tls and spec.engine == "opensearch":
            raise ConfigError(f"car {','.join(spec.car)}: OpenSearch's security plugin needs TLS on transport; "
                              f"leave security_tls at true for {spec.engine}")
        if car.trial_license and spec.engine != "elasticsearch":
            raise ConfigError(f"car {','.join(spec.car)}: trial-license is for elasticsearch only, not {spec.engine}")
        say(f"cluster {spec.name}: getting {spec.engine} {spec.version or ''}".rstrip())
        source, distribution = obtain(spec.engine, spec.version, spec.repository, car.repository,
                                      distribution_path=spec.distribution_path,
                                      checksum=spec.checksum or car.checksum or "auto")
        java = resolve_java(source, layout, spec.runtime_jdk, spec.java_home,
                            what=f"the {distribution.repository} build of {spec.engine} {spec.version}".strip())
        cluster.info.distribution, cluster.info.java, cluster.info.car_params = distribution, java, spec.car_params
        cluster.info.host, cluster.info.pinned = this_host(), spec.cpus is not None
        named = self._obtain_named_plugins(spec)
        if car.security and spec.engine == "opensearch" and not (source / "plugins" / SECURITY_PLUGIN).is_dir() \
                and SECURITY_PLUGIN not in {src.name for src, _ in named}:
            # Maven's integ-test build lacks it (the release bundle ships it)
            plugin = security_plugin_source(spec.name, None if spec.distribution_path else spec.version)
            say(f"cluster {spec.name}: getting plugin {plugin.name} {plugin.version} ({plugin.origin})")
            named.append((plugin, obtain_plugin(plugin)))
        pairs = portalloc.node_ports(spec.nodes, spec.http_port)  # fails before anything is started
        launched: dict[str, float] = {}
        try:
            user = node_user()
            if user:
                log.info("running as root: nodes of cluster %s run as unprivileged user %s (uid %d)",
                         spec.name, user.name, user.uid)
            auth: tuple[str, str] | None = None  # the cluster's user and password with security on
            if car.security:
                auth = (car.security.user, self._password())
            names = [f"{spec.name}-{i}" for i in range(spec.nodes)]
            for i, (http, transport) in enumerate(pairs):
                say(f"cluster {spec.name}: installing node {names[i]} ({i + 1} of {spec.nodes})")
                node = self._prepare_node(spec, layout, car, source, java, user, names, pairs, i)
                for plugin_source_, archive in named:
                    self._install_named_plugin(node, spec, layout, user, plugin_source_, archive)
                cluster.nodes.append(node)
                cluster.info.nodes.append(node.info)
                if car.security and auth:
                    self._secure_node(node, spec, layout, car, user, auth)
            for node in cluster.nodes:
                say(f"cluster {spec.name}: launching node {node.info.name}")
                launched[node.info.name] = time.monotonic()
                self._launch(node, layout, car, user, spec.cpus)
        finally:
            portalloc.release([p for pair in pairs for p in pair])
        cluster.info.username = auth[0] if auth else None
        cluster.info.password = SecretStr(auth[1]) if auth else None
        cluster.info.tls_ca = self._ca_file() if car.security and car.security.tls else None
        say(f"cluster {spec.name}: waiting for {spec.nodes} node(s) to form a healthy cluster")
        self._wait_healthy(cluster, spec.nodes, auth, timeout)
        healthy = time.monotonic()
        for node in cluster.nodes:
            node.info.startup_time_s = round(healthy - launched[node.info.name], 3)
        cluster.info.version = self._version(cluster, auth)
        if cluster.info.distribution is not None:  # a --distribution-path build's version is known only now
            cluster.info.distribution.version = cluster.info.version
        for node in cluster.nodes:
            node.info.pid = _server_pid(node)
            if spec.cpus is not None and node.info.pid is not None:
                applied = allowed_cpus(node.info.pid)
                node.info.cpus = sorted(applied) if applied is not None else None
        if car.trial_license:
            say(f"cluster {spec.name}: starting the trial license")
            self._start_trial(cluster, auth)
        log.info("cluster %s (%s %s) is up: %s", spec.name, spec.engine, cluster.info.version,
                 ", ".join(cluster.info.hosts))
        return cluster.info

    def _nodes_base(self) -> Path:
        if os.geteuid() == 0:
            base = ROOT_NODES_BASE / self.trial_id
            base.mkdir(parents=True, exist_ok=True)
            for p in (ROOT_NODES_BASE, base):
                os.chmod(p, 0o755)
            return base
        base = self.trial_dir / "nodes"
        base.mkdir(parents=True, exist_ok=True)
        return base

    def _prepare_node(self, spec: ClusterSpec, layout: EngineLayout, car: CarConfig, source: Path, java: JavaFacts,
                      user: NodeUser | None, names: list[str], pairs: list[tuple[int, int]], i: int) -> _Node:
        name = names[i]
        http, transport = pairs[i]
        base = self._nodes_base() / spec.name / name
        clear_node_folder(base)
        home, data, logs = base / "install", base / "data", base / "logs"
        shutil.copytree(source, home, symlinks=True)
        data.mkdir(parents=True)
        logs.mkdir(parents=True)
        settings: dict[str, Any] = {k: v for k, v in car.settings.items() if k not in _MANAGED}
        if spec.engine == "opensearch":
            # Elasticsearch-only keys (e.g. xpack.security.enabled in the defaults car) would stop OpenSearch.
            settings = {k: v for k, v in settings.items() if not k.startswith("xpack.")}
            if (home / "plugins" / SECURITY_PLUGIN).is_dir() and not car.security:
                # The bundle's security plugin refuses to start without certificates; the defaults mean security
                # off, as the defaults car says for Elasticsearch (OSB's 1.0 vanilla config does the same).
                settings = opensearch_security_off(settings)
        settings.update({"cluster.name": spec.name, "node.name": name, "network.host": portalloc.HOST,
                         "http.port": http, "transport.port": transport, "path.data": str(data),
                         "path.logs": str(logs)})
        if "path.repo" not in settings:
            # Rally's snapshot operations need an fs repository location the nodes allow. One folder for all the
            # cluster's nodes (an fs repository must be shared), inside the first node's, so it goes with it.
            repo = self._nodes_base() / spec.name / names[0] / "snapshot-repo"
            repo.mkdir(parents=True, exist_ok=True)
            settings["path.repo"] = str(repo)
        if spec.nodes == 1:
            settings["discovery.type"] = "single-node"
        else:
            settings["discovery.seed_hosts"] = [f"{portalloc.HOST}:{t}" for _, t in pairs]
            settings["cluster.initial_master_nodes"] = names
        conf = home / "config"
        (conf / layout.config_file).write_text(
            "# Written by bench from car " + ",".join(car.names) + "\n" + yaml.safe_dump(settings, sort_keys=False))
        (conf / "jvm.options.d").mkdir(exist_ok=True)
        options = car.heap_options() + car.jvm_options + node_jvm_options(spec.jvm_options, str(logs))
        (conf / "jvm.options.d" / "bench.race.options").write_text("\n".join(options) + "\n")
        node = _Node(info=NodeInfo(name=name, http_port=http, transport_port=transport, home=home, log_dir=logs,
                                   data_dir=data),
                     cluster=spec.name, base=base, console_log=logs / "console.log", pid_file=base / "node.pid",
                     java_home=home / "jdk" if java.source == "bundled" else Path(java.home),
                     bundled_jdk=java.source == "bundled")
        chown_tree(base, user)
        make_traversable(base)
        for plugin in spec.plugins:
            self._install_plugin(node, layout, user, Path(plugin).expanduser())
        return node

    # -- security (the security mixin) -------------------------------------------------------------------------

    def _authority(self) -> Authority:
        """The race's CA: one per provisioner, so every cluster of a topology trusts every other's nodes."""
        with self._lock:
            if self._ca is None:
                from bench.provision.certs import Authority, write_ca  # cryptography: only with security on

                self._ca = Authority(self.trial_id[:24])
                write_ca(self._ca_file(), self._ca)
            return self._ca

    def _password(self) -> str:
        """The race's generated password: one for all its clusters, as one set of client options reaches them all."""
        with self._lock:
            if self._secret is None:
                self._secret = secrets.token_urlsafe(24)
                register_secret(self._secret)
            return self._secret

    def _ca_file(self) -> Path:
        return self.trial_dir / "tls" / "ca.pem"  # the CA's certificate only (public): what clients trust

    def _secure_node(self, node: _Node, spec: ClusterSpec, layout: EngineLayout, car: CarConfig,
                     user: NodeUser | None, auth: tuple[str, str]) -> None:
        assert car.security is not None
        conf = node.info.home / "config"
        if car.security.tls:
            extra = tls_settings(spec.engine, self._authority().node([node.info.host]), conf)
        else:
            extra = {"xpack.security.http.ssl.enabled": False, "xpack.security.transport.ssl.enabled": False}
        if spec.engine == "opensearch":
            write_internal_users(conf, auth[0], auth[1], car.security.role)
        config = conf / layout.config_file
        text = config.read_text()
        settings = {**(yaml.safe_load(text) or {}), **extra}
        header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
        config.write_text(header + yaml.safe_dump(settings, sort_keys=False))
        chown_tree(conf, user)
        if spec.engine == "elasticsearch":
            self._add_user(node, layout, user, car.security.role, *auth)

    def _env(self, node: _Node, layout: EngineLayout, car: CarConfig | None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("ES_JAVA_OPTS", "OPENSEARCH_JAVA_OPTS", "JAVA_TOOL_OPTIONS")}
        env.update(car.env if car else {})
        if node.bundled_jdk:
            # Unset, as on a user's machine running the archive: the engine then picks its own jdk/ (and says
            # "using bundled JDK [true]"), and a JAVA_HOME in bench's environment cannot replace it.
            env.pop(layout.java_home_env, None)
            env.pop("JAVA_HOME", None)
        else:
            env[layout.java_home_env] = str(node.java_home)
        env[layout.path_conf_env] = str(node.info.home / "config")
        env["HOME"] = str(node.base)  # the node user has no home; tools want one
        return env

    def _run_tool(self, node: _Node, layout: EngineLayout, user: NodeUser | None, argv: list[str],
                  what: str, stdin_text: str | None = None,
                  failure: Callable[[int, str], str] | None = None) -> None:
        io: dict[str, Any] = {"input": stdin_text} if stdin_text is not None else {"stdin": subprocess.DEVNULL}
        try:
            res = subprocess.run(argv, cwd=node.info.home, env=self._env(node, layout, None),
                                 capture_output=True, text=True, timeout=120, check=False, **io,
                                 **popen_user_kwargs(user))
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ProvisionError(f"{what} for node {node.info.name} failed: {redact_text(str(e))}") from None
        if res.returncode != 0 and failure is not None:  # the caller says what the tool's answer means
            raise ProvisionError(redact_text(failure(res.returncode, res.stdout + "\n" + res.stderr)))
        if res.returncode != 0:
            out = redact_text((res.stdout + res.stderr).strip().replace("\n", " | "))[-400:]
            raise ProvisionError(f"{what} for node {node.info.name} failed (exit {res.returncode}): {out}")

    def _add_user(self, node: _Node, layout: EngineLayout, user: NodeUser | None, role: str,
                  username: str, password: str) -> None:
        assert layout.users_tool is not None  # start() refuses security on an engine without the tool
        tool = str(node.info.home / layout.users_tool)
        # The password goes in on stdin (the tool prompts twice), never on a command line other processes can
        # read; it is never logged either (errors are redacted).
        self._run_tool(node, layout, user, [tool, "useradd", username, "-r", role],
                       f"creating file-realm user {username!r}", stdin_text=f"{password}\n{password}\n")

    def _install_plugin(self, node: _Node, layout: EngineLayout, user: NodeUser | None,
                        plugin: Path, failure: Callable[[int, str], str] | None = None) -> None:
        if plugin.is_dir():
            target = node.info.home / "plugins" / plugin.name
            shutil.copytree(plugin, target)
            chown_tree(target, user)
        elif plugin.is_file() and plugin.suffix == ".zip":
            local = node.base / plugin.name  # a copy the node user can read
            shutil.copy2(plugin, local)
            chown_tree(local, user)
            self._run_tool(node, layout, user,
                           [str(node.info.home / layout.plugin_tool), "install", "--batch", local.as_uri()],
                           f"installing plugin {plugin}", failure=failure)
        else:
            raise ConfigError(f"plugin {plugin} is neither a plugin folder nor a .zip file; fix --plugins")

    # -- plugins by name (--elasticsearch-plugins, --opensearch-plugins, a topology's plugin names) ---------

    def _obtain_named_plugins(self, spec: ClusterSpec) -> list[tuple[PluginSource, Path]]:
        """Each named plugin's verified zip from the download cache, once per cluster (before any node)."""
        out: list[tuple[PluginSource, Path]] = []
        for ref in spec.plugin_names:
            if ref.version is None and spec.distribution_path is not None:
                raise ConfigError(f"cluster {spec.name}: plugin {ref.name} needs its version ({ref.name}:VERSION) "
                                  f"with a local distribution: bench knows that build's version only once it runs")
            src = plugin_source(spec.engine, ref, spec.version)
            say(f"cluster {spec.name}: getting plugin {src.name} {src.version}")
            out.append((src, obtain_plugin(src)))
        return out

    def _install_named_plugin(self, node: _Node, spec: ClusterSpec, layout: EngineLayout,
                              user: NodeUser | None, source: PluginSource, archive: Path) -> None:
        # The engine's own tool installs the local file, so it checks the plugin against this very build.
        def failure(code: int, output: str) -> str:
            return install_failure(source, spec.engine, spec.version, node.info.name, code, output)

        self._install_plugin(node, layout, user, archive, failure)

    def _launch(self, node: _Node, layout: EngineLayout, car: CarConfig, user: NodeUser | None,
                cpus: frozenset[int] | None = None) -> None:
        spec = {"argv": [str(node.info.home / layout.binary), "-p", str(node.pid_file)],
                "cpus": sorted(cpus) if cpus is not None else None,  # the guard pins itself, then launches
                "cwd": str(node.info.home), "env": self._env(node, layout, car),
                "console_log": str(node.console_log), "grace": STOP_GRACE,
                "user": {"uid": user.uid, "gid": user.gid} if user else None,
                # If bench dies, the guard itself keeps the logs with the trial and deletes the node's files.
                "orphan": {"copy": self._log_copies(node), "remove": str(node.base)}}
        with open(node.base / "guard.log", "ab") as guard_log:
            # start_new_session: a terminal Ctrl-C reaches bench only, which then stops nodes in order.
            guard = subprocess.Popen([sys.executable, "-m", "bench.provision.guard"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=guard_log, start_new_session=True, text=True,
                                     cwd=str(node.base))
        node.guard = guard
        node.info.guard_pid = guard.pid
        assert guard.stdin and guard.stdout
        guard.stdin.write(json.dumps(spec) + "\n")
        guard.stdin.flush()
        line = guard.stdout.readline()
        try:
            node.info.launcher_pid = int(json.loads(line)["launcher_pid"])
        except (ValueError, KeyError, TypeError):
            raise ProvisionError(f"node {node.info.name} of cluster {node.cluster} could not be launched; "
                                 f"see {node.base / 'guard.log'}") from None
        log.info("started node %s (pid %d) http://%s:%d", node.info.name, node.info.launcher_pid,
                 node.info.host, node.info.http_port)

    # -- health -----------------------------------------------------------------------------------------

    def _wait_healthy(self, cluster: _Cluster, expected_nodes: int, auth: tuple[str, str] | None,
                      timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while True:
            for node in cluster.nodes:
                if node.guard is not None and node.guard.poll() is not None or not _launcher_alive(node):
                    raise self._node_failure(node, "exited during startup")
            for node in cluster.nodes:
                try:
                    status, body = _http("GET", node.info, "/_cluster/health", auth, timeout=5, ca=cluster.info.tls_ca)
                except OSError as e:
                    last = f"{node.info.name}: {e}"
                    continue
                if status == 401:
                    raise ProvisionError(f"cluster {cluster.info.name} rejects bench's credentials (HTTP 401); "
                                         f"see {node.console_log}")
                if status == 200 and body.get("status") in ("yellow", "green") \
                        and body.get("number_of_nodes", 0) >= expected_nodes:
                    return
                last = f"{node.info.name}: HTTP {status} {json.dumps(body)[:200]}"
                break
            if time.monotonic() > deadline:
                raise self._node_failure(cluster.nodes[0], f"did not become healthy within {timeout:.0f} s "
                                                           f"(last answer: {last})")
            waited = timeout - (deadline - time.monotonic())
            say(f"cluster {cluster.info.name}: waiting for {expected_nodes} node(s) to form a healthy cluster "
                f"({waited:.0f} s)")
            time.sleep(0.5)

    def _node_failure(self, node: _Node, what: str) -> ProvisionError:
        tail = _tail(node.console_log, _TAIL_LINES)
        m = re.search(r"(?:Failed to bind to|BindException).*?(\d+\.\d+\.\d+\.\d+):(\d+)", tail) \
            if "Address already in use" in tail else None
        if "Address already in use" in tail:
            port = m.group(2) if m else f"{node.info.http_port} or {node.info.transport_port}"
            what = f"could not bind port {port} on {node.info.host} (Address already in use)"
        head = f"node {node.info.name} of cluster {node.cluster} {what}; see {node.console_log}"
        return ProvisionError(head + ("\n" + tail if tail else ""))

    def _version(self, cluster: _Cluster, auth: tuple[str, str] | None) -> str:
        # Not GET /: the integ-test zip lacks the module serving it (405).
        status, body = _http("GET", cluster.nodes[0].info, "/_nodes/_all/version", auth, timeout=30,
                             ca=cluster.info.tls_ca)
        versions = sorted({n.get("version", "") for n in (body.get("nodes") or {}).values()} - {""})
        if status != 200 or not versions:
            raise ProvisionError(f"cluster {cluster.info.name}: GET _nodes gave HTTP {status} without versions")
        return versions[0] if len(versions) == 1 else ",".join(versions)

    def _start_trial(self, cluster: _Cluster, auth: tuple[str, str] | None) -> None:
        status, body = _http("POST", cluster.nodes[0].info, "/_license/start_trial?acknowledge=true", auth, timeout=30,
                             ca=cluster.info.tls_ca)
        already = "already activated" in json.dumps(body)
        if status != 200 or not (body.get("trial_was_started") or already):
            raise ProvisionError(f"cluster {cluster.info.name}: starting the trial license failed: HTTP {status} "
                                 f"{json.dumps(body)[:300]}")
        log.info("cluster %s: trial license started", cluster.info.name)

    # -- stop -------------------------------------------------------------------------------------------

    def _stop_cluster(self, cluster: _Cluster, keep: bool) -> list[str]:
        messages: list[str] = []
        sign_in = ""  # how to sign in to a kept cluster with security on: where its password is, never itself
        for node in reversed(cluster.nodes):
            if node.stopped:
                continue
            if keep and node.guard is not None and node.guard.poll() is None:
                _send(node.guard, "detach")
                messages += self._copy_logs(node)
                node.stopped = True
                url = f"{cluster.info.scheme}://{node.info.host}:{node.info.http_port}"
                # What 'bench stop' needs to find and stop the node later, and what to keep of it.
                procs = [process_record(p) for p in [psutil.Process(node.guard.pid), *_node_processes(node)]]
                how = f"bench stop {self.trial_id}"
                try:
                    record_kept(self.trial_dir, KeptNode(
                        cluster=cluster.info.name, node=node.info.name, url=url, guard=procs[0],
                        processes=[r for r in procs[1:] if r is not None], folder=str(node.base),
                        copies=self._log_copies(node), grace=STOP_GRACE))
                except OSError as e:
                    how = f"kill -TERM {node.guard.pid} and delete {node.base} ({e.strerror}: bench stop cannot)"
                if cluster.info.password is not None and not sign_in:
                    sign_in = self._credentials_file(cluster, node, url)
                messages.append(f"kept node {node.info.name} of cluster {cluster.info.name} running at "
                                f"{url} (files in {node.base}){sign_in}; stop it with: {how}")
                continue
            self._stop_node(node)
            messages += self._copy_logs(node)
            if not keep:
                shutil.rmtree(node.base, ignore_errors=True)
            node.stopped = True
        return messages

    @staticmethod
    def _credentials_file(cluster: _Cluster, node: _Node, url: str) -> str:
        """Write the kept cluster's generated credentials (``user:password``, for ``curl -u "$(cat FILE)"``) to a
        file only this user may read, in a node folder 'bench stop' deletes; the part of the keep line naming it."""
        assert cluster.info.password is not None
        path = node.base / "credentials"
        try:
            path.unlink(missing_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(f"{cluster.info.username}:{cluster.info.password.get_secret_value()}\n")
        except OSError as e:
            return f", security on: its generated password could not be written to {path} ({e.strerror})"
        cacert = f"--cacert {cluster.info.tls_ca} " if cluster.info.tls_ca is not None else ""
        return (f", security on: sign in as {cluster.info.username} with the password in {path} (readable by you "
                f"only; curl {cacert}-u \"$(cat {path})\" {url})")

    def _stop_node(self, node: _Node) -> None:
        procs = _node_processes(node)
        guard = node.guard
        if guard is not None and guard.poll() is None:
            guard.send_signal(signal.SIGTERM)
            try:
                guard.wait(timeout=STOP_GRACE + 20)
            except subprocess.TimeoutExpired:
                log.warning("node %s: guard did not stop in time; killing it and the node", node.info.name)
                guard.kill()
                guard.wait(timeout=10)
        # Whatever survived (e.g. the guard was killed) is killed now: no orphan JVMs.
        kill_survivors(procs, 5)
        for stream in (guard.stdin, guard.stdout) if guard else ():
            if stream is None:
                continue
            try:
                stream.close()
            except OSError:
                pass
        log.info("stopped node %s", node.info.name)

    def _log_copies(self, node: _Node) -> list[tuple[str, str]]:
        """What of a node is kept with the trial, and where: by bench on stop, by the guard if bench died."""
        target = self.trial_dir / "logs" / node.cluster / node.info.name
        return [(str(node.info.log_dir), str(target)), (str(node.base / "guard.log"), str(target / "guard.log"))]

    def _copy_logs(self, node: _Node) -> list[str]:
        return keep_logs(node.info.name, self._log_copies(node))


# -- helpers ----------------------------------------------------------------------------------------------


def _send(guard: subprocess.Popen, line: str) -> None:
    try:
        assert guard.stdin
        guard.stdin.write(line + "\n")
        guard.stdin.flush()
    except (OSError, ValueError):
        pass


def clear_node_folder(base: Path) -> None:
    """Remove what an earlier node left in ``base``, unless a node still runs from it (its ``node.pid`` names a live
    process whose command line holds the folder): two benches given the same trial id must not wipe each other's
    running node."""
    if not base.exists():
        return
    pid: int | None = None
    try:
        pid = int((base / "node.pid").read_text().strip())
        if str(base) not in " ".join(psutil.Process(pid).cmdline()):
            pid = None  # a reused pid: not this folder's node
    except (OSError, ValueError, psutil.Error):
        pid = None
    if pid is not None:
        raise ProvisionError(f"{base} belongs to a node that is still running (pid {pid}): another bench started "
                             "it under the same trial id; stop that node or give this run another id")
    shutil.rmtree(base)


def _launcher_alive(node: _Node) -> bool:
    if node.info.launcher_pid is None:
        return True
    try:
        return psutil.Process(node.info.launcher_pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _node_processes(node: _Node) -> list[psutil.Process]:
    if node.info.launcher_pid is None:
        return []
    try:
        launcher = psutil.Process(node.info.launcher_pid)
        if node.info.guard_pid and launcher.ppid() != node.info.guard_pid:
            return []  # pid reused by something else
        return [launcher, *launcher.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _server_pid(node: _Node) -> int | None:
    try:
        return int(node.pid_file.read_text().strip())
    except (OSError, ValueError):
        procs = _node_processes(node)
        return procs[-1].pid if procs else None


def _tail(path: Path, lines: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return redact_text("\n".join(text.splitlines()[-lines:]))


def _http(method: str, node: NodeInfo, path: str, auth: tuple[str, str] | None,
          timeout: float, ca: Path | None = None) -> tuple[int, dict[str, Any]]:
    scheme = "https" if ca is not None else "http"
    req = urllib.request.Request(f"{scheme}://{node.host}:{node.http_port}{path}", method=method)
    if auth:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        req.add_header("Authorization", f"Basic {token}")
    try:
        context = ssl.create_default_context(cafile=str(ca)) if ca is not None else None
        with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        body = {"raw": raw[:200].decode("utf-8", "replace")}
    return status, body if isinstance(body, dict) else {"value": body}
