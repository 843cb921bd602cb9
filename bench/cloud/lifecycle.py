"""Bring a topology up in a cloud and always take it down again.

``up`` stands behind a ``--max-instances`` guard and a confirmation prompt, tags every resource with the
trial id and creation time, and tears down whatever it created if anything fails or the process is
interrupted (Ctrl-C, SIGTERM). ``teardown`` retries, checks by listing the trial's tags that nothing is
left, and otherwise fails loudly naming every resource left behind.
"""

from __future__ import annotations

import logging
import re
import secrets
import signal
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

import bench
from bench.cloud.plan import TAG_CREATED, TAG_MANAGED, TAG_TOPOLOGY, TAG_TRIAL, Plan, make_plan, render_plan
from bench.cloud.providers.base import CloudProvider, Resource, allocate_ips
from bench.cloud.startup import TEMPLATES_ENV, NodeBoot, distribution_url, http_tls, render_startup_script
from bench.cloud.tls import TransportTls, make_transport_tls
from bench.cloud.topology import Topology
from bench.provision.car import load_car
from bench.util.errors import BenchError, ConfigError, ProvisionError, RaceInterrupted
from bench.util.redact import register_secret

log = logging.getLogger(__name__)
DEFAULT_MAX_INSTANCES = 8
NODE_BASE_DIR = "/opt/bench"


class TeardownError(ProvisionError):
    """Resources are still there after every retry; the message names each of them."""


class CloudInterrupted(BaseException):
    """SIGTERM while creating or using cloud resources (handled like KeyboardInterrupt)."""


@contextmanager
def sigterm_raises() -> Iterator[None]:
    def handler(signum: int, frame: Any) -> None:
        raise CloudInterrupted("SIGTERM")

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: nothing to install
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass
class Deployment:
    trial_id: str
    topology: Topology
    plan: Plan
    resources: list[Resource]
    boots: dict[str, NodeBoot] = field(default_factory=dict)  # instance name -> its node's boot parameters
    passwords: dict[str, str] = field(default_factory=dict)  # cluster -> generated password (never stored)

    def instances(self, role: str | None = None, group: str | None = None) -> list[Resource]:
        return sorted((r for r in self.resources if r.kind == "instance" and (role is None or r.role == role)
                       and (group is None or r.cluster == group)), key=lambda r: r.name)

    def ca_pem(self) -> str | None:
        """The trial's CA certificate (public) when a cluster answers HTTPS, which the load driver trusts."""
        for boot in self.boots.values():
            if boot.transport_tls is not None and http_tls(load_car(boot.car, boot.car_params), boot):
                return boot.transport_tls.ca_pem
        return None

    def https_clusters(self) -> set[str]:
        return {b.cluster_name for b in self.boots.values()
                if b.transport_tls is not None and http_tls(load_car(b.car, b.car_params), b)}

    def http_hosts(self, cluster: str) -> list[str]:
        c = next(c for c in self.topology.clusters if c.name == cluster)
        return [f"{r.private_ip}:{c.http_port}" for r in self.instances("node", cluster)]


def parse_duration(text: str) -> float:
    """'6h', '90m', '2d', '45s' -> hours."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", text or "")
    if not m:
        raise ConfigError(f"duration {text!r} is not like 45m, 6h or 2d")
    return float(m.group(1)) * {"s": 1 / 3600, "m": 1 / 60, "h": 1, "d": 24}[m.group(2)]


def resource_tags(topo: Topology, trial_id: str, now: float | None = None) -> dict[str, str]:
    return {**topo.tags, TAG_MANAGED: "true", TAG_TRIAL: trial_id, TAG_CREATED: str(int(now or time.time())),
            TAG_TOPOLOGY: topo.name}


def orchestrator_cidr(topo: Topology) -> str:
    """Where SSH may come from: ssh.allow_from, or this machine's public address (/32) when 'auto'."""
    if topo.ssh.allow_from != "auto":
        return topo.ssh.allow_from
    try:
        with urllib.request.urlopen("https://checkip.amazonaws.com", timeout=10) as r:
            ip = r.read().decode().strip()
    except OSError as e:
        raise ConfigError(f"topology {topo.name}: ssh.allow_from is auto but this machine's public address could "
                          f"not be found ({e}); set ssh.allow_from to a CIDR") from None
    return f"{ip}/32"


def check_guard(plan: Plan, max_instances: int) -> None:
    if len(plan.instances) > max_instances:
        raise ConfigError(f"topology {plan.topology} creates {len(plan.instances)} instances, more than "
                          f"--max-instances={max_instances}; raise --max-instances if that is intended")


