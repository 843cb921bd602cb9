"""The ``bench`` command line: parses arguments into validated option models and dispatches.

Every BenchError ends here as one line on stderr and its exit code; anything else is a bug and
keeps its traceback (in the log file, and on stderr).
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError
from rich.console import Console

from bench import __version__
from bench.race.rally_flags import add_refused_flags, refuse_rally_flags
from bench.trials.filter import add_race_filters
from bench.util import redact
from bench.util.errors import BenchError, ConfigError
from bench.util.home import STORAGE_ERRNOS, bench_home, bench_home_path, storage_error
from bench.util.memory import address_space_limit, no_thread, out_of_memory

if TYPE_CHECKING:
    from bench.race.options import RaceOptions
    from bench.race.pipeline import RaceResult

_PACKAGE = Path(__file__).resolve().parent  # bench/, whose own modules are compiled and linted in CI

log = logging.getLogger("bench")


def _kv_list(values: list[str] | None, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values or []:
        for part in filter(None, (p.strip() for p in item.split(","))):
            k, sep, v = part.partition(":")
            if not sep or not k:
                raise ConfigError(f"{what}: '{part}' is not key:value")
            out[k.strip()] = v.strip()
    return out


def _store_flags(p: argparse.ArgumentParser, default: Any) -> None:
    """The metrics store options, accepted before the subcommand and after it."""
    p.add_argument("--metrics-store", default=default, metavar="URL",
                   help="a shared Elasticsearch/OpenSearch metrics store, http(s)://[user@]host:port (Rally's layout; "
                        "also BENCH_METRICS_STORE or [reporting] in $BENCH_HOME/bench.ini)")
    p.add_argument("--metrics-store-options", default=default, metavar="K:V,...",
                   help="k:v,... or a JSON file: --client-options' keys, plus index_prefix (default rally), "
                        "environment (default local), downsample_factor (default 1)")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench", description="Benchmark Elasticsearch and OpenSearch clusters.")
    p.add_argument("--version", action="version", version=f"bench {__version__}")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    _store_flags(p, None)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("race", help="run a benchmark (a trial) and print its summary")
    # Rally users write 'race --quiet'; SUPPRESS keeps 'bench --quiet race' working too.
    r.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress display")
    r.add_argument("--track", help="a track name: bench's built-in ones, else one in the track repository "
                                    "(see 'bench list tracks')")
    r.add_argument("--track-path", "--workload-path", dest="track_path",
                   help="a folder containing track.json (e.g. an unchanged Rally track) or an OpenSearch Benchmark "
                        "workload.json (--workload-path, OSB's flag)")
    _track_repository_flags(r)
    r.add_argument("--pipeline", help="benchmark-only (existing hosts: --target-hosts, default 127.0.0.1:9200) or "
                                      "from-distribution (bench starts the cluster); default: from --target-hosts")
    r.add_argument("--include-tasks", help="only these tasks: names, type:OPERATION-TYPE, tag:TAG, comma-separated")
    r.add_argument("--exclude-tasks", help="all tasks but these: names, type:OPERATION-TYPE, tag:TAG")
    r.add_argument("--race-id", "--test-run-id", dest="race_id",
                   help="the trial's id (Rally's race id, OSB's test run id: a UUID or hex; default: a new one)")
    r.add_argument("--track-params", "--workload-params", dest="track_params", help="k:v,k2:v2 or a JSON file")
    r.add_argument("--ignore-unused-track-params", action="store_true")
    r.add_argument("--randomization-enabled", action="store_true",
                   help="OSB's query randomization: search tasks get new range query values from the workload's "
                        "standard value sources")
    r.add_argument("--randomization-repeat-frequency", type=float, default=0.3,
                   help="share of searches that repeat one of the standard values (default 0.3)")
    r.add_argument("--randomization-n", type=int, default=5000, help="how many standard values (default 5000)")
    r.add_argument("--randomization-alpha", type=float, default=1.0,
                   help="Zipf exponent of which standard value repeats (default 1)")
    r.add_argument("--challenge", "--test-procedure", dest="challenge",
                   help="the challenge (an OSB workload's test procedure) to run; default: the track's default")
    r.add_argument("--car", default="defaults", help="car and mixins, e.g. defaults,4gheap,security")
    r.add_argument("--car-params", help="k:v,... or a JSON file: values for car config variables")
    r.add_argument("--distribution-version", default="8.19.21")
    r.add_argument("--distribution-repository",
                   help="release (default: the official archive with its bundled JDK), maven-integ-test (Maven "
                        "Central's minimal build), a name defined in bench.ini [distributions], or a URL template "
                        "with {{VERSION}} ({{OSNAME}}, {{ARCH}})")
    r.add_argument("--runtime-jdk", metavar="N|bundled",
                   help="the JDK the nodes run on: bundled (the default where the archive has one) or a major "
                        "version N of a system JDK (JAVA<N>_HOME, JAVA_HOME, ...), as Rally's flag")
    r.add_argument("--distribution-path", help="a local archive (zip/tar.gz) or unpacked install")
    r.add_argument("--distribution", help="ENGINE:VERSION of the clusters bench starts, e.g. opensearch:2.19.1 "
                                          "(overrides --distribution-version and a topology's engine/version)")
    r.add_argument("--plugin", action="append", dest="plugins", metavar="[CLUSTER:]PATH",
                   help="install a plugin zip or folder into every node (of CLUSTER only when given); repeatable")
    r.add_argument("--elasticsearch-plugins", metavar="NAME[:VERSION],...",
                   help="official Elasticsearch plugins, downloaded (verified, cached) and installed into every "
                        "Elasticsearch node bench starts; VERSION defaults to the cluster's (Rally's flag)")
    r.add_argument("--opensearch-plugins", metavar="NAME[:VERSION],...",
                   help="the same for OpenSearch clusters (OpenSearch Benchmark's flag)")
    r.add_argument("--plugin-params", help=argparse.SUPPRESS)  # Rally's; refused in one line (no plugin configs)
    r.add_argument("--nodes", type=int, default=1, help="nodes of the local cluster (default 1)")
    r.add_argument("--http-port", type=int, help="first HTTP port of the local cluster (default: free ports)")
    r.add_argument("--target-hosts", help="benchmark existing clusters: host:port,... or name:host:port,... or JSON")
    r.add_argument("--client-options", help="k:v,... or JSON file: basic_auth_user, basic_auth_password, api_key, "
                                            "use_ssl, verify_certs, ca_certs, client_cert, client_key, timeout, "
                                            "http_compress")
    r.add_argument("--test-mode", action="store_true", help="a tiny, fast version of the track to check it works")
    r.add_argument("--offline", action="store_true", help="never download corpora (use local copies only) nor install track dependencies")
    r.add_argument("--corpus-dir", help="a folder with local copies of corpus files (<dir>/<corpus>/<file> or "
                                        "<dir>/<file>), looked at first (Rally's local.dataset.cache)")
    r.add_argument("--generate-corpora", nargs="?", const=1, type=int, metavar="SEED",
                   help="generate every corpus from the track's own index mappings (seeded, default seed 1) instead "
                        "of downloading it: the trial is stored and shown as synthetic")
    r.add_argument("--on-error", choices=["continue", "continue-on-network", "abort"], default="continue",
                   help="after a failed request: continue (also after connection errors; a dead node stops the "
                        "race), continue-on-network (Rally's name for the same here), abort")
    r.add_argument("--max-error-rate", metavar="RATE",
                   help="exit 5 when a task's failed measured requests are more than RATE of its requests "
                        "(0.01 or 1%%; 0: any failed request), as a k6 threshold; the trial is stored either way")
    r.add_argument("--user-tag", "--user-tags", action="append", help="k:v (repeatable or comma-separated)")
    r.add_argument("--report-format", choices=["table", "markdown", "csv", "json"], default="table")
    r.add_argument("--report-file", help="also write the summary to this file")
    r.add_argument("--all", action="store_true", help="print the full table after the headline (report files always have it)")
    r.add_argument("--show-in-report", choices=["available", "all-percentiles", "all"], default="available",
                   help="Rally's: all and all-percentiles print the full table (as --all); available: the headline")
    r.add_argument("--report-numbers-align", choices=["decimal"], help=argparse.SUPPRESS)  # Rally's default only
    r.add_argument("--keep-cluster", action="store_true", help="leave the local cluster running")
    r.add_argument("--preserve-install", action="store_true",
                   help="Rally's: keep the cluster and its data; bench keeps it running (as --keep-cluster)")
    r.add_argument("--multi-cluster", action="store_true",
                   help="Rally's: several named clusters in --target-hosts (bench reads them without this flag)")
    r.add_argument("--enable-assertions", action="store_true",
                   help="Rally's: bench always checks a track's assertions")
    r.add_argument("--no-quiet", dest="quiet", action="store_false", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    add_refused_flags(r)
    r.add_argument("--worker-processes", type=int, default=None,
                   help="load driver processes (clients are dealt out to them; default 1, with "
                        "--load-driver=ray:... one per CPU of each Ray node)")
    _load_driver_arguments(r)
    r.add_argument("--topology", help="a topology file or a bundled example's name (topologies/: ccr-local, ...): "
                                      "its clusters, locally or in a cloud")
    r.add_argument("--pinning", metavar="off|auto|auto:N",
                   help="pin the clusters bench starts here and the load driver to disjoint CPU sets: auto divides "
                        "the CPUs into one slot per cluster plus one for the driver (auto:N into N; the clusters take "
                        "the first, the driver the last) when there are at least 4; default: a topology's own pinning")
    r.add_argument("--yes", action="store_true", help="with a cloud --topology: create machines without asking")
    r.add_argument("--max-instances", type=int, default=8, help="with a cloud --topology: refuse more machines")
    r.add_argument("--telemetry", help="telemetry devices, e.g. node-stats,ccr-stats,host (see 'bench list telemetry')")
    r.add_argument("--telemetry-params", help="k:v,... or a JSON file, e.g. node-stats-sample-interval:5")
    r.add_argument("--telemetry-profile", help="a profile from telemetry/ (e.g. ccr, default) or a YAML file")
    r.add_argument("--enable-driver-profiling", action="store_true",
                   help="sample the load driver's worker processes (Python stacks, every 10 ms): a flame graph per "
                        "worker kept with the trial (profiles/driver/) and in HTML reports")
    r.add_argument("--redline", help="task:NAME,p99:500ms[,errors:0.1%%,tolerance:5%%,warmup:10s,measure:30s,start:N,"
                                     "max:N,steps:20]: the highest throughput (requests/s) the task sustains within "
                                     "the latency/error objective, by exponential then binary search")

    lg = sub.add_parser("loadgen", help="run an INFINI Loadgen YAML config as it is (measured, stored as a trial)")
    lg.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress display")
    lg.add_argument("--config", default="loadgen.yml", help="the Loadgen YAML file (default loadgen.yml)")
    lg.add_argument("-c", type=int, default=1, dest="concurrency", help="concurrent clients (default 1)")
    lg.add_argument("-d", type=float, default=5, dest="duration", help="duration in seconds (default 5)")
    lg.add_argument("-r", type=float, default=None, dest="rate", help="max requests per second, all clients")
    lg.add_argument("-l", type=int, default=None, dest="limit", help="total request limit")
    lg.add_argument("--compress", action="store_true", help="gzip request bodies")
    lg.add_argument("--target-hosts", help="send every request to these hosts instead of the URLs' own")
    lg.add_argument("--client-options", help="k:v,... as for race (use_ssl, verify_certs, ca_certs, timeout ...)")
    lg.add_argument("--user-tag", action="append", help="k:v (repeatable or comma-separated)")
    lg.add_argument("--report-format", choices=["table", "markdown", "csv", "json"], default="table")
    lg.add_argument("--worker-processes", type=int, default=None,
                    help="load-driver processes (default 1, with --load-driver=ray:... one per CPU of each Ray node; "
                         "sequences then count per process)")
    _load_driver_arguments(lg)

    inf = sub.add_parser("info", help="what a track holds: corpora, challenges, schedules, and what bench cannot run")
    inf.add_argument("--track", help="a track name: bench's built-in ones, else one in the track repository")
    inf.add_argument("--track-path", "--workload-path", dest="track_path",
                     help="a folder containing track.json (or an OSB workload.json)")
    _track_repository_flags(inf)
    inf.add_argument("--distribution-version", help="the version whose branch of the track repository to use "
                                                    "(default: the repository's default branch)")
    inf.add_argument("--track-params", "--workload-params", dest="track_params", help="k:v,k2:v2 or a JSON file")
    inf.add_argument("--challenge", "--test-procedure", dest="challenge",
                     help="show only this challenge's (test procedure's) schedule")
    inf.add_argument("--offline", action="store_true",
                     help="never install the track's dependencies (a missing one is an error naming the pip command)")

    ls = sub.add_parser("list", help="list trials (races), tracks, workloads, cars, telemetry devices or annotations")
    ls.add_argument("what", nargs="?", default="trials",
                    choices=["trials", "races", "test-runs", "tracks", "workloads", "cars", "telemetry", "annotations"],
                    help="what to list (default: trials; races and test-runs are the same, Rally's and OSB's names; "
                         "workloads: OSB's workload repository; annotations take --track, --from-date, --to-date)")
    ls.add_argument("--limit", type=int, default=30)
    _track_repository_flags(ls)
    ls.add_argument("--distribution-version", help="tracks: the version whose branch of the track repository to list")
    ls.add_argument("--offline", action="store_true", help="tracks: do not update the track repository")
    add_race_filters(ls)

    rt = sub.add_parser("render-track", help="print a track's rendered JSON (Rally's render-track)")
    rt.add_argument("--track", help="a track name: bench's built-in ones, else one in the track repository")
    rt.add_argument("--track-path", "--workload-path", dest="track_path",
                    help="a folder containing track.json (or an OSB workload.json)")
    _track_repository_flags(rt)
    rt.add_argument("--track-params", "--workload-params", dest="track_params", help="k:v,k2:v2 or a JSON file")
    rt.add_argument("--distribution-version", help="the version whose branch of the track repository to use")
    rt.add_argument("--offline", action="store_true", help="do not update the track repository")
    rt.add_argument("--output-path", help="write the JSON to this file instead of stdout")

    de = sub.add_parser("delete", help="delete stored races or annotations (Rally's 'delete race/annotation'), also "
                                       "from a metrics store")
    de.add_argument("what", choices=["race", "annotation"], help="race or annotation")
    de.add_argument("--id", required=True, help="trial (race) ids or unique prefixes, or annotation ids, comma-separated")
    de.add_argument("--dry-run", action="store_true", help="say what would be deleted, delete nothing")

    sh = sub.add_parser("show", help="print the summary of a stored trial")
    sh.add_argument("trial", help="trial id or unique prefix")
    sh.add_argument("--report-format", choices=["table", "markdown", "csv", "json"], default="table")
    sh.add_argument("--all", action="store_true", help="the full table after the headline (files always have it)")

    st = sub.add_parser("stop", help="stop the nodes a --keep-cluster race left running, keep their logs, "
                                      "delete their folders")
    st.add_argument("trial", help="trial id or unique prefix")

    from bench.cloud.cli import add_cloud_parser

    add_cloud_parser(sub)

    from bench.reporting.commands import add_report_parsers

    nested = add_report_parsers(sub)  # compare, report, experiment, history (site)

    from bench.reporting.annotate import add_annotation_parsers

    add_annotation_parsers(sub)  # add annotation ('delete annotation' is the delete parser's)

    sto = sub.add_parser("store", help="the shared metrics store: push trials from the local store into it")
    sto_sub = sto.add_subparsers(dest="store_command", required=True, metavar="ACTION")
    push = sto_sub.add_parser("push", help="push trials (default: every local trial not yet wholly in the store)")
    push.add_argument("trials", nargs="*", help="trial ids or unique prefixes")
    for p_nested in [push, *nested]:
        _store_flags(p_nested, argparse.SUPPRESS)
    for name in ("race", "loadgen", "list", "show", "compare", "report", "experiment", "history", "store", "add",
                 "delete"):
        _store_flags(sub.choices[name], argparse.SUPPRESS)
    return p


def _track_repository_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--track-repository", metavar="NAME",
                   help="the track repository --track names a track of: default (elastic/rally-tracks) or a name "
                        "with [tracks] NAME.url in $BENCH_HOME/bench.ini (a git URL, file:// or a path)")
    p.add_argument("--track-revision", metavar="REV",
                   help="a branch, tag or commit of the track repository (default: the branch fitting the "
                        "cluster's version, as Rally chooses it)")
    p.add_argument("--workload", metavar="NAME",
                   help="an OpenSearch Benchmark workload of the workload repository (OSB's flag)")
    p.add_argument("--workload-repository", metavar="NAME",
                   help="the workload repository --workload names a workload of: default "
                        "(opensearch-project/opensearch-benchmark-workloads) or a name with [workloads] NAME.url in "
                        "$BENCH_HOME/bench.ini")
    p.add_argument("--workload-revision", metavar="REV",
                   help="a branch, tag or commit of the workload repository (default: the branch fitting the "
                        "cluster's version, as OSB chooses it)")


def _osb_flags(a: argparse.Namespace) -> Literal["tracks", "workloads"]:
    """OSB's --workload/--workload-repository/--workload-revision as the track flags they stand for; returns the
    repository kind ("workloads" when they were used). Mixing the two families is one line."""
    workload, repo, rev = (getattr(a, k, None) for k in ("workload", "workload_repository", "workload_revision"))
    if not (workload or repo or rev):
        return "tracks"
    rally = [f for f, v in (("--track", getattr(a, "track", None)), ("--track-repository", a.track_repository),
                            ("--track-revision", a.track_revision)) if v]
    if rally:
        raise ConfigError(f"{rally[0]} (Rally's) and --workload/--workload-repository/--workload-revision (OSB's) "
                          f"exclude each other: use one family")
    if getattr(a, "track_path", None):
        raise ConfigError("--workload-path and --workload/--workload-repository/--workload-revision exclude each "
                          "other: --workload-path is a folder, the others name a workload repository (as in OSB)")
    if hasattr(a, "track"):
        a.track = workload
    a.track_repository, a.track_revision = repo, rev
    return "workloads"


def _randomization(a: argparse.Namespace) -> Any:
    """OSB's --randomization-* flags as the race's QueryRandomization (None: off), each bad value one line."""
    from bench.track.model import QueryRandomization

    if not a.randomization_enabled:
        return None
    if not 0 <= a.randomization_repeat_frequency <= 1:
        raise ConfigError(f"--randomization-repeat-frequency={a.randomization_repeat_frequency:g}: use a share "
                          f"between 0 and 1")
    if a.randomization_n < 1:
        raise ConfigError(f"--randomization-n={a.randomization_n}: use a positive number of standard values")
    if not a.randomization_alpha > 0:
        raise ConfigError(f"--randomization-alpha={a.randomization_alpha:g}: use a positive Zipf exponent")
    return QueryRandomization(repeat_frequency=a.randomization_repeat_frequency, n=a.randomization_n,
                              alpha=a.randomization_alpha)


def _params(spec: str | None, what: str) -> dict[str, Any]:
    from bench.track.params import parse_params

    return parse_params(spec, what=what)


def _load_driver_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--load-driver", help="BACKEND:ADDRESS: drive from a distributed backend's workers instead of "
                                         "local processes, e.g. ray:auto or ray:HOST:PORT (needs bench[ray])")
    p.add_argument("--ray-address", help="auto|HOST:PORT: the same as --load-driver=ray:ADDRESS")
    p.add_argument("--load-driver-hosts", help="IP,...: drive only from the Ray nodes on these machines (Rally's "
                                               "flag; without --ray-address/--load-driver it means ray:auto)")


def _load_driver(a: argparse.Namespace) -> tuple[str | None, list[str]]:
    """--load-driver / --ray-address / --load-driver-hosts as (backend:address or None, driver hosts)."""
    if a.ray_address and a.load_driver:
        raise ConfigError("--ray-address and --load-driver exclude each other: --ray-address=X is --load-driver=ray:X")
    load_driver = f"ray:{a.ray_address}" if a.ray_address else a.load_driver
    driver_hosts = [h.strip() for h in (a.load_driver_hosts or "").split(",") if h.strip()]
    if driver_hosts and not load_driver and any(h not in ("localhost", "127.0.0.1") for h in driver_hosts):
        load_driver = "ray:auto"  # Rally's flag names machines: bench drives from other machines through Ray
    if load_driver and load_driver.startswith("ray:"):
        _ensure_ray(f"--ray-address={a.ray_address}" if a.ray_address else f"--load-driver={a.load_driver}"
                    if a.load_driver else f"--load-driver-hosts={a.load_driver_hosts} (drives through Ray)")
    return load_driver, driver_hosts


def _race(a: argparse.Namespace, console: Console) -> int:
    from bench.http.client import parse_target_hosts
    from bench.race.options import RaceOptions
    from bench.race.race import run_race

    refuse_rally_flags(a)
    kind = _osb_flags(a)
    if a.pipeline in ("from-sources", "docker"):
        raise ConfigError(f"--pipeline={a.pipeline} is not supported: bench starts official release archives "
                          f"(--pipeline=from-distribution) or benchmarks existing hosts (--pipeline=benchmark-only); "
                          f"it neither builds from sources nor runs Docker containers")
    if a.pipeline not in (None, "benchmark-only", "from-distribution"):
        raise ConfigError(f"--pipeline={a.pipeline}: use benchmark-only or from-distribution")
    if a.topology and a.target_hosts:
        raise ConfigError("--topology and --target-hosts exclude each other: the topology's clusters are the targets")
    if not a.track and not a.track_path:
        raise ConfigError("bench race needs --track=NAME (see 'bench list tracks'), --track-path=DIR, "
                          "--workload=NAME or --workload-path=DIR")
    if a.multi_cluster and (not a.target_hosts or len(parse_target_hosts(a.target_hosts)) < 2):
        raise ConfigError("--multi-cluster needs --target-hosts naming several clusters, e.g. "
                          "'{\"leader\": [\"h1:9200\"], \"follower\": [\"h2:9200\"]}'")
    if a.preserve_install:
        console.print("--preserve-install: bench keeps the cluster running with its data (as --keep-cluster); "
                      "stop it with 'bench stop TRIAL'", highlight=False, markup=False)
    load_driver, driver_hosts = _load_driver(a)
    if a.runtime_jdk is not None and not re.match(r"^(bundled|[1-9][0-9]?)$", a.runtime_jdk):
        raise ConfigError(f"--runtime-jdk={a.runtime_jdk}: use bundled or a JDK major version such as 17")
    raw_client_options = _params(a.client_options, "--client-options")
    for key in ("basic_auth_password", "api_key"):
        if raw_client_options.get(key):
            redact.register_secret(str(raw_client_options[key]))
    try:
        opts = RaceOptions(
            track=a.track, track_path=a.track_path, track_params=_params(a.track_params, "--track-params"),
            randomization=_randomization(a),
            track_repository=a.track_repository, track_revision=a.track_revision, repository_kind=kind,
            pipeline=a.pipeline,
            include_tasks=a.include_tasks or [], exclude_tasks=a.exclude_tasks or [], race_id=a.race_id,
            show_in_report=a.show_in_report,
            ignore_unused_track_params=a.ignore_unused_track_params, challenge=a.challenge,
            car=[c.strip() for c in a.car.split(",") if c.strip()], car_params=_params(a.car_params, "--car-params"),
            distribution_version=a.distribution_version, distribution_repository=a.distribution_repository,
            distribution_path=a.distribution_path, nodes=a.nodes, http_port=a.http_port, runtime_jdk=a.runtime_jdk,
            target_hosts=a.target_hosts, client_options=raw_client_options, test_mode=a.test_mode,
            offline=a.offline, corpus_dir=a.corpus_dir, generate_corpora=a.generate_corpora,
            on_error=a.on_error, max_error_rate=a.max_error_rate,
            user_tags=_kv_list(a.user_tag, "--user-tag"), report_format=a.report_format,
            report_file=a.report_file, keep_cluster=a.keep_cluster or a.preserve_install,
            worker_processes=a.worker_processes,
            load_driver=load_driver, load_driver_hosts=driver_hosts, progress=not a.quiet,
            telemetry=[d.strip() for d in (a.telemetry or "").split(",") if d.strip()],
            telemetry_params=_params(a.telemetry_params, "--telemetry-params"), telemetry_profile=a.telemetry_profile,
            enable_driver_profiling=a.enable_driver_profiling,
            topology=a.topology, yes=a.yes, max_instances=a.max_instances, pinning=a.pinning,
            distribution=a.distribution, plugins=a.plugins or [], redline=a.redline,
            elasticsearch_plugins=a.elasticsearch_plugins or [], opensearch_plugins=a.opensearch_plugins or [])
    except ValidationError as e:
        err = e.errors()[0]
        raise ConfigError(f"--{str(err['loc'][0]).replace('_', '-')}: {err['msg']}") from None
    _check_provisioning_flags(opts, a.plugin_params)
    if a.report_format in MACHINE_FORMATS:  # stdout carries the document only; what the race says goes to stderr
        result = run_race(opts, console=Console(stderr=True, soft_wrap=True, emoji=False))
        from bench.trials.open import open_store

        with open_store() as store:
            trial = store.get_trial(result.trial_id)
        print(_machine_report(trial, result.summary, a.report_format), end="")
        return _race_exit_code(result, opts.max_error_rate)
    result = run_race(opts, console=console)
    from bench.results.summary import status_label

    console.print()
    console.print(_terminal_report(result.summary, result.report, a, console), highlight=False, markup=False,
                  soft_wrap=True)
    console.print(f"\nTrial [bold]{result.trial_id}[/bold] stored ({status_label(result.status, result.summary)}).",
                  highlight=False)
    return _race_exit_code(result, opts.max_error_rate)


def _race_exit_code(result: RaceResult, max_error_rate: float | None) -> int:
    """The race's exit code in every report format, with its one line on stderr (docs: exit codes)."""
    from bench.results.exit_status import EXIT_FAILED, run_exit_code

    if result.store_refused:
        return EXIT_FAILED  # its line was printed when the store was closed
    code, line = run_exit_code(result.summary, max_error_rate)
    if line is not None:
        stderr = Console(stderr=True, soft_wrap=True, emoji=False)
        stderr.print(f"error: trial {result.trial_id}: {redact.redact_text(line)} (exit {code})",
                     highlight=False, markup=False, style="red")
    return code


