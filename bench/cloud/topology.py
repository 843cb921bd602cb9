"""The topology file: clusters, load-driver hosts, provider, network, SSH and tags, validated by pydantic.

One model for every provider: with ``provider: local`` the clusters run on 127.0.0.1 through the
LocalProvisioner; with ``aws``/``gcp`` each node and driver becomes an instance. Instance types are
given per provider (``instance_type: {aws: c5d.4xlarge, gcp: custom-16-32768}``) so one file can
describe the same study on both clouds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from bench.cloud.links import Link, check_links
from bench.provision.cpus import parse_cpu_list
from bench.provision.model import ClusterSpec, Engine
from bench.provision.overrides import check_plugin_engines, is_plugin_path, parse_distribution, plugins_for
from bench.provision.pinning import PINNING_PATTERN
from bench.provision.plugin_names import PluginRef, parse_plugin_names
from bench.util.bundled import resolve_example
from bench.util.errors import ConfigError
from bench.util.yaml_file import read_yaml

Provider = Literal["local", "aws", "gcp"]
SECURITY_MIXIN = "security"
_NAME = r"^[a-z][a-z0-9-]{0,30}$"  # valid in AWS Name tags, GCE instance names and ES cluster names


def _one_type(v: Any) -> Any:
    """``instance_type: c5d.4xlarge``, one type for every provider."""
    return {"aws": v, "gcp": v} if isinstance(v, str) else v


# provider -> instance type
InstanceTypes = Annotated[dict[str, str], BeforeValidator(_one_type)]


class Disk(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size_gb: int = Field(default=100, ge=10, le=65536)
    type: str | None = None  # gp3 / io2 on AWS, pd-ssd / pd-balanced on GCP; None = provider default


class ClusterTopology(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=_NAME)
    nodes: int = Field(default=1, ge=1, le=32)
    instance_type: InstanceTypes = Field(default_factory=dict)
    disk: Disk = Field(default_factory=Disk)
    car: list[str] = Field(default_factory=lambda: ["defaults"], min_length=1)
    car_params: dict[str, Any] = Field(default_factory=dict)
    engine: Engine = "elasticsearch"
    version: str = "8.19.21"
    repository: str | None = None  # a repository name (release, maven-integ-test, ...) or a URL template
    runtime_jdk: str | None = Field(default=None, pattern=r"^(bundled|[1-9][0-9]?)$")  # Rally's --runtime-jdk
    # A plugin zip or folder (a path: has a '/', ends in .zip, starts with '.' or '~'), or an official plugin by
    # name (name or name:version), downloaded like --elasticsearch-plugins/--opensearch-plugins
    plugins: list[str] = Field(default_factory=list)
    roles: list[str] | None = None  # node.roles; None = engine default (every role)
    # Names of other clusters of this topology this one connects to as remote clusters
    # (cluster.remote.<name>.seeds = their transport addresses), e.g. a CCR follower -> [leader].
    remote_clusters: list[str] = Field(default_factory=list)
    http_port: int = Field(default=9200, ge=1, le=65535)
    transport_port: int = Field(default=9300, ge=1, le=65535)
    # provider local: pin every node of this cluster to these CPUs (a list like 0-1,4); None: not pinned
    cpus: str | None = None

    @field_validator("car", mode="before")
    @classmethod
    def _car_list(cls, v: Any) -> Any:
        return [c.strip() for c in v.split(",") if c.strip()] if isinstance(v, str) else v

    @field_validator("plugins")
    @classmethod
    def _plugin_names(cls, v: list[str]) -> list[str]:
        try:
            parse_plugin_names([p for p in v if not is_plugin_path(p)], "plugins")
        except ConfigError as e:  # pydantic reports ValueErrors with the field's place in the file
            raise ValueError(str(e).removeprefix("plugins: ")) from None
        return v

    def plugin_names(self) -> list[PluginRef]:
        return parse_plugin_names([p for p in self.plugins if not is_plugin_path(p)], f"clusters[{self.name}].plugins")

    @field_validator("cpus", mode="before")
    @classmethod
    def _cpu_list(cls, v: Any) -> Any:
        return _checked_cpu_list(v)

    def cpu_set(self) -> frozenset[int] | None:
        return parse_cpu_list(self.cpus) if self.cpus is not None else None


def _checked_cpu_list(v: Any) -> Any:
    """``0-1,4`` (an int is one CPU); a ValueError that pydantic reports with the field's place."""
    if v is None:
        return None
    text = str(v)
    parse_cpu_list(text)
    return text


class DriverTopology(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="driver", pattern=_NAME)
    count: int = Field(default=1, ge=1, le=16)
    instance_type: InstanceTypes = Field(default_factory=dict)
    disk: Disk = Field(default_factory=Disk)


