"""Where a race's clusters come from.

A ``ClusterSource`` looks at the race's options and either declines (``None``) or resolves them into
``RaceClusters``: the clusters it will start (known before they start), how to start them and hand out their
targets, the health check and node processes of what it started, and how to stop that (``--keep-cluster``
keeps nodes running). A source may also take the whole race over (``take_over``: e.g. run it on another host)
and return its result.

The race asks the sources registered with ``register_source`` (by extensions, in registration order) first,
then the built-in ones: existing hosts (``--target-hosts``), then the local provisioner (one cluster from
``--distribution``/``--car``/``--nodes``), which takes any race no other source took.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from bench.http.client import DEFAULT_CLUSTER, ClientOptions, ClusterTarget, parse_target_hosts
from bench.provision.car import CarConfig, load_car
from bench.provision.cpus import usable_cpus
from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterInfo, ClusterSpec
from bench.provision.overrides import (
    check_plugin_engines,
    named_plugins,
    parse_distribution,
    parse_plugins,
    plugins_for,
)
from bench.provision.pinning import auto_plan, auto_slots, own_cpus
from bench.provision.repositories import resolve_repository
from bench.race.pipeline import HealthCheck, KillCluster, NodeProcesses, PlannedCluster, RaceResult
from bench.util.home import trials_dir

if TYPE_CHECKING:
    from rich.console import Console

    from bench.race.options import RaceOptions


# How long a node bench started may be stopped (SIGSTOP, a debugger) before the race fails, as for workers.
NODE_STOPPED_GRACE = 5.0


class RaceClusters(ABC):
    """One race's clusters, from resolving the options to stopping what was started."""

    planned: list[PlannedCluster]  # what start() will start (empty when it starts nothing)
    driver_cpus: frozenset[int] | None = None  # the CPUs the load driver's local workers are pinned to
    # cluster name -> the CPU set of its nodes, for each cluster bench starts here under a CPU plan
    cluster_cpus: Mapping[str, frozenset[int] | None] = MappingProxyType({})
    pinning_note: str | None = None  # what CPU pinning did, or why it did not pin, in one line (stored)
    _jvm_options: dict[str, list[str]] | None = None  # cluster -> JVM options the race adds (add_jvm_options)

    def add_jvm_options(self, cluster: str, options: list[str]) -> None:
        """JVM options the race adds for every node of a cluster this source starts (race hooks' ``jvm_options``)."""
        if options:
            if self._jvm_options is None:
                self._jvm_options = {}
            self._jvm_options.setdefault(cluster, []).extend(options)

    def bench_cpus(self) -> frozenset[int] | None:
        """Where bench's own process runs while the schedule does (``own_cpus``); None: anywhere."""
        return own_cpus(usable_cpus(), self.driver_cpus, list(self.cluster_cpus.values()))

    def jvm_options(self, cluster: str) -> list[str]:
        return list((self._jvm_options or {}).get(cluster, []))

    def take_over(self, opts: RaceOptions, console: Console) -> RaceResult | None:
        """Run the whole race instead of this process (None: the race runs here)."""
        return None

    @abstractmethod
    def start(self, trial_id: str, options: ClientOptions, console: Console) -> list[ClusterTarget]:
        """Start (or connect to) the clusters; the first target is the track's default unless one is named
        ``default``. What was started before a failure is still stopped by ``stop``."""

    @property
    def cars(self) -> dict[str, CarConfig]:
        return {c.name: c.car for c in self.planned}

    def health_check(self) -> HealthCheck | None:
        return None

    def facts(self) -> dict[str, dict[str, Any]]:
        """cluster name -> what the trial stores of a cluster bench started beyond what the cluster answers: the
        car it really ran, its distribution and JDK (nothing for clusters bench did not start)."""
        return {}

    def node_processes(self) -> NodeProcesses | None:
        return None

    def kill_cluster(self) -> KillCluster | None:
        """How to kill one cluster this source started, on purpose (None: it cannot)."""
        return None

    def stop(self, keep: bool) -> list[str]:
        """Stop what start() started (``keep``: leave the nodes running); returns lines for the user."""
        return []


