"""Pydantic models at the provisioner's boundary: what to start (ClusterSpec) and what runs (ClusterInfo)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from bench.provision.cpus import cpu_list_text
from bench.provision.plugin_names import PluginRef

Engine = Literal["elasticsearch", "opensearch"]
NODE_LOGS = "${BENCH_NODE_LOGS}"  # in ClusterSpec.jvm_options: the node's log folder (kept with the trial)


def node_jvm_options(options: list[str], logs: str) -> list[str]:
    """A race's extra JVM options for one node, its log folder in place of NODE_LOGS."""
    return [o.replace(NODE_LOGS, logs) for o in options]

Checksum = Literal["auto", "sha1", "sha512", "none"]
Algorithm = Literal["sha1", "sha512"]  # a checksum that is checked
JdkSource = Literal["bundled", "system"]


class EngineLayout(BaseModel):
    """What differs between Elasticsearch and OpenSearch installs."""

    model_config = ConfigDict(frozen=True)

    engine: Engine
    binary: str  # relative to the install dir
    config_file: str
    java_home_env: str
    path_conf_env: str
    users_tool: str | None  # file-realm user tool; None when the engine has none
    plugin_tool: str


ENGINES: dict[str, EngineLayout] = {
    "elasticsearch": EngineLayout(
        engine="elasticsearch",
        binary="bin/elasticsearch",
        config_file="elasticsearch.yml",
        java_home_env="ES_JAVA_HOME",
        path_conf_env="ES_PATH_CONF",
        users_tool="bin/elasticsearch-users",
        plugin_tool="bin/elasticsearch-plugin",
    ),
    "opensearch": EngineLayout(
        engine="opensearch",
        binary="bin/opensearch",
        config_file="opensearch.yml",
        java_home_env="OPENSEARCH_JAVA_HOME",
        path_conf_env="OPENSEARCH_PATH_CONF",
        users_tool=None,
        plugin_tool="bin/opensearch-plugin",
    ),
}


class ClusterSpec(BaseModel):
    """One cluster to provision locally. A race may provision several (e.g. leader + follower)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="default", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    nodes: int = Field(default=1, ge=1, le=32)
    car: list[str] = Field(default_factory=lambda: ["defaults"], min_length=1)
    car_params: dict[str, Any] = Field(default_factory=dict)
    engine: Engine = "elasticsearch"
    version: str = "8.19.21"
    repository: str | None = None  # URL template with {version}
    checksum: Checksum | None = None  # None: from the car config, else "auto"
    distribution_path: Path | None = None
    plugins: list[Path] = Field(default_factory=list)
    plugin_names: list[PluginRef] = Field(default_factory=list)  # official plugins, downloaded (plugin_download.py)
    http_port: int | None = Field(default=None, ge=1, le=65535)  # base port; None = free ports
    java_home: Path | None = None  # a JDK home to run with (tests); else runtime_jdk decides
    # Rally's --runtime-jdk: "bundled", a major version ("17": a system JDK found as Rally finds it), or None:
    # the distribution's bundled JDK when it has one, else the system's.
    runtime_jdk: str | None = Field(default=None, pattern=r"^(bundled|[1-9][0-9]?)$")
    # The CPUs every node of the cluster is pinned to (sched_setaffinity before launch); None: not pinned.
    cpus: frozenset[int] | None = None
    # JVM options a race adds after the car's (e.g. telemetry's flight recorder); NODE_LOGS in them stands for each
    # node's own log folder, whose files are kept with the trial.
    jvm_options: list[str] = Field(default_factory=list)

    @field_validator("car")
    @classmethod
    def _strip_car(cls, v: list[str]) -> list[str]:
        return [c.strip() for c in v if c.strip()]


class DistributionFacts(BaseModel):
    """What a cluster's nodes were installed from: stored with the trial, shown by ``bench show``, compared."""

    engine: str
    version: str
    repository: str  # release, maven-integ-test, a bench.ini name, url (a template given directly), local
    flavour: str  # official (the engine's release archive), minimal (Maven's integ-test build), custom
    url: str | None = None
    source: str | None = None  # --distribution-path
    archive: str | None = None
    checksum: str | None = None  # "<algo>:<hex>" as verified (published for downloads)
    modules: list[str] = Field(default_factory=list)
    plugins: list[str] = Field(default_factory=list)  # plugins the archive itself ships (OpenSearch's bundle)
    bundled_jdk: bool = False
    fallback: str | None = None  # why the default repository was not used (e.g. its host unreachable)