def _check_provisioning_flags(opts: RaceOptions, plugin_params: str | None) -> None:
    """Bad --distribution/--plugin/--*-plugins values fail before a trial is created."""
    from bench.provision.overrides import named_plugins, parse_distribution, parse_plugins
    from bench.provision.plugin_names import refuse_plugin_params

    refuse_plugin_params(plugin_params)
    given = [flag for flag, value in (("--distribution", opts.distribution), ("--plugin", opts.plugins),
                                      ("--elasticsearch-plugins", opts.elasticsearch_plugins),
                                      ("--opensearch-plugins", opts.opensearch_plugins)) if value]
    if not given:
        return
    if opts.target_hosts:
        raise ConfigError(f"{', '.join(given)}: for clusters bench starts, not --target-hosts (install plugins into "
                          f"existing clusters yourself; the trial records the plugins each cluster runs)")
    parse_distribution(opts.distribution, opts.distribution_version)
    parse_plugins(opts.plugins)
    named_plugins(opts.elasticsearch_plugins, opts.opensearch_plugins)


def _loadgen(a: argparse.Namespace, console: Console) -> int:
    from bench.loadgen.run import LoadgenOptions, run_loadgen

    load_driver, driver_hosts = _load_driver(a)
    raw_client_options = _params(a.client_options, "--client-options")
    for key in ("basic_auth_password", "api_key"):
        if raw_client_options.get(key):
            redact.register_secret(str(raw_client_options[key]))
    try:
        opts = LoadgenOptions(config=a.config, concurrency=a.concurrency, duration=a.duration, rate=a.rate,
                              limit=a.limit, compress=a.compress, target_hosts=a.target_hosts,
                              client_options=raw_client_options, user_tags=_kv_list(a.user_tag, "--user-tag"),
                              report_format=a.report_format, worker_processes=a.worker_processes,
                              load_driver=load_driver, load_driver_hosts=driver_hosts, progress=not a.quiet)
    except ValidationError as e:
        err = e.errors()[0]
        flag = {"concurrency": "-c", "duration": "-d", "rate": "-r", "limit": "-l"}.get(str(err["loc"][0]),
                                                                                     f"--{err['loc'][0]}")
        raise ConfigError(f"{flag}: {err['msg']}") from None
    result = run_loadgen(opts, console=console)
    console.print()
    console.print(result.loadgen_report, highlight=False, markup=False, soft_wrap=True)
    console.print(result.report, highlight=False, markup=False, soft_wrap=True)
    console.print(f"\nTrial [bold]{result.trial_id}[/bold] stored ({result.status}).", highlight=False)
    return 0


