"""What ``bench cloud up`` would create, computed without touching any provider (``bench cloud plan``)."""

from __future__ import annotations

from pydantic import BaseModel
from tabulate import tabulate

from bench.cloud.topology import Topology

# Tag/label keys on every resource. GCP label keys allow only [a-z0-9_-], so one spelling serves both.
TAG_MANAGED = "bench-managed"
TAG_TRIAL = "bench-trial"
TAG_CREATED = "bench-created"  # epoch seconds (GCP label values cannot hold ':' of ISO timestamps)
TAG_TOPOLOGY = "bench-topology"
TAG_ROLE = "bench-role"
TAG_CLUSTER = "bench-cluster"

_DEFAULT_DISK = {"aws": "gp3", "gcp": "pd-ssd", "local": "-"}

# Several load-driver hosts form a Ray cluster (head on the first). Every port a Ray node listens on is pinned
# into this range, so one rule between the topology's machines covers Ray as it covers HTTP and transport.
RAY_GCS_PORT = 6379
RAY_PORTS = (6379, 6999)


class PlannedInstance(BaseModel):
    name: str  # unique per trial: bench-<trial8>-<cluster>-<i>
    role: str  # "node" or "driver"
    group: str  # cluster or driver-group name
    index: int
    instance_type: str
    disk_gb: int
    disk_type: str


class PlannedRule(BaseModel):
    name: str
    protocol: str
    ports: str  # "9200-9300" or "22"
    source: str  # "members" (the group itself) or a CIDR
    description: str


class Plan(BaseModel):
    topology: str
    provider: str
    location: str
    trial_id: str
    instances: list[PlannedInstance]
    rules: list[PlannedRule]
    hours: float
    member_ports: list[tuple[int, int]] = []  # TCP port ranges open between the topology's machines
    ray_head: str | None = None  # the driver host a Ray cluster of the drivers is headed by (several drivers)

    def drivers(self) -> list[PlannedInstance]:
        return [i for i in self.instances if i.role == "driver"]

    @property
    def instance_hours(self) -> float:
        return len(self.instances) * self.hours

    def by_type(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for i in self.instances:
            out[i.instance_type] = out.get(i.instance_type, 0) + 1
        return out


def resource_prefix(trial_id: str) -> str:
    return f"bench-{trial_id[:8]}"


def make_plan(topo: Topology, trial_id: str, hours: float = 1.0) -> Plan:
    prov = topo.provider
    prefix = resource_prefix(trial_id)
    instances: list[PlannedInstance] = []
    for c in topo.clusters:
        for i in range(c.nodes):
            instances.append(PlannedInstance(
                name=f"{prefix}-{c.name}-{i}", role="node", group=c.name, index=i,
                instance_type=c.instance_type.get(prov, "127.0.0.1" if prov == "local" else "?"),
                disk_gb=c.disk.size_gb, disk_type=c.disk.type or _DEFAULT_DISK[prov]))
    for d in topo.drivers:
        for i in range(d.count):
            instances.append(PlannedInstance(
                name=f"{prefix}-{d.name}-{i}", role="driver", group=d.name, index=i,
                instance_type=d.instance_type.get(prov, "127.0.0.1" if prov == "local" else "?"),
                disk_gb=d.disk.size_gb, disk_type=d.disk.type or _DEFAULT_DISK[prov]))
    ports = sorted({p for c in topo.clusters for p in (c.http_port, c.transport_port)})
    member_ports = [(ports[0], ports[-1] + 100)]
    drivers = [i for i in instances if i.role == "driver"]
    ray_head = drivers[0].name if len(drivers) > 1 else None
    if ray_head:
        member_ports.append(RAY_PORTS)
    what = "HTTP and transport" + (" (and the load drivers' Ray)" if ray_head else "")
    rules = [] if prov == "local" else [
        PlannedRule(name=f"{prefix}-cluster", protocol="tcp", ports=", ".join(f"{a}-{b}" for a, b in member_ports),
                    source="members", description=f"{what} only between the topology's nodes and load drivers"),
        PlannedRule(name=f"{prefix}-ssh", protocol="tcp", ports=str(topo.ssh.port), source=topo.ssh.allow_from,
                    description="SSH from the orchestrator's address only"),
    ]
    location = topo.zone or topo.region or "127.0.0.1"
    if prov == "local":
        instances, ray_head = [], None  # nothing is created: the clusters run as local processes
    return Plan(topology=topo.name, provider=prov, location=location, trial_id=trial_id, instances=instances,
                rules=rules, hours=hours, member_ports=member_ports, ray_head=ray_head)


def load_driver_line(plan: Plan) -> str:
    """How the race drives: from the one driver host's local worker processes, or from a Ray cluster of all."""
    drivers = plan.drivers()
    if not drivers:
        return "Load driver: none (a race needs one: drivers: [...])"
    if plan.ray_head is None:
        return f"Load driver: {drivers[0].name}, its local worker processes"
    others = ", ".join(d.name for d in drivers if d.name != plan.ray_head)
    return (f"Load drivers: a Ray cluster of {len(drivers)} hosts, head {plan.ray_head} (port {RAY_GCS_PORT}; Ray's "
            f"ports {RAY_PORTS[0]}-{RAY_PORTS[1]} between members), nodes {others}; the race runs on the head with "
            f"--load-driver=ray:<head>:{RAY_GCS_PORT}, one worker per CPU of each host")


def render_plan(plan: Plan, topo: Topology) -> str:
    lines = [f"Topology {plan.topology}: provider {plan.provider}, {plan.location}, trial {plan.trial_id}"]
    if plan.provider == "local":
        for c in topo.clusters:
            lines.append(f"  cluster {c.name}: {c.nodes} local node(s) on 127.0.0.1, {c.engine} {c.version}, "
                         f"car {'+'.join(c.car)}" + (f", remote clusters {c.remote_clusters}" if c.remote_clusters
                                                     else ""))
        lines.append("Nothing is created in any cloud.")
        return "\n".join(lines)
    rows = [(i.name, i.role, i.group, i.instance_type, f"{i.disk_gb} GB {i.disk_type}") for i in plan.instances]
    lines.append(tabulate(rows, headers=["Instance", "Role", "Cluster/group", "Type", "Disk"]))
    kind = "security group" if plan.provider == "aws" else "firewall rules"
    lines.append(f"Network ({kind}):")
    for r in plan.rules:
        lines.append(f"  {r.name}: {r.protocol} {r.ports} from {r.source} - {r.description}")
    lines.append(load_driver_line(plan))
    remote = [f"{c.name} -> {', '.join(c.remote_clusters)}" for c in topo.clusters if c.remote_clusters]
    if remote:
        lines.append("Remote clusters: " + "; ".join(remote) + " (each link measured before the race from the "
                     "connecting cluster's first node over SSH: TCP connects to the transport port, 32 MiB sent on "
                     "a port of transport_port+1..+100; node hosts need python3)")
    types = ", ".join(f"{n} x {t}" for t, n in plan.by_type().items())
    lines.append(f"{len(plan.instances)} instances ({types}); estimated {plan.instance_hours:g} instance-hours for "
                 f"{plan.hours:g} h")
    lines.append(f"Every resource is tagged {TAG_MANAGED}=true, {TAG_TRIAL}={plan.trial_id}, {TAG_CREATED}=<epoch>"
                 + "".join(f", {k}={v}" for k, v in topo.tags.items()))
    return "\n".join(lines)