class ClusterSource(Protocol):
    def __call__(self, opts: RaceOptions) -> RaceClusters | None:
        """The race's clusters when this source provides them, else None; bad inputs raise a BenchError."""


_lock = threading.Lock()
_SOURCES: list[ClusterSource] = []


def register_source(source: ClusterSource) -> None:
    """Ask ``source`` before the built-in sources (and after the sources registered before it); idempotent."""
    with _lock:
        if source not in _SOURCES:
            _SOURCES.append(source)


def unregister_source(source: ClusterSource) -> None:
    with _lock:
        if source in _SOURCES:
            _SOURCES.remove(source)


def resolve_clusters(opts: RaceOptions) -> RaceClusters:
    with _lock:
        sources = [*_SOURCES, existing_hosts, local_cluster]
    for source in sources:
        clusters = source(opts)
        if clusters is not None:
            return clusters
    raise AssertionError("local_cluster takes every race")  # pragma: no cover


# -- the built-in sources ------------------------------------------------------------------------------------


class ExistingHosts(RaceClusters):
    """``--target-hosts``: clusters someone else runs; nothing to start or stop."""

    def __init__(self, named: dict[str, list[str]]) -> None:
        self.planned = []
        self._named = named

    def start(self, trial_id: str, options: ClientOptions, console: Console) -> list[ClusterTarget]:
        return [ClusterTarget(name=n, hosts=h, options=options) for n, h in self._named.items()]


def existing_hosts(opts: RaceOptions) -> RaceClusters | None:
    return ExistingHosts(parse_target_hosts(opts.target_hosts)) if opts.target_hosts else None


def target_for(info: ClusterInfo, options: ClientOptions) -> ClusterTarget:
    """A started cluster as a target; its own user unless the client options name one."""
    opts = options
    if info.username and info.password is not None and opts.basic_auth_user is None and opts.api_key is None:
        opts = options.model_copy(update={"basic_auth_user": info.username, "basic_auth_password": info.password})
    if info.tls_ca is not None and opts.ca_certs is None:
        # bench made the nodes' certificates: trust its CA (the client options may name another)
        opts = opts.model_copy(update={"use_ssl": True, "ca_certs": info.tls_ca})
    return ClusterTarget(name=info.name, hosts=[h.split("://", 1)[1] for h in info.hosts], options=opts)


class Provisioned(RaceClusters):
    """Clusters the LocalProvisioner starts on this machine; subclasses say which (``provision``)."""

    provisioner: LocalProvisioner | None = None

    @abstractmethod
    def provision(self, provisioner: LocalProvisioner, console: Console) -> list[ClusterInfo]:
        """Start the clusters (in the order of their targets)."""

    def start(self, trial_id: str, options: ClientOptions, console: Console) -> list[ClusterTarget]:
        self.provisioner = LocalProvisioner(trial_id, trials_dir() / trial_id)
        return [target_for(i, options) for i in self.provision(self.provisioner, console)]

    def stop(self, keep: bool) -> list[str]:
        return (self.provisioner.stop_all(keep=keep) or []) if self.provisioner is not None else []

    def facts(self) -> dict[str, dict[str, Any]]:
        clusters = self.provisioner.clusters if self.provisioner is not None else {}
        return {name: info.facts() for name, info in clusters.items()}

    def health_check(self) -> HealthCheck | None:
        provisioner = self.provisioner
        if provisioner is None:
            return None

        stopped_since: dict[str, float] = {}

        def check() -> str | None:
            now = time.monotonic()
            planned = provisioner.down_on_purpose()
            for node, procs in provisioner.processes().items():
                if node in planned:
                    continue  # killed on purpose (a failover drill): not a failure
                # Point at the trial's copy of the logs: the node's own folder is deleted when it is stopped.
                cluster = next((c for c, info in provisioner.clusters.items()
                                if any(n.name == node for n in info.nodes)), "")
                logs = provisioner.trial_dir / "logs" / cluster / node
                if not any(_running(p) for p in procs):
                    return f"node {node} died during the race (logs: {logs})"
                if not any(_stopped(p) for p in procs):
                    stopped_since.pop(node, None)
                    continue
                # A stopped node answers nothing, yet its process is alive: every request would wait its
                # timeout and count as failed, as if the cluster were slow. A short stop may be a debugger.
                since = stopped_since.setdefault(node, now)
                if now - since > NODE_STOPPED_GRACE:
                    return (f"node {node} was stopped (SIGSTOP?) for more than {NODE_STOPPED_GRACE:.0f} s during "
                            f"the race and answered nothing meanwhile; resume it with SIGCONT within "
                            f"{NODE_STOPPED_GRACE:.0f} s or do not stop it (logs: {logs})")
            return None

        return check

    def node_processes(self) -> NodeProcesses | None:
        provisioner = self.provisioner
        if provisioner is None:
            return None

        def processes() -> dict[tuple[str, str], list[Any]]:
            by_node = provisioner.processes()
            return {(c, n.name): by_node.get(n.name, []) for c, info in provisioner.clusters.items()
                    for n in info.nodes}

        return processes

    def kill_cluster(self) -> KillCluster | None:
        provisioner = self.provisioner
        return provisioner.kill_cluster if provisioner is not None else None