def _info(a: argparse.Namespace, console: Console) -> int:
    """Exit 0 whenever the track can be read, runnable or not: each task bench cannot run says so and why."""
    from bench.track.info import render_info
    from bench.track.loader import load_track

    _osb_flags(a)
    if not a.track and not a.track_path:
        raise ConfigError("bench info needs --track=NAME (see 'bench list tracks'), --track-path=DIR, --workload=NAME "
                          "or --workload-path=DIR")
    resolved = _resolve(a)
    track = load_track(resolved.dir, _params(a.track_params, "--track-params"), ignore_unused=True,
                       offline=a.offline)
    console.print(render_info(track, a.challenge, resolved.source), highlight=False, markup=False, soft_wrap=True)
    return 0


def _list(a: argparse.Namespace, console: Console) -> int:
    from tabulate import tabulate

    if a.what == "tracks":
        _list_tracks(a, console)
    elif a.what == "workloads":
        _list_workloads(a, console)
    elif a.what == "telemetry":
        from bench.telemetry import device_table
        from bench.telemetry.config import available_profiles, load_profile

        console.print(tabulate(device_table(), headers=["Device", "Parameter", "Default", "Description"]),
                      markup=False)
        profiles = [(n, ",".join(load_profile(n).devices), load_profile(n).description) for n in available_profiles()]
        if profiles:
            console.print("\n" + tabulate(profiles, headers=["Profile", "Devices", "Description"]), markup=False)
    elif a.what == "annotations":
        from bench.reporting.annotate import list_annotations

        return list_annotations(a, lambda line: console.print(line, markup=False, highlight=False))
    elif a.what == "cars":
        from bench.provision.car import list_cars

        console.print(tabulate(list_cars(), headers=["Name", "Type", "Description"]), markup=False)
    else:
        from bench.results.summary import status_label
        from bench.trials.filter import race_filter, races_json
        from bench.trials.listing import render_trial_list
        from bench.trials.open import open_store

        wanted = race_filter(a)
        with open_store() as store:
            # Filtered after reading: the stores list newest first; a filter reads them all (at most 10,000).
            trials = store.list_trials(10_000 if wanted.active() else a.limit)
            trials = [t for t in trials if wanted.matches(t)][:a.limit]
            statuses = {t.id: status_label(t.status, store.summary(t.id)) for t in trials}
            # With a metrics store, where each trial is: only in the local file, in the store, or both.
            where = store.locations([t.id for t in trials]) if hasattr(store, "locations") else {}
            statuses = {k: f"{v} [{where[k]}]" if k in where else v for k, v in statuses.items()}
            unreachable = getattr(store, "unreachable", None)
        if unreachable:
            console.print(f"note: {redact.redact_text(unreachable)}: local trials only", markup=False, highlight=False)
        if a.format == "json":
            console.print(races_json(trials, statuses), markup=False, highlight=False, soft_wrap=True)
            return 0
        console.print(render_trial_list(trials, statuses, console.width if console.is_terminal else None),
                      markup=False, highlight=False, soft_wrap=True)
    return 0


