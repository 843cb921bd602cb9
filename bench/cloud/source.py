"""``--topology=FILE`` as a cluster source: provider local starts the topology's clusters on this machine;
a cloud provider takes the race over (machines up, the race on the driver host, the trial copied back,
machines down)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.cloud.local import start_topology
from bench.cloud.local_links import LocalLinks
from bench.cloud.topology import Topology, load_topology, refuse_cloud_plugins, with_overrides
from bench.provision.car import load_car
from bench.provision.cpus import check_cpus, usable_cpus
from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterInfo
from bench.provision.overrides import named_plugins, parse_plugins
from bench.provision.pinning import CpuPlan, auto_plan, auto_slots, explicit_plan
from bench.race.cluster_source import Provisioned, RaceClusters
from bench.race.pipeline import HealthCheck, PlannedCluster, RaceResult
from bench.util.errors import ConfigError
from bench.util.extras import require

if TYPE_CHECKING:
    from rich.console import Console

    from bench.http.client import ClientOptions, ClusterTarget
    from bench.race.options import RaceOptions


def cpu_plan(topology: Topology, pinning: str | None) -> CpuPlan:
    """The topology's CPU sets: ``pinning`` (--pinning) when given, else the file's own ``pinning`` or sets."""
    names = [c.name for c in topology.clusters]
    explicit = {c.name: c.cpu_set() for c in topology.clusters}
    if pinning and (topology.driver_cpus is not None or any(s is not None for s in explicit.values())):
        raise ConfigError(f"--pinning={pinning}: topology {topology.name} names its CPU sets itself (cpus, "
                          f"driver_cpus): drop one of them")
    slots = auto_slots(pinning or topology.pinning, len(names))
    if slots is not None:
        return auto_plan(names, usable_cpus(), slots)
    return explicit_plan(explicit, topology.driver_cpu_set())


class LocalTopology(Provisioned):
    def __init__(self, topology: Topology, pinning: str | None = None) -> None:
        self.topology = topology
        self.planned = [PlannedCluster(c.name, load_car(c.car, c.car_params), c.engine, c.version)
                        for c in topology.clusters]
        self.cpus = cpu_plan(topology, pinning)
        for name, cpus in self.cpus.clusters.items():  # a CPU this machine lacks fails before anything starts
            check_cpus(cpus, f"topology {topology.name}: clusters[{name}].cpus")
        check_cpus(self.cpus.driver, f"topology {topology.name}: driver_cpus")
        self.driver_cpus = self.cpus.driver
        self.cluster_cpus = dict(self.cpus.clusters)
        self.pinning_note = self.cpus.note
        self.links = LocalLinks(topology)

    def provision(self, provisioner: LocalProvisioner, console: Console) -> list[ClusterInfo]:
        if self.pinning_note:
            console.print(self.pinning_note, highlight=False, markup=False)
        for link in self.topology.links:
            console.print(f"Link {link.text()}: emulated by bench's proxy in front of {link.target}'s transport port",
                          highlight=False, markup=False)
        return start_topology(provisioner, self.topology, console, cpus=self.cpus.clusters,
                              jvm_options={c.name: self.jvm_options(c.name) for c in self.topology.clusters},
                              links=self.links)

    def facts(self) -> dict[str, dict[str, Any]]:
        out = super().facts()
        for name, extra in self.links.facts().items():
            out[name] = {**out.get(name, {}), **extra}
        return out

    def health_check(self) -> HealthCheck | None:
        nodes = super().health_check()

        def check() -> str | None:
            return self.links.died() or (nodes() if nodes is not None else None)

        return check

    def stop(self, keep: bool) -> list[str]:
        try:
            lines = super().stop(keep)
        finally:
            linked = self.links.stop(keep)
        return lines + linked


class CloudTopology(RaceClusters):
    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        # Booted on the cloud's machines by their startup scripts, the race's hooks' JVM options among their own.
        self.planned = [PlannedCluster(c.name, load_car(c.car, c.car_params), c.engine, c.version, remote=True)
                        for c in topology.clusters]

    def take_over(self, opts: RaceOptions, console: Console) -> RaceResult | None:
        for module in ("paramiko", "wheel.wheelfile"):  # the driver host over SSH, bench packed for it
            require(module, "cloud", f"--topology {self.topology.name} (machines on {self.topology.provider})")
        from bench.cloud.race import run_cloud_race  # the cloud providers' clients load only for a cloud race

        return run_cloud_race(opts, self.topology, console,
                              jvm_options={c.name: self.jvm_options(c.name) for c in self.topology.clusters})

    def start(self, trial_id: str, options: ClientOptions, console: Console) -> list[ClusterTarget]:
        raise AssertionError("a cloud topology takes the race over")  # pragma: no cover


def topology_source(opts: RaceOptions) -> RaceClusters | None:
    if not opts.topology:
        return None
    topology = load_topology(opts.topology)
    named = named_plugins(opts.elasticsearch_plugins, opts.opensearch_plugins)
    if opts.distribution or opts.plugins or named:
        topology = with_overrides(topology, opts.distribution, parse_plugins(opts.plugins), named)
        refuse_cloud_plugins(topology)
    # The command line's repository and JDK apply to every cluster bench starts, as --distribution does.
    update = {k: v for k, v in (("repository", opts.distribution_repository), ("runtime_jdk", opts.runtime_jdk)) if v}
    if update:
        topology = topology.model_copy(update={"clusters": [c.model_copy(update=update) for c in topology.clusters]})
    if topology.provider != "local" and opts.pinning not in (None, "off"):
        raise ConfigError(f"--pinning={opts.pinning}: for clusters on this machine; in {topology.provider} each cluster "
                          f"and driver has machines of its own")
    return LocalTopology(topology, opts.pinning) if topology.provider == "local" else CloudTopology(topology)