class Network(BaseModel):
    model_config = ConfigDict(extra="forbid")
    vpc: str | None = None  # AWS VPC id (default VPC when omitted)
    subnet: str | None = None  # AWS subnet id / GCP subnetwork name
    name: str = "default"  # GCP network name
    # The subnet's address range, from which nodes get fixed private addresses (so every startup script
    # can name its cluster's seeds). AWS reads it from the subnet; GCP needs it here.
    cidr: str | None = None


class Ssh(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: str = "bench"
    key_name: str | None = None  # AWS key pair name
    public_key: str | None = None  # path of the public key (GCP ssh-keys metadata)
    private_key: str = "~/.ssh/id_ed25519"
    # Where SSH (and nothing else) may come from; "auto" = this machine's public address /32 at up time.
    allow_from: str = "auto"
    port: int = Field(default=22, ge=1, le=65535)


class Topology(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=_NAME)
    provider: Provider = "local"
    region: str | None = None
    zone: str | None = None
    project: str | None = None  # GCP project
    image: str | None = None  # AMI id / GCE image ("projects/debian-cloud/global/images/family/debian-12")
    network: Network = Field(default_factory=Network)
    ssh: Ssh = Field(default_factory=Ssh)
    tags: dict[str, str] = Field(default_factory=dict)
    clusters: list[ClusterTopology] = Field(min_length=1)
    drivers: list[DriverTopology] = Field(default_factory=list)
    # provider local: auto[:N] gives each cluster and the load driver a disjoint CPU set when the machine has
    # enough CPUs (bench/provision/pinning.py); off pins only what cpus/driver_cpus name.
    pinning: str = Field(default="off", pattern=PINNING_PATTERN)
    driver_cpus: str | None = None  # provider local: pin the load driver's workers to these CPUs
    # Security on every cluster (TLS on transport and HTTP, a user with a generated password): the same as the
    # security car mixin on each cluster's car
    security: bool = False
    # Links between clusters (bench/cloud/links.py): emulated with provider local, measured on a cloud
    links: list[Link] = Field(default_factory=list)

    @field_validator("driver_cpus", mode="before")
    @classmethod
    def _driver_cpu_list(cls, v: Any) -> Any:
        return _checked_cpu_list(v)

    def driver_cpu_set(self) -> frozenset[int] | None:
        return parse_cpu_list(self.driver_cpus) if self.driver_cpus is not None else None

    @model_validator(mode="after")
    def _security_everywhere(self) -> Topology:
        if self.security:
            for c in self.clusters:
                if SECURITY_MIXIN not in c.car:
                    c.car = [*c.car, SECURITY_MIXIN]
        return self

    @model_validator(mode="after")
    def _consistent(self) -> Topology:
        names = [c.name for c in self.clusters] + [d.name for d in self.drivers]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"names must be unique across clusters and drivers: {sorted(dup)}")
        clusters = {c.name for c in self.clusters}
        for c in self.clusters:
            unknown = [r for r in c.remote_clusters if r not in clusters or r == c.name]
            if unknown:
                raise ValueError(f"clusters[{c.name}].remote_clusters: {unknown} are not other clusters of this topology")
        check_links(self.links, {c.name: c.remote_clusters for c in self.clusters}, self.provider)
        explicit = [f"clusters[{c.name}].cpus" for c in self.clusters if c.cpus is not None]
        explicit += ["driver_cpus"] if self.driver_cpus is not None else []
        if self.provider != "local" and (explicit or self.pinning != "off"):
            raise ValueError(f"{(explicit or ['pinning'])[0]}: CPU pinning is for provider local; in {self.provider} "
                             f"each cluster and driver has machines of its own (instance_type)")
        if self.pinning != "off" and explicit:
            raise ValueError(f"{explicit[0]}: pinning: {self.pinning} chooses every CPU set itself; give either "
                             f"pinning: auto or explicit sets")
        if self.provider != "local":
            refuse_cloud_plugins(self, ValueError)
            members: list[ClusterTopology | DriverTopology] = [*self.clusters, *self.drivers]
            for what in members:
                if self.provider not in what.instance_type:
                    kind = "clusters" if isinstance(what, ClusterTopology) else "drivers"
                    raise ValueError(f"{kind}[{what.name}].instance_type has no entry for provider {self.provider}")
            if self.provider == "aws" and not self.region:
                raise ValueError("provider aws needs region")
            if self.provider == "gcp" and not (self.zone and self.project and self.network.cidr):
                raise ValueError("provider gcp needs zone, project and network.cidr")
        return self

    def link(self, source: str, target: str) -> Link | None:
        return next((k for k in self.links if k.source == source and k.target == target), None)

    def instance_count(self) -> int:
        """Machines this topology creates (0 for provider local)."""
        if self.provider == "local":
            return 0
        return sum(c.nodes for c in self.clusters) + sum(d.count for d in self.drivers)

    def cluster_specs(self, cpus: dict[str, frozenset[int] | None] | None = None,
                      **overrides: Any) -> list[ClusterSpec]:
        """The clusters as LocalProvisioner specs (provider local; also what the cloud nodes run); ``cpus``: each
        cluster's CPU set (bench/provision/pinning.py), else none is pinned."""
        return [ClusterSpec(name=c.name, nodes=c.nodes, car=c.car, car_params=c.car_params, engine=c.engine,
                            version=c.version, repository=c.repository, runtime_jdk=c.runtime_jdk,
                            plugins=[Path(p).expanduser() for p in c.plugins if is_plugin_path(p)],
                            plugin_names=c.plugin_names(), cpus=(cpus or {}).get(c.name), **overrides)
                for c in self.clusters]