def _resolve(a: argparse.Namespace) -> Any:
    """The track --track/--track-path/--track-repository name, for commands without a cluster: a repository's
    branch follows --distribution-version when given, else it is the repository's default branch."""
    from bench.track.repository import TRACKS, WORKLOADS
    from bench.track.resolve import resolve_track

    kind = WORKLOADS if (getattr(a, "workload", None) or getattr(a, "workload_repository", None)
                         or getattr(a, "workload_revision", None)) else TRACKS
    return resolve_track(a.track, a.track_path, repository=a.track_repository, revision=a.track_revision,
                         version=lambda: a.distribution_version, offline=a.offline, progress=not a.quiet, kind=kind)


def _list_tracks(a: argparse.Namespace, console: Console) -> None:
    """bench's built-in tracks, then the track repository's (the default one unless --track-repository names
    another). The default repository out of reach is a note (the built-in tracks are still listed); a named one
    is an error."""
    from tabulate import tabulate

    from bench.track.loader import list_tracks
    from bench.track.repository import DEFAULT_REPOSITORY, TrackRepository
    from bench.track.resolve import repository_listing

    headers = ["Name", "Description", "Challenges", "Default"]
    if not a.track_repository and not a.track_revision:
        rows = [(t.name, t.description, ", ".join(t.challenges), t.default_challenge) for t in list_tracks()]
        console.print("bench's built-in tracks (generated data):\n" + tabulate(rows, headers=headers), markup=False,
                      highlight=False)
    name = a.track_repository or DEFAULT_REPOSITORY
    try:
        repo = TrackRepository.open(name, revision=a.track_revision, version=a.distribution_version,
                                    offline=a.offline, progress=not a.quiet)
    except BenchError as e:
        if a.track_repository or a.track_revision:
            raise
        console.print(f"\nnote: track repository {name}: {redact.redact_text(str(e))}", markup=False,
                      highlight=False)
        return
    rows = [(t.name, t.description, ", ".join(t.challenges), t.default_challenge) for t in repository_listing(repo)]
    source = repo.source()
    console.print(f"\nTrack repository {name} ({source.url}, {source.branch} at {(source.revision or '?')[:12]}); "
                  f"a name shared with a built-in track needs --track-repository={name}:\n"
                  + tabulate(rows, headers=headers), markup=False, highlight=False)


