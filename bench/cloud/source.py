"""``--topology=FILE`` as a cluster source: provider local starts the topology's clusters on this machine;
a cloud provider takes the race over (machines up, the race on the driver host, the trial copied back,
machines down)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.cloud.local import start_topology
from bench.cloud.topology import Topology, load_topology, refuse_cloud_plugins, with_overrides
from bench.provision.car import load_car
from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterInfo
from bench.provision.overrides import named_plugins, parse_plugins
from bench.race.cluster_source import Provisioned, RaceClusters
from bench.race.pipeline import PlannedCluster, RaceResult

if TYPE_CHECKING:
    from rich.console import Console

    from bench.http.client import ClientOptions, ClusterTarget
    from bench.race.options import RaceOptions


class LocalTopology(Provisioned):
    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.planned = [PlannedCluster(c.name, load_car(c.car, c.car_params), c.engine, c.version)
                        for c in topology.clusters]

    def provision(self, provisioner: LocalProvisioner, console: Console) -> list[ClusterInfo]:
        return start_topology(provisioner, self.topology, console)


class CloudTopology(RaceClusters):
    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.planned = []  # started on the cloud's machines by the driver host's own race

    def take_over(self, opts: RaceOptions, console: Console) -> RaceResult | None:
        from bench.cloud.race import run_cloud_race  # the cloud providers' clients load only for a cloud race

        return run_cloud_race(opts, self.topology, console)

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
    return LocalTopology(topology) if topology.provider == "local" else CloudTopology(topology)