def refuse_cloud_plugins(topo: Topology, error: type[Exception] = ConfigError) -> None:
    """Cloud nodes are installed by their startup script, which installs no plugin: say so rather than race
    without the plugins the file (or --plugin, --*-plugins) asks for."""
    for c in topo.clusters:
        if c.plugins and topo.provider != "local":
            raise error(f"clusters[{c.name}].plugins: nodes in {topo.provider} do not install plugins (their startup "
                        f"script does not); race the topology with provider local, or leave the plugins out")


def _loc(err: ErrorDetails, raw: Any) -> str:
    """clusters.1.nodes -> clusters[follower].nodes: name list items by their name where they have one."""
    parts: list[str] = []
    node = raw
    for p in err["loc"]:
        if isinstance(p, int) and isinstance(node, list):
            item = node[p] if p < len(node) else None
            label = item.get("name") if isinstance(item, dict) else None
            parts[-1:] = [f"{parts[-1] if parts else ''}[{label or p}]"]
            node = item
        else:
            parts.append(str(p))
            node = node.get(p) if isinstance(node, dict) else None
    return ".".join(parts)


def parse_topology(raw: Any, source: str = "<topology>") -> Topology:
    if not isinstance(raw, dict):
        raise ConfigError(f"topology {source}: expected a YAML mapping at the top level")
    try:
        return Topology.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        value = f" (value {err['input']!r})" if err["type"] not in ("missing", "value_error") and \
            not isinstance(err.get("input"), (dict, list)) else ""
        msg = err["msg"].removeprefix("Value error, ")
        where = _loc(err, raw)
        raise ConfigError(f"topology {source}: {where + ': ' if where else ''}{msg}{value}") from None


def load_topology(path: str | Path) -> Topology:
    """Read and validate a topology file (or a bundled example's name); every problem is one line naming the file
    and field."""
    p = resolve_example(path, "topologies", "topology file")
    raw = read_yaml(p, "topology")
    return parse_topology(raw, str(p))


def with_overrides(topo: Topology, distribution: str | None, plugins: dict[str | None, list[Path]],
                   named: dict[str, list[PluginRef]] | None = None) -> Topology:
    """The topology with the command line's engine/version (when given) and extra plugins on its clusters:
    ``plugins`` by cluster (None: every cluster), ``named`` plugins by engine (every cluster of that engine; a
    version given there replaces the topology's entry for the same plugin)."""
    unknown = sorted(c for c in plugins if c is not None and c not in {x.name for x in topo.clusters})
    if unknown:
        raise ConfigError(f"--plugin names cluster(s) {', '.join(unknown)} that topology {topo.name} does not have "
                          f"(it has {', '.join(c.name for c in topo.clusters)})")
    named = named or {}
    if not distribution and not plugins and not named:
        return topo
    clusters = []
    for c in topo.clusters:
        update: dict[str, object] = {}
        if distribution:
            update["engine"], update["version"] = parse_distribution(distribution, c.version)
        entries = list(c.plugins)
        flagged = named.get(str(update.get("engine", c.engine)), [])
        if flagged:
            replaced = {r.name for r in flagged}
            entries = [p for p in entries if is_plugin_path(p) or p.partition(":")[0] not in replaced]
            entries += [r.label() for r in flagged]
        entries += [str(p) for p in plugins_for(plugins, c.name)]
        if entries != c.plugins:
            update["plugins"] = entries
        clusters.append(c.model_copy(update=update))
    check_plugin_engines(named, {str(c.engine) for c in clusters})
    return topo.model_copy(update={"clusters": clusters})