def _list_workloads(a: argparse.Namespace, console: Console) -> None:
    """OSB's 'list workloads': the workload repository's workloads (default: opensearch-benchmark-workloads)."""
    from tabulate import tabulate

    from bench.track.repository import DEFAULT_REPOSITORY, WORKLOADS, TrackRepository
    from bench.track.resolve import repository_listing

    _osb_flags(a)
    name = a.track_repository or DEFAULT_REPOSITORY
    repo = TrackRepository.open(name, revision=a.track_revision, version=a.distribution_version, offline=a.offline,
                                progress=not a.quiet, kind=WORKLOADS)
    rows = [(t.name, t.description, ", ".join(t.challenges), t.default_challenge) for t in repository_listing(repo)]
    source = repo.source()
    console.print(f"Workload repository {name} ({source.url}, {source.branch} at {(source.revision or '?')[:12]}):\n"
                  + tabulate(rows, headers=["Name", "Description", "Test procedures", "Default"]), markup=False,
                  highlight=False)


def _render_track(a: argparse.Namespace, console: Console) -> int:
    """Rally's render-track: the track.json as rendered with the track parameters, as indented JSON."""
    from bench.track.loader import render_track_json

    _osb_flags(a)
    if not a.track and not a.track_path:
        raise ConfigError("bench render-track needs --track=NAME, --track-path=DIR, --workload=NAME or "
                          "--workload-path=DIR")
    resolved = _resolve(a)
    text = render_track_json(resolved.dir, _params(a.track_params, "--track-params"))
    if a.output_path:
        try:
            Path(a.output_path).expanduser().write_text(text + "\n", encoding="utf-8")
        except OSError as e:
            raise ConfigError(f"--output-path {a.output_path}: cannot write: {e.strerror}") from None
        console.print(f"Rendered track {a.track or resolved.dir.name} written to {a.output_path}.", markup=False,
                      highlight=False)
    else:
        sys.stdout.write(text + "\n")
    return 0


