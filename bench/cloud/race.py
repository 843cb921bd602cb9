"""``bench race --topology=FILE`` with a cloud provider: bring the topology up (nodes booted with the race hooks'
JVM options), install bench on the load driver hosts at the orchestrator's version (several hosts form a Ray
cluster, head on the first), run the race on the first against the clusters' private addresses, copy the trial
(store rows, driver and node logs, with the files the JVM options wrote) back into the local store, and tear
everything down -- on success, failure, Ctrl-C and SIGTERM."""

from __future__ import annotations

import json
import logging
import shlex
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from bench.cloud import lifecycle
from bench.cloud.cloud_links import connections, measure_links
from bench.cloud.collect import import_trial
from bench.cloud.providers import get_provider
from bench.cloud.race_options import driver_ini, refuse_unsent
from bench.cloud.ray_hosts import RayDrivers, RayHost
from bench.cloud.ssh import DriverHost, RemoteHost, client_auth
from bench.cloud.topology import Topology
from bench.cloud.wheel import build_wheel
from bench.provision.car import load_car
from bench.provision.tls_files import CA_FILE
from bench.race.flags import remote_args
from bench.race.options import RaceOptions
from bench.race.pipeline import RaceResult
from bench.race.race_report import race_report
from bench.results.report import write_report
from bench.trials.sqlite import TrialStore
from bench.util.errors import ConfigError, ProvisionError, RaceInterrupted
from bench.util.home import trials_dir
from bench.util.redact import redact_text

log = logging.getLogger(__name__)
NODE_STOP_TIMEOUT = 120  # seconds a node has to exit after SIGTERM before its files are fetched anyway


def race_args(opts: RaceOptions, dep: lifecycle.Deployment, remote_dir: str, ray_address: str | None = None) -> list[str]:
    """The driver's 'bench race' arguments: the track and run options of opts, the topology's clusters as
    named target hosts (private addresses), client options from a file only the driver user can read; with
    several driver hosts, their Ray cluster as the load driver (one worker per CPU of each unless
    --worker-processes says otherwise)."""
    hosts = ",".join(f"{c.name}:{h}" for c in dep.topology.clusters for h in dep.http_hosts(c.name))
    tags = {**opts.user_tags, "topology": dep.topology.name, "provider": dep.topology.provider}
    # The values that travel as files, where the driver host has them; the generated password is in the client
    # options' file even when the user gave none.
    files = {"track_path": f"{remote_dir}/track", "track_params": f"{remote_dir}/track-params.json",
             "client_options": f"{remote_dir}/client-options.json"}
    replace = {"user_tags": ["--user-tag", ",".join(f"{k}:{v}" for k, v in tags.items())]}
    if dep.passwords:
        replace["client_options"] = ["--client-options", files["client_options"]]
    args = ["--target-hosts", hosts, "--report-format", "json", *remote_args(opts, files, replace)]
    if ray_address:
        args += ["--load-driver", f"ray:{ray_address}"]
    return args