class JavaFacts(BaseModel):
    """The JDK the nodes ran on."""

    source: JdkSource
    home: str
    version: str | None = None  # e.g. 17.0.13, from the JDK's release file
    found_by: str = ""  # bundled, JAVA17_HOME, $ES_JAVA_HOME, PATH, ...

    @property
    def major(self) -> int | None:
        head = (self.version or "").split(".")[0]
        if head == "1":  # 1.8.0_x
            head = (self.version or "").split(".")[1]
        return int(head) if head.isdigit() else None


class NodeInfo(BaseModel):
    name: str
    host: str = "127.0.0.1"
    http_port: int
    transport_port: int
    pid: int | None = None  # the server JVM (what host telemetry should watch)
    launcher_pid: int | None = None  # bin/elasticsearch's launcher JVM, parent of the server JVM
    guard_pid: int | None = None  # bench's guard process that owns the launcher
    home: Path  # this node's own install copy
    log_dir: Path
    data_dir: Path | None = None
    cpus: list[int] | None = None  # what the kernel applies to the server JVM (Cpus_allowed_list), when pinned
    # Rally's node_startup_time: from the node's launch until its cluster answered healthy
    startup_time_s: float | None = None


class ClusterInfo(BaseModel):
    name: str
    engine: str
    version: str
    car: list[str]
    nodes: list[NodeInfo]
    username: str | None = None
    password: SecretStr | None = None
    # HTTPS with the race's CA (bench/provision/certs.py): the CA certificate clients verify the nodes with
    tls_ca: Path | None = None
    car_params: dict[str, Any] = Field(default_factory=dict)
    distribution: DistributionFacts | None = None
    java: JavaFacts | None = None
    host: dict[str, Any] | None = None  # the machine the nodes run on (bench.provision.host.this_host)
    pinned: bool = False  # the nodes were pinned to CPU sets (each node's set in NodeInfo.cpus)

    def facts(self) -> dict[str, Any]:
        """What the trial stores of this cluster beyond what the cluster itself answers (never credentials)."""
        out: dict[str, Any] = {"car": "+".join(self.car)}
        if self.car_params:
            out["car_params"] = self.car_params
        if self.host is not None:
            out["host"] = self.host
        if self.pinned:
            # Per node, as the kernel reports it for the running JVM: what was applied, not what was asked.
            out["cpus"] = {n.name: cpu_list_text(n.cpus) if n.cpus else None for n in self.nodes}
        if self.distribution is not None:
            out["distribution"] = self.distribution.model_dump(mode="json", exclude_none=True)
        if self.java is not None:
            out["java"] = {**self.java.model_dump(mode="json", exclude_none=True), "major": self.java.major}
        startup = {n.name: n.startup_time_s for n in self.nodes if n.startup_time_s is not None}
        if startup:
            out["node_startup_time_s"] = startup
        return out

    @property
    def hosts(self) -> list[str]:
        return [f"{self.scheme}://{n.host}:{n.http_port}" for n in self.nodes]

    @property
    def scheme(self) -> str:
        return "https" if self.tls_ca is not None else "http"

    @property
    def transport_addresses(self) -> list[str]:
        return [f"{n.host}:{n.transport_port}" for n in self.nodes]

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for elasticsearch-py's (Async)Elasticsearch reaching this cluster."""
        kw: dict[str, Any] = {"hosts": self.hosts}
        if self.username and self.password is not None:
            kw["basic_auth"] = (self.username, self.password.get_secret_value())
        if self.tls_ca is not None:
            kw["ca_certs"] = str(self.tls_ca)
        return kw