def _delete(a: argparse.Namespace, console: Console) -> int:
    if a.what == "annotation":
        from bench.reporting.annotate import delete_annotations

        return delete_annotations(a, lambda line: console.print(line, markup=False, highlight=False))
    from bench.trials.delete import delete_races

    for line in delete_races(a.id, dry_run=a.dry_run):
        console.print(line, markup=False, highlight=False)
    return 0


def _terminal_report(summary: Any, report: str, a: argparse.Namespace, console: Console) -> str:
    """What the terminal gets: the headline and notes, the full table with --all (files always get it)."""
    if summary is None or a.report_format != "table":
        return report
    from bench.results.report import render_summary

    full = a.all or getattr(a, "show_in_report", "available") != "available"  # Rally's --show-in-report=all
    return render_summary(summary, "table", full=full, width=max(60, console.width))


MACHINE_FORMATS = ("json", "csv")


def _machine_report(trial: Any, summary: Any, fmt: str) -> str:
    """A trial as json (its facts beside its rows, notes and errors) or csv (the rows)."""
    import json

    from bench.reporting.context import trial_facts
    from bench.results.report import HEADERS, render_summary, summary_document

    if fmt == "csv":
        return render_summary(summary, "csv") if summary is not None else ",".join(HEADERS) + "\n"
    doc = summary_document(summary) if summary is not None else {"rows": [], "notes": [], "errors": []}
    return json.dumps(redact.redact({"trial": trial_facts(trial, summary), **doc}), indent=2) + "\n"


