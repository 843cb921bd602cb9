"""What every cloud provider offers bench: create a network rule set and instances, find everything bench
created (by its tags/labels), and delete it. Providers differ only in how machines come to exist."""

from __future__ import annotations

import hashlib
import ipaddress
import time
from typing import Protocol

from pydantic import BaseModel, Field

from bench.cloud.plan import PlannedInstance
from bench.cloud.topology import Topology


class Resource(BaseModel):
    """One thing bench created in a cloud (an instance, a security group, a firewall rule)."""

    provider: str
    kind: str  # "instance", "security-group", "firewall"
    id: str
    name: str = ""
    trial_id: str | None = None
    created: float | None = None  # epoch seconds, from the bench-created tag/label
    state: str = ""
    location: str = ""
    private_ip: str | None = None
    public_ip: str | None = None
    role: str | None = None
    cluster: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)

    def age_hours(self, now: float | None = None) -> float | None:
        return None if self.created is None else ((now or time.time()) - self.created) / 3600

    def describe(self) -> str:
        return f"{self.provider} {self.kind} {self.id}" + (f" ({self.name})" if self.name and self.name != self.id
                                                            else "") + (f" in {self.location}" if self.location else "")


class NetworkInfo(BaseModel):
    """Where instances go: the subnet's range (to give nodes known private addresses) and the ids to use."""

    cidr: str
    subnet: str | None = None
    vpc: str | None = None
    used_ips: set[str] = Field(default_factory=set)


class CloudProvider(Protocol):
    name: str

    def network(self, topo: Topology) -> NetworkInfo: ...

    def create_rules(self, topo: Topology, trial_id: str, net: NetworkInfo, ports: list[tuple[int, int]],
                     ssh_cidr: str, tags: dict[str, str]) -> list[Resource]: ...

    def create_instance(self, topo: Topology, planned: PlannedInstance, net: NetworkInfo, rules: list[Resource],
                        private_ip: str, user_data: str, tags: dict[str, str]) -> Resource: ...

    def wait_running(self, instances: list[Resource], timeout: float = 600) -> list[Resource]: ...

    def list_resources(self, trial_id: str | None = None) -> list[Resource]: ...

    def delete(self, resources: list[Resource], timeout: float = 600) -> None: ...


def allocate_ips(net: NetworkInfo, count: int, seed: str, reserved_head: int = 4) -> list[str]:
    """count free private addresses of the subnet, starting at an offset derived from seed (the trial id) so
    two trials in one subnet rarely probe the same addresses; skips the provider-reserved first addresses,
    the broadcast address and every address already in use."""
    network = ipaddress.ip_network(net.cidr, strict=False)
    hosts = list(network.hosts())[reserved_head - 1:-1]  # hosts() already skips the network address
    if len(hosts) - len(net.used_ips) < count:
        from bench.util.errors import ProvisionError

        raise ProvisionError(f"subnet {net.subnet or net.cidr} has fewer than {count} free addresses")
    start = int(hashlib.sha1(seed.encode()).hexdigest(), 16) % len(hosts)
    out: list[str] = []
    for i in range(len(hosts)):
        ip = str(hosts[(start + i) % len(hosts)])
        if ip not in net.used_ips:
            out.append(ip)
            if len(out) == count:
                break
    return out