def _stopped(p: Any) -> bool:
    try:
        return p.status() in ("stopped", "tracing-stop")
    except Exception:  # noqa: BLE001 - psutil raises NoSuchProcess and friends
        return False


def _running(p: Any) -> bool:
    try:
        return bool(p.is_running()) and p.status() != "zombie"
    except Exception:  # noqa: BLE001 - psutil raises NoSuchProcess and friends
        return False


class LocalCluster(Provisioned):
    """One cluster of ``--nodes`` nodes from ``--distribution``/``--car``/``--plugin`` on 127.0.0.1."""

    def __init__(self, opts: RaceOptions) -> None:
        car = load_car(opts.car, opts.car_params)  # bad car names or params fail before anything starts
        self._engine, self._version = parse_distribution(opts.distribution, opts.distribution_version)
        if not opts.distribution_path:  # an unknown repository name fails before a trial is created
            resolve_repository(self._engine, self._version, opts.distribution_repository, car.repository)
        self._opts = opts
        named = named_plugins(opts.elasticsearch_plugins, opts.opensearch_plugins)
        check_plugin_engines(named, {self._engine})
        self._plugin_names = named.get(self._engine, [])
        # The version of a --distribution-path build is only known once it runs.
        self.planned = [PlannedCluster(DEFAULT_CLUSTER, car, self._engine,
                                       None if opts.distribution_path else self._version)]
        slots = auto_slots(opts.pinning, 1) if opts.pinning else None
        self._cpus = auto_plan([DEFAULT_CLUSTER], usable_cpus(), slots) if slots else None
        self.driver_cpus = self._cpus.driver if self._cpus else None
        self.cluster_cpus = dict(self._cpus.clusters) if self._cpus else {}
        self.pinning_note = self._cpus.note if self._cpus else None

    def provision(self, provisioner: LocalProvisioner, console: Console) -> list[ClusterInfo]:
        o = self._opts
        spec = ClusterSpec(name=DEFAULT_CLUSTER, nodes=o.nodes, car=o.car, car_params=o.car_params,
                           engine=self._engine, plugins=plugins_for(parse_plugins(o.plugins), DEFAULT_CLUSTER),
                           plugin_names=self._plugin_names,
                           version=self._version, repository=o.distribution_repository,
                           distribution_path=o.distribution_path, http_port=o.http_port, runtime_jdk=o.runtime_jdk,
                           cpus=self._cpus.clusters[DEFAULT_CLUSTER] if self._cpus else None,
                           jvm_options=self.jvm_options(DEFAULT_CLUSTER))
        console.print(f"Starting a {o.nodes}-node {self._engine} {self._version} cluster "
                      f"(car {'+'.join(o.car)}) on 127.0.0.1 ...", highlight=False)
        if self.pinning_note:
            console.print(self.pinning_note, highlight=False, markup=False)
        return [provisioner.start(spec)]


def local_cluster(opts: RaceOptions) -> RaceClusters:
    return LocalCluster(opts)