def _show(a: argparse.Namespace, console: Console) -> int:
    from bench.results.report import render_summary
    from bench.results.summary import status_label
    from bench.trials.open import open_store
    from bench.trials.summary import stored_summary

    with open_store() as store:
        trial = store.get_trial(a.trial)
        summary = stored_summary(store, trial.id)
    if a.report_format in MACHINE_FORMATS:  # the document and nothing else: it must parse
        print(_machine_report(trial, summary, a.report_format), end="")
        return 0
    console.print(f"Trial {trial.id}: {trial.track}/{trial.challenge}, {status_label(trial.status, summary)}, started "
                  f"{trial.start_time:%Y-%m-%d %H:%M:%S} UTC" + (f", error: {trial.error}" if trial.error else ""),
                  highlight=False, markup=False)
    from bench.provision.facts_text import distribution_text
    from bench.track.synthetic_corpora import corpora_text

    if (synthetic := corpora_text(trial.corpora)) is not None:
        console.print(synthetic, highlight=False, markup=False)

    for c in trial.clusters:  # what each cluster bench started was installed from and ran on
        if (text := distribution_text(c)) is not None:
            console.print(f"Cluster {c.get('name')}: {c.get('engine')} {c.get('version')}, car {c.get('car', '?')}, "
                          f"{text}", highlight=False, markup=False)
    if summary is None:
        console.print("No samples were stored for this trial.")
        return 0
    console.print(_terminal_report(summary, render_summary(summary, a.report_format), a, console), highlight=False,
                  markup=False, soft_wrap=True)
    return 0


