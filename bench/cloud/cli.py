"""``bench cloud plan|up|down|ls``: argparse wiring and the commands (bench/cli.py delegates here)."""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from tabulate import tabulate

from bench.cloud import lifecycle
from bench.cloud.plan import make_plan, render_plan
from bench.cloud.providers import get_provider
from bench.cloud.providers.base import CloudProvider
from bench.cloud.topology import Topology, load_topology, parse_topology
from bench.trials.sqlite import new_trial_id
from bench.util.errors import ConfigError


def add_cloud_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser("cloud", help="plan, create, list and delete cloud machines for a topology")
    cs = c.add_subparsers(dest="cloud_command", required=True, metavar="ACTION")

    def where(p: argparse.ArgumentParser) -> None:
        p.add_argument("--topology", help="a topology file (its provider, region/zone, project)")
        p.add_argument("--provider", choices=["aws", "gcp"], help="instead of --topology")
        p.add_argument("--region", help="AWS region (with --provider aws)")
        p.add_argument("--project", help="GCP project (with --provider gcp)")
        p.add_argument("--zone", help="GCP zone (with --provider gcp)")

    p = cs.add_parser("plan", help="print what 'up' would create, touching nothing")
    p.add_argument("topology")
    p.add_argument("--hours", type=float, default=1.0, help="duration for the instance-hours estimate")
    u = cs.add_parser("up", help="create the topology's machines (and leave them running)")
    u.add_argument("topology")
    u.add_argument("--yes", action="store_true", help="do not ask for confirmation (nightly jobs)")
    u.add_argument("--max-instances", type=int, default=lifecycle.DEFAULT_MAX_INSTANCES)
    u.add_argument("--hours", type=float, default=1.0)
    ls = cs.add_parser("ls", help="everything bench created, found by its tags/labels, with age")
    where(ls)
    ls.add_argument("--older-than", help="only resources older than this (e.g. 6h, 90m, 2d)")
    d = cs.add_parser("down", help="delete a trial's resources, or every stale one")
    where(d)
    d.add_argument("--trial", help="trial id whose resources to delete")
    d.add_argument("--all-stale", action="store_true", help="delete every bench resource older than --older-than")
    d.add_argument("--older-than", default="6h")
    d.add_argument("--yes", action="store_true")


def _provider(a: argparse.Namespace) -> tuple[CloudProvider, Topology | None]:
    if a.topology:
        topo = load_topology(a.topology)
        return get_provider(topo), topo
    if a.provider == "aws" and a.region:
        raw = {"name": "cli", "provider": "aws", "region": a.region, "clusters": [{"name": "x", "instance_type": "-"}]}
    elif a.provider == "gcp" and a.project and a.zone:
        raw = {"name": "cli", "provider": "gcp", "project": a.project, "zone": a.zone,
               "network": {"cidr": "10.0.0.0/8"}, "clusters": [{"name": "x", "instance_type": "-"}]}
    else:
        raise ConfigError("name the cloud: --topology=FILE, or --provider=aws --region=R, or "
                          "--provider=gcp --project=P --zone=Z")
    return get_provider(parse_topology(raw, "command line")), None


def run_cloud(a: argparse.Namespace, console: Console) -> int:
    err = Console(stderr=True, soft_wrap=True, emoji=False)
    if a.cloud_command == "plan":
        topo = load_topology(a.topology)
        console.print(render_plan(make_plan(topo, new_trial_id(), a.hours), topo), highlight=False, markup=False)
        return 0
    if a.cloud_command == "up":
        topo = load_topology(a.topology)
        provider = get_provider(topo)
        trial = new_trial_id()
        dep = lifecycle.up(topo, provider, trial, yes=a.yes, max_instances=a.max_instances, console=err,
                           hours=a.hours)
        rows = [(r.name, r.role, r.cluster, r.private_ip, r.public_ip or "-") for r in dep.instances()]
        console.print(tabulate(rows, headers=["Instance", "Role", "Cluster", "Private IP", "Public IP"]), markup=False)
        console.print(f"Created trial {trial}: {len(dep.instances())} instances. They keep running (and costing) "
                      f"until 'bench cloud down --topology={a.topology} --trial={trial}'.", highlight=False)
        return 0
    provider, _ = _provider(a)
    if a.cloud_command == "ls":
        found = provider.list_resources()
        if a.older_than:
            found = lifecycle.stale(found, lifecycle.parse_duration(a.older_than))
        now = time.time()
        found_rows = [(r.trial_id[:12] if r.trial_id else "?", r.kind, r.id, r.name, r.state or "-", r.location,
                       f"{r.age_hours(now):.1f}h" if r.created else "?", r.private_ip or "-") for r in found]
        console.print(tabulate(found_rows, headers=["Trial", "Kind", "Id", "Name", "State", "Where", "Age", "Private IP"]),
                      markup=False)
        console.print(f"{len(found)} resource(s)", highlight=False)
        return 0
    # down
    if bool(a.trial) == bool(a.all_stale):
        raise ConfigError("bench cloud down needs exactly one of --trial=ID or --all-stale")
    if a.trial:
        targets = provider.list_resources(a.trial)
    else:
        targets = lifecycle.stale(provider.list_resources(), lifecycle.parse_duration(a.older_than))
    if not targets:
        console.print("nothing to delete", highlight=False)
        return 0
    for r in targets:
        console.print(f"will delete {r.describe()} (trial {r.trial_id})", highlight=False, markup=False)
    if not a.yes:
        lifecycle.confirm_or_abort_delete(len(targets))
    if a.trial:
        lifecycle.teardown(provider, a.trial, targets, err)
    else:
        lifecycle.down_stale(provider, lifecycle.parse_duration(a.older_than), err)
    console.print(f"deleted {len(targets)} resource(s)", highlight=False)
    return 0