def confirm_or_abort(plan: Plan, yes: bool, ask: Callable[[str], str] | None = None) -> None:
    if yes:
        return
    if ask is None:
        if not sys.stdin.isatty():
            raise ConfigError("creating cloud instances needs confirmation: run interactively or pass --yes")
        ask = input
    answer = ask(f"Create {len(plan.instances)} {plan.provider} instances for about {plan.instance_hours:g} "
                 f"instance-hours? [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise ConfigError("cancelled: nothing was created")


def node_boots(topo: Topology, plan: Plan, ips: dict[str, str], passwords: dict[str, str],
               tls: TransportTls | None = None, jvm_options: dict[str, list[str]] | None = None
               ) -> dict[str, NodeBoot]:
    """Startup parameters of every node: seeds are the cluster's private addresses, remote seeds the
    transport addresses of the clusters it names in remote_clusters, extra JVM options the race's for its
    cluster (``jvm_options``: cluster -> options, ``NODE_LOGS`` standing for the node's log folder)."""
    transport: dict[str, list[str]] = {}
    for c in topo.clusters:
        transport[c.name] = [f"{ips[i.name]}:{c.transport_port}" for i in plan.instances if i.group == c.name]
    boots: dict[str, NodeBoot] = {}
    for c in topo.clusters:
        members = [i for i in plan.instances if i.group == c.name and i.role == "node"]
        for i in members:
            boots[i.name] = NodeBoot(
                cluster_name=c.name, node_name=i.name, node_index=i.index, bind_host=ips[i.name],
                seed_hosts=transport[c.name], master_nodes=[m.name for m in members],
                remote_seeds={r: transport[r] for r in c.remote_clusters}, engine=c.engine, version=c.version,
                # Cloud hosts are Linux; x86_64 unless the topology's repository names another archive.
                distribution_url=distribution_url(c.engine, c.version, c.repository, os="linux",
                                                  machine="x86_64"), car=c.car,
                car_params=c.car_params, roles=c.roles, http_port=c.http_port, transport_port=c.transport_port,
                base_dir=NODE_BASE_DIR, security_password=passwords.get(c.name),
                transport_tls=tls if c.name in passwords else None,
                jvm_options=list((jvm_options or {}).get(c.name, [])))
    return boots


def trial_tls(trial_id: str, plan: Plan, ips: dict[str, str]) -> TransportTls:
    """The trial's CA and node certificate, which names every node's private address: clients verify hostnames
    over HTTPS."""
    return make_transport_tls(trial_id, hosts=[ips[i.name] for i in plan.instances if i.role == "node"])


def driver_script(name: str) -> str:
    return TEMPLATES_ENV.get_template("driver-startup.sh.j2").render(bench_version=bench.__version__, name=name,
                                                          base_dir=NODE_BASE_DIR)


def up(topo: Topology, provider: CloudProvider, trial_id: str, *, yes: bool = False,
       max_instances: int = DEFAULT_MAX_INSTANCES, ask: Callable[[str], str] | None = None,
       console: Console | None = None, hours: float = 1.0,
       jvm_options: dict[str, list[str]] | None = None) -> Deployment:
    """Create the topology's network rules and instances; on any failure or interruption delete everything
    created so far (and raise). ``jvm_options``: cluster -> the race's extra JVM options for its nodes."""
    console = console or Console(stderr=True)
    plan = make_plan(topo, trial_id, hours)
    check_guard(plan, max_instances)
    console.print(render_plan(plan, topo), highlight=False, markup=False)
    confirm_or_abort(plan, yes, ask)
    # One generated password for the trial: the load driver's client options are shared by all its clusters.
    password = secrets.token_urlsafe(24)
    register_secret(password)
    passwords = {c.name: password for c in topo.clusters if load_car(c.car, c.car_params).security}
    created: list[Resource] = []
    try:
        with sigterm_raises():
            tags = resource_tags(topo, trial_id)
            net = provider.network(topo)
            rules = provider.create_rules(topo, trial_id, net, plan.member_ports, orchestrator_cidr(topo), tags)
            created += rules
            ip_list = allocate_ips(net, len(plan.instances), trial_id)
            ips = {i.name: ip for i, ip in zip(plan.instances, ip_list)}
            boots = node_boots(topo, plan, ips, passwords, trial_tls(trial_id, plan, ips) if passwords else None,
                               jvm_options)
            for inst in plan.instances:
                script = render_startup_script(boots[inst.name]) if inst.role == "node" else driver_script(inst.name)
                console.print(f"creating {inst.name} ({inst.instance_type}, {ips[inst.name]})", highlight=False)
                created.append(provider.create_instance(topo, inst, net, rules, ips[inst.name], script, tags))
            running = provider.wait_running([r for r in created if r.kind == "instance"])
            resources = [*rules, *running]
    except BaseException as e:
        reason = "interrupted" if isinstance(e, (KeyboardInterrupt, CloudInterrupted)) else f"failed ({e})"
        console.print(f"[bold red]bring-up {reason}: deleting everything created for trial {trial_id}[/bold red]",
                      highlight=False)
        teardown(provider, trial_id, created, console)
        if isinstance(e, (KeyboardInterrupt, CloudInterrupted)):
            raise RaceInterrupted(f"bring-up of trial {trial_id} interrupted; everything created was deleted") \
                from None
        raise
    return Deployment(trial_id=trial_id, topology=topo, plan=plan, resources=resources, boots=boots,
                      passwords=passwords)


def _merge(a: list[Resource], b: list[Resource]) -> list[Resource]:
    seen: dict[tuple[str, str], Resource] = {}
    for r in [*a, *b]:
        seen.setdefault((r.kind, r.id), r)
    return list(seen.values())


def teardown(provider: CloudProvider, trial_id: str, known: list[Resource], console: Console | None = None,
             attempts: int = 3, backoff: float = 5.0, timeout: float = 600) -> list[Resource]:
    """Delete everything of trial_id (what we know we created plus whatever its tags find); retry; verify by
    listing again. Returns what was deleted; raises TeardownError naming every resource still there."""
    console = console or Console(stderr=True)
    deleted: list[Resource] = []
    last_error: str = ""
    # Ctrl-C during teardown must not leave half of it undone: ignore SIGINT/SIGTERM until we are finished.
    with _signals_ignored():
        for attempt in range(1, attempts + 1):
            try:
                found = provider.list_resources(trial_id)
            except BenchError as e:
                found, last_error = [], str(e)
            left = _merge(known, found)
            if not left:
                if attempt > 1 or deleted:
                    console.print(f"teardown of trial {trial_id}: nothing left", highlight=False)
                return deleted
            try:
                provider.delete(left, timeout=timeout)
                deleted = _merge(deleted, left)
                known = []
                console.print(f"deleted {len(left)} resource(s) of trial {trial_id}: "
                              + ", ".join(r.describe() for r in left), highlight=False)
            except Exception as e:  # noqa: BLE001 - every failure is retried, then reported below
                last_error = str(e)
                log.warning("teardown attempt %d of trial %s failed: %s", attempt, trial_id, e)
                known = left
                time.sleep(backoff * attempt)
        try:
            still = _merge(known, provider.list_resources(trial_id))
        except BenchError as e:
            still, last_error = known, str(e)
        if not still:
            return deleted
    names = "; ".join(r.describe() for r in still)
    console.print(f"[bold red]TEARDOWN FAILED for trial {trial_id}: these resources are still there and may "
                  f"cost money: {names}[/bold red]", highlight=False)
    raise TeardownError(f"teardown of trial {trial_id} failed after {attempts} attempts ({last_error}); left: "
                        f"{names}; retry with 'bench cloud down --trial={trial_id}' or delete them in the console")


@contextmanager
def _signals_ignored() -> Iterator[None]:
    try:
        prev = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for s, h in prev.items():
            signal.signal(s, h)


def stale(resources: list[Resource], older_than_hours: float, now: float | None = None) -> list[Resource]:
    """Resources older than the threshold (or of unknown age: bench-managed without a creation tag)."""
    return [r for r in resources if (age := r.age_hours(now)) is None or age >= older_than_hours]


def down_stale(provider: CloudProvider, older_than_hours: float, console: Console | None = None) -> list[Resource]:
    """Tear down every trial that has a resource older than the threshold."""
    old = stale(provider.list_resources(), older_than_hours)
    trials = sorted({r.trial_id or "" for r in old})
    deleted: list[Resource] = []
    failures: list[str] = []
    for t in trials:
        mine = [r for r in old if (r.trial_id or "") == t]
        try:
            deleted += teardown(provider, t, mine, console) if t else _delete_untagged(provider, mine)
        except TeardownError as e:
            failures.append(str(e))
    if failures:
        raise TeardownError(" | ".join(failures))
    return deleted


def _delete_untagged(provider: CloudProvider, resources: list[Resource]) -> list[Resource]:
    provider.delete(resources)
    return resources


def confirm_or_abort_delete(count: int, ask: Callable[[str], str] | None = None) -> None:
    if ask is None:
        if not sys.stdin.isatty():
            raise ConfigError("deleting cloud resources needs confirmation: run interactively or pass --yes")
        ask = input
    if ask(f"Delete these {count} resource(s)? [y/N] ").strip().lower() not in ("y", "yes"):
        raise ConfigError("cancelled: nothing was deleted")