def _configure_store(a: argparse.Namespace) -> None:
    """--metrics-store for this process; without it the environment or bench.ini decide (when a store is used)."""
    from bench.trials.metrics_store import config

    if getattr(a, "metrics_store", None):
        config.configure(config.from_cli(a.metrics_store, getattr(a, "metrics_store_options", None)))
    elif getattr(a, "metrics_store_options", None):
        raise ConfigError("--metrics-store-options needs --metrics-store URL")
    else:
        config.reset()


def _store(a: argparse.Namespace, console: Console) -> int:
    from bench.trials.metrics_store.config import configured_store
    from bench.trials.metrics_store.pusher import push_command

    cfg = configured_store()
    if cfg is None:
        raise ConfigError("bench store push needs a metrics store: --metrics-store URL, BENCH_METRICS_STORE or "
                          "[reporting] datastore.* in $BENCH_HOME/bench.ini")
    lines, failed = push_command(cfg, a.trials)
    for line in lines:
        console.print(line, highlight=False, markup=False)
    return 1 if failed else 0


def _stop(a: argparse.Namespace, console: Console) -> int:
    from bench.provision.stop import stop_trial
    from bench.trials.open import open_store
    from bench.util.home import trials_dir

    with open_store() as store:
        trial = store.get_trial(a.trial)
    for line in stop_trial(trial.id, trials_dir() / trial.id):
        console.print(line, highlight=False, markup=False)
    return 0


def _setup_logging() -> Path:
    home = bench_home()
    path = home / "logs" / "bench.log"
    # A log file that later cannot be written (disk full) must not print a traceback per record; the
    # failure that matters reaches the user through the code that hit it.
    logging.raiseExceptions = False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path)
    except OSError as e:
        raise storage_error(home, e) from None
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    redact.install_log_filter()
    return path


def _ensure_redline() -> None:
    """A --redline (or an experiment's redline key) that no hook drives would run the task as declared and report no
    redline at all, and a stored redline would not be shown: load the extension even where its entry point is not
    installed (a source checkout on PYTHONPATH, an install older than the extension). Idempotent by name."""
    from bench import extensions
    from bench.redline.extension import setup as redline_setup

    extensions.load()
    extensions.register("redline", redline_setup)


def _ensure_ray(flag: str) -> None:
    """--load-driver=ray:... where the Ray extension's entry point is not installed (a source checkout on
    PYTHONPATH, an install older than the extension): register it in-process, idempotent by name. Without
    Ray itself (the ``ray`` extra): one line naming the pip install, before anything starts."""
    from bench import extensions
    from bench.ray.extension import setup as ray_setup
    from bench.ray.require import require_ray

    require_ray(flag)
    extensions.load()
    extensions.register("ray", ray_setup)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # soft_wrap: an error (or a trial id) stays one line however narrow the terminal is; emoji=False: user
    # text such as host 'a:b:c' must not turn ':b:' into an emoji.
    console = Console(soft_wrap=True, emoji=False)
    err = Console(stderr=True, soft_wrap=True, emoji=False)
    try:
        _setup_logging()
        _configure_store(args)
        if args.command in ("race", "experiment", "show", "compare", "report", "history"):
            _ensure_redline()
        if args.command == "race":
            return _race(args, console)
        if args.command == "loadgen":
            return _loadgen(args, console)
        if args.command == "list":
            return _list(args, console)
        if args.command == "info":
            return _info(args, console)
        if args.command == "render-track":
            return _render_track(args, console)
        if args.command == "delete":
            return _delete(args, console)
        if args.command == "cloud":
            from bench.cloud.cli import run_cloud

            return run_cloud(args, console)
        if args.command == "show":
            return _show(args, console)
        if args.command == "stop":
            return _stop(args, console)
        if args.command == "store":
            return _store(args, console)
        if args.command == "add":
            from bench.reporting.annotate import add_annotation

            return add_annotation(args, lambda line: console.print(line, markup=False, highlight=False))
        if args.command in ("compare", "report", "experiment", "history"):
            from bench.reporting.commands import run_report_command

            return run_report_command(args, console)
        raise ConfigError(f"unknown command {args.command}")
    except BenchError as e:
        if logging.getLogger().handlers:  # else logging's last-resort handler would print the line twice
            log.error("%s", e)
        err.print(f"error: {redact.redact_text(str(e))}", highlight=False, markup=False, style="red")
        return e.exit_code
    except KeyboardInterrupt:
        err.print("[bold red]interrupted[/bold red]")
        return 130
    except MemoryError:
        err.print(f"error: {out_of_memory('bench', 'raise the limit or run it where more memory is free')}",
                  highlight=False, markup=False, style="red")
        return 1
    except (SyntaxError, SystemError) as e:
        # Importing bench's own modules under an address-space limit: CPython reports running out of memory while
        # compiling or importing as a syntax error or "error return without exception set" (bench's sources are
        # compiled and linted in CI), so it is memory, not code.
        own = isinstance(e, SystemError) or (e.filename and Path(e.filename).resolve().is_relative_to(_PACKAGE))
        if not (address_space_limit() and own):
            raise
        err.print(f"error: {out_of_memory('bench', 'raise the limit or run it where more memory is free')}",
                  highlight=False, markup=False, style="red")
        return 1
    except RuntimeError as e:
        if "can't start new thread" not in str(e):  # CPython's only sign of it: no type of its own
            raise
        err.print(f"error: {no_thread('bench')}", highlight=False, markup=False, style="red")
        return 1
    except OSError as e:
        # A read-only or full disk under any code path is the user's to fix, not a bug to show a traceback for.
        if e.errno not in STORAGE_ERRNOS:
            raise
        msg = str(storage_error(e.filename or bench_home_path(), e, "path"))
        err.print(f"error: {msg}", highlight=False, markup=False, style="red")
        return 1


if __name__ == "__main__":
    sys.exit(main())