def wait_file(host: RemoteHost, path: str, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while host.run(f"test -f {shlex.quote(path)}", check=False)[0] != 0:
        if time.monotonic() > deadline:
            raise ProvisionError(f"{what} on {host.host} not ready after {timeout:.0f} s ({path} missing)")
        time.sleep(5)


def wait_clusters(host: RemoteHost, dep: lifecycle.Deployment, timeout: float, ca_file: str | None = None) -> None:
    """From the driver (the only machine that reaches the nodes' ports), wait until each cluster has all its
    nodes and is at least yellow: the nodes' startup scripts report ready the same way. ``ca_file``: the trial's
    CA on the driver host, which clusters answering HTTPS are verified against."""
    https = dep.https_clusters()
    for c in dep.topology.clusters:
        first = dep.http_hosts(c.name)[0]
        auth = f"-u {shlex.quote(f'{_user(dep, c.name)}:{dep.passwords[c.name]}')} " if c.name in \
            dep.passwords else ""
        if c.name in https:
            auth += f"--cacert {shlex.quote(ca_file or '')} "
        scheme = "https" if c.name in https else "http"
        url = f"{scheme}://{first}/_cluster/health?wait_for_nodes=%3E%3D{c.nodes}&wait_for_status=yellow&timeout=5s"
        deadline = time.monotonic() + timeout
        while True:
            rc, out, _ = host.run(f"curl -fsS -m 15 {auth}{shlex.quote(url)}", check=False, timeout=30)
            if rc == 0 and '"timed_out":false' in out:
                break
            if time.monotonic() > deadline:
                raise ProvisionError(f"cluster {c.name} did not form ({c.nodes} nodes) within {timeout:.0f} s: "
                                     f"{redact_text(out)[:200]}")
            time.sleep(5)


def _user(dep: lifecycle.Deployment, cluster: str) -> str | None:
    c = next(c for c in dep.topology.clusters if c.name == cluster)
    car = load_car(c.car, c.car_params)
    return car.security.user if car.security else None


def driver_client_options(opts: RaceOptions, dep: lifecycle.Deployment, ca_file: str | None) -> dict[str, Any]:
    """The driver host's client options: the command line's (timeouts, TLS), the first cluster's generated password,
    and with clusters answering HTTPS, TLS trusting the trial's CA at ``ca_file`` on the driver host (unless the
    command line names a CA itself)."""
    first = next(iter(dep.passwords), None)
    out: dict[str, Any] = {**opts.client_options, **(client_auth(_user(dep, first), dep.passwords[first]) if first
                                                     else {})}
    if ca_file and dep.https_clusters():
        out["use_ssl"] = True
        out.setdefault("ca_certs", ca_file)
    return out


def check_one_scheme(topo: Topology) -> None:
    """The driver's race has one set of client options for every cluster: all answer HTTPS or none."""
    https = {c.name: bool((car := load_car(c.car, c.car_params)).security and car.security.tls)
             for c in topo.clusters}
    if len(set(https.values())) > 1:
        on = ", ".join(n for n, v in https.items() if v)
        off = ", ".join(n for n, v in https.items() if not v)
        raise ConfigError(f"topology {topo.name}: cluster(s) {on} answer HTTPS (the security mixin) but {off} plain "
                          f"HTTP; the load driver reaches every cluster with one set of client options: give all "
                          f"of them the security mixin (or security: true in the topology), or none")


def drive_on_hosts(opts: RaceOptions, dep: lifecycle.Deployment, hosts: list[DriverHost], console: Console, *,
                   system_site_packages: bool = False, offline: bool = False, boot_timeout: float = 1200,
                   node_log_hosts: dict[str, RemoteHost] | None = None,
                   ray_options: dict[str, Any] | None = None,
                   link_hosts: dict[str, RemoteHost] | None = None) -> str:
    """Everything after the machines exist: install bench on the driver hosts, wait for the clusters, run the
    race on the first (with several hosts: their Ray cluster, head on the first, drives), and import its trial
    (as dep.trial_id) with driver and node logs. Returns the local trial id. ``ray_options``: RayDrivers'
    settings (temp_dir, num_cpus, object_store_bytes). ``link_hosts``: cluster -> an SSH connection to its first
    node's host, from which the topology's remote-cluster connections are measured before the race (stored on the
    connecting cluster's facts); without it, nothing is measured."""
    head = hosts[0]
    ray_ips = [r.private_ip or r.public_ip or "" for r in dep.instances("driver")][:len(hosts)]
    extras = ("ray",) if len(hosts) > 1 else ()
    console.print(f"installing bench on driver{'s' if len(hosts) > 1 else ''} {', '.join(h.host for h in hosts)} ...",
                  highlight=False)
    began = time.monotonic()
    # One wheel of this bench for every host; minutes each: the hosts install at once.
    with tempfile.TemporaryDirectory(prefix="bench-wheel-") as tmp, ThreadPoolExecutor(len(hosts)) as pool:
        wheel = build_wheel(Path(tmp))
        list(pool.map(lambda h: h.install_bench(wheel, system_site_packages=system_site_packages, offline=offline,
                                                extras=extras), hosts))
    console.print(f"bench installed in {time.monotonic() - began:.1f} s", highlight=False)
    _, out, _ = head.run("mktemp -d")
    remote_dir = out.strip()
    # The track at the same path on every driver: a Ray node prepares its corpora from the track's folder too.
    for h in hosts:
        if h is not head:
            h.run(f"mkdir -p {shlex.quote(remote_dir)}")
        if opts.track_path:
            h.put_tree(Path(opts.track_path).expanduser(), f"{remote_dir}/track")
    if opts.track_params:
        head.put_text(json.dumps(opts.track_params), f"{remote_dir}/track-params.json")
    ca_pem = dep.ca_pem()
    ca_file = f"{remote_dir}/{CA_FILE}" if ca_pem else None
    if ca_pem and ca_file:
        for h in hosts:  # every host's workers connect over HTTPS
            h.put_text(ca_pem, ca_file)
    if dep.passwords or opts.client_options:
        head.put_text(json.dumps(driver_client_options(opts, dep, ca_file)), f"{remote_dir}/client-options.json")
    ini = driver_ini(opts)
    if ini:
        for h in hosts:  # every host finds the repository as this machine does
            h.run(f"mkdir -p {shlex.quote(h.home)}")
            h.put_text(ini, f"{h.home}/bench.ini")
    console.print("waiting for the clusters to form ...", highlight=False)
    try:
        wait_clusters(head, dep, boot_timeout, ca_file)
        links = _measure_links(dep, link_hosts, console) if link_hosts is not None else {}
        if len(hosts) > 1:
            ray = RayDrivers([RayHost(h, ip) for h, ip in zip(hosts, ray_ips)], **(ray_options or {}))
            console.print(f"starting a Ray cluster on the {len(hosts)} driver hosts (head {ray_ips[0]}) ...",
                          highlight=False)
            began = time.monotonic()
            with ray:
                console.print(f"Ray cluster of {len(hosts)} hosts up in {time.monotonic() - began:.1f} s; running the "
                              f"race on {head.host}, driven from all of them ...", highlight=False)
                remote_id, _output = head.run_race(race_args(opts, dep, remote_dir, ray.address))
        else:
            console.print(f"running the race on {head.host} ...", highlight=False)
            remote_id, _output = head.run_race(race_args(opts, dep, remote_dir))
    finally:
        for h in hosts:
            h.run(f"rm -rf {shlex.quote(remote_dir)}", check=False)
    local_dir = trials_dir() / dep.trial_id
    snapshot = head.fetch_trial(remote_id, local_dir)
    provider = dep.topology.provider
    with TrialStore() as store:
        import_trial(store, snapshot, remote_id, as_id=dep.trial_id,
                     updates={"clusters": cluster_facts(dep, links)})
        # The driver host's own facts stay; its instance type is what the placement line names.
        machine = store.get_trial(dep.trial_id).machine
        drivers = [d.instance_type.get(provider) for d in dep.topology.drivers for _ in range(d.count)]
        store.update_trial(dep.trial_id, machine={**machine, "provider": provider,
                                                  "instance_types": [t for t in drivers if t]})
    snapshot.unlink(missing_ok=True)
    _push_to_metrics_store(dep.trial_id, console)
    for name, node_host in (node_log_hosts or {}).items():
        fetch_node_files(dep, name, node_host, local_dir, console)
    return dep.trial_id


def cluster_facts(dep: lifecycle.Deployment, links: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The trial's clusters as the topology made them, each with the links it connected over."""
    provider = dep.topology.provider
    return [{"name": c.name, "provider": provider, "nodes": c.nodes, "engine": c.engine,
             "version": c.version, "hosts": dep.http_hosts(c.name), "car": "+".join(c.car),
             **({"car_params": c.car_params} if c.car_params else {}),
             "instance_type": c.instance_type.get(provider),
             "instances": [r.name for r in dep.instances("node", c.name)],
             **({"links": links[c.name]} if c.name in links else {})} for c in dep.topology.clusters]


def _measure_links(dep: lifecycle.Deployment, hosts: dict[str, RemoteHost],
                   console: Console) -> dict[str, list[dict[str, Any]]]:
    pairs = connections(dep.topology)
    if not pairs:
        return {}
    console.print(f"measuring the link{'s' if len(pairs) > 1 else ''} "
                  f"{', '.join(f'{a}->{b}' for a, b in pairs)} from the clusters' hosts ...", highlight=False)
    ips = {c.name: r.private_ip or "" for c in dep.topology.clusters for r in dep.instances("node", c.name)[:1]}
    began = time.monotonic()
    facts = measure_links(dep.topology, ips, hosts)
    for fact in (f for fs in facts.values() for f in fs):
        m = fact["measured"]
        console.print(f"link {fact['from']}->{fact['to']}: round trip {m['rtt_ms']:.2f} ms, "
                      f"{m['throughput_bps'] / 1e6:.1f} Mbit/s", highlight=False)
    console.print(f"links measured in {time.monotonic() - began:.1f} s", highlight=False)
    return facts


def stop_node_command(base_dir: str, timeout: int = NODE_STOP_TIMEOUT) -> str:
    """Shell that stops the node of ``base_dir`` (SIGTERM, as root or through sudo) and waits until it exited;
    exits 0 also when it was not running, non-zero with a reason when it outlived ``timeout`` seconds."""
    pid_file = shlex.quote(f"{base_dir}/node.pid")
    return (f"alive() {{ [ -r /proc/$1/status ] && ! grep -qs '^State:[[:space:]]*Z' /proc/$1/status; }}; "
            f"pid=$(cat {pid_file} 2>/dev/null) || exit 0; alive \"$pid\" || exit 0; "
            'if [ "$(id -u)" = 0 ]; then kill -TERM "$pid"; else sudo -n kill -TERM "$pid"; fi || exit 1; '
            f'for _ in $(seq {timeout}); do alive "$pid" || exit 0; sleep 1; done; '
            f'echo "pid $pid still running {timeout} s after SIGTERM" >&2; exit 1')


def fetch_node_files(dep: lifecycle.Deployment, name: str, host: RemoteHost, local_dir: Path,
                     console: Console) -> None:
    """Copy a node's log folder -- its logs and whatever the race's JVM options wrote there (GC and JIT logs,
    flight recordings) -- and its startup log into the trial, where a local race keeps them
    (``logs/<cluster>/<node>/``). A node booted with the race's JVM options is stopped first: a flight recording
    is written when its JVM exits. Each failure is one line naming the node; the trial is already stored."""
    cluster = next((r.cluster for r in dep.instances("node") if r.name == name), "nodes")
    boot = dep.boots.get(name)
    base = boot.base_dir if boot is not None else lifecycle.NODE_BASE_DIR
    target = local_dir / "logs" / str(cluster) / name
    try:
        with host:
            if boot is not None and boot.jvm_options:
                rc, out, err = host.run(stop_node_command(base), timeout=NODE_STOP_TIMEOUT + 60, check=False)
                if rc != 0:
                    _warn(console, f"node {name} did not stop ({' '.join((err or out).split())[:200] or f'exit {rc}'}):"
                          " the files its JVM writes at exit (a flight recording) may be missing from the trial")
            host.get_tree(f"{base}/logs", target)
            host.get(f"{base}/startup.log", target / "startup.log")
    except Exception as e:  # noqa: BLE001 - every failure is one line; the trial is already stored
        _warn(console, f"could not copy the logs of node {name} (with the files of the race's JVM options) "
                       f"into {target}: {e}")


def _warn(console: Console, line: str) -> None:
    log.warning("%s", line)
    console.print(f"[yellow]{escape(redact_text(line))}[/yellow]", highlight=False)


def _push_to_metrics_store(trial_id: str, console: Console) -> None:
    """The driver's trial reached the local store by import, not through a race here: push it like one."""
    from bench.trials.metrics_store.config import configured_store
    from bench.trials.metrics_store.pusher import push_command

    config = configured_store()
    if config is not None:
        for line in push_command(config, [trial_id])[0]:
            console.print(line, highlight=False, markup=False)


def run_cloud_race(opts: RaceOptions, topo: Topology, console: Console,
                   jvm_options: dict[str, list[str]] | None = None) -> RaceResult:
    """``jvm_options``: cluster -> the race's extra JVM options for its nodes (the race hooks'), booted with them."""
    if not topo.drivers:
        raise ConfigError(f"topology {topo.name}: a cloud race needs a load-driver host (drivers: [...])")
    if opts.target_hosts:
        raise ConfigError("--topology and --target-hosts exclude each other")
    if opts.load_driver or opts.load_driver_hosts:
        raise ConfigError(f"--topology drives from topology {topo.name}'s driver hosts (several of them form a Ray "
                          "cluster): drop --load-driver/--ray-address/--load-driver-hosts, or set drivers[].count")
    if opts.driver_cpus is not None and sum(d.count for d in topo.drivers) > 1:
        raise ConfigError(f"--driver-cpus={opts.driver_cpus}: topology {topo.name}'s driver hosts form a Ray cluster, "
                          "whose workers bench does not pin: drop it, or use one driver host")
    refuse_unsent(opts, topo.name)
    check_one_scheme(topo)
    driver_ini(opts)  # a repository the driver host cannot clone is refused before any machine exists
    trial_id = opts.trial_id()
    provider = get_provider(topo)
    dep = lifecycle.up(topo, provider, trial_id, yes=opts.yes, max_instances=opts.max_instances, console=console,
                       jvm_options=jvm_options)
    known_hosts = trials_dir() / trial_id / "known_hosts"
    try:
        with lifecycle.sigterm_raises():
            hosts = [DriverHost(d.public_ip or d.private_ip or "", topo.ssh.user, topo.ssh.private_key, topo.ssh.port,
                                known_hosts=known_hosts) for d in dep.instances("driver")]
            with ExitStack() as connected:
                for host in hosts:
                    connected.enter_context(host.connect(timeout=600))
                    wait_file(host, f"{lifecycle.NODE_BASE_DIR}/ready.json", "driver startup", 900)
                nodes = {r.name: RemoteHost(r.public_ip or r.private_ip or "", topo.ssh.user, topo.ssh.private_key,
                                            topo.ssh.port, known_hosts=known_hosts) for r in dep.instances("node")}
                firsts = {c.name: nodes[r[0].name] for c in topo.clusters if (r := dep.instances("node", c.name))}
                drive_on_hosts(opts, dep, hosts, console, node_log_hosts=nodes, link_hosts=firsts)
    except (KeyboardInterrupt, lifecycle.CloudInterrupted):
        lifecycle.teardown(provider, trial_id, dep.resources, console)
        raise RaceInterrupted(f"cloud race {trial_id} interrupted; its machines were deleted") from None
    except BaseException:
        lifecycle.teardown(provider, trial_id, dep.resources, console)
        raise
    lifecycle.teardown(provider, trial_id, dep.resources, console)
    with TrialStore() as store:
        trial = store.get_trial(trial_id)
        summary = store.summary(trial_id)
    report = race_report(summary, opts.report_format, trial, trial.status)
    if opts.report_file:
        write_report(report, opts.report_file)
    return RaceResult(trial_id, trial.status, summary, report, trial.clusters)
