"""Every ``bench race`` option, declared once: its flags (with Rally's and OpenSearch Benchmark's spellings), help,
type and the ``RaceOptions`` field it sets, what makes it moot, and how it reaches a race that runs on another
machine (a cloud topology's driver host).

Generated from this table: the ``race`` parser (``add_race_flags``), the namespace-to-options mapping
(``race_fields``), the options a topology makes moot (``moot_when``, ``applying_options``), the remote race's
command line (``remote_args``) and its option groups (``remote_groups``), and the docs' options table
(``options_table``). ``tests/race/test_flags.py`` checks that each of them covers every field and flag.

Defaults live on ``RaceOptions``' fields; a flag that maps one to one onto a field shows that default in
``--help``."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from bench.race.options import RaceOptions
from bench.util import redact
from bench.util.errors import ConfigError

# How an option reaches a race that runs on another machine (bench/race/cluster_source.py's take_over):
# given: on that race's command line; here: applied by this bench (the clusters, the report, the exit code);
# moot: a topology decides it; refused: one line before anything starts.
Remote = Literal["given", "here", "moot", "refused"]
# What a namespace value becomes on the field (no convert: taken as parsed).
Convert = Callable[[argparse.Namespace], Any]


@dataclass(frozen=True)
class Flag:
    """One command-line flag: ``names[0]`` is bench's; the others are Rally's or OSB's spellings of it."""

    names: tuple[str, ...]
    help: str
    dest: str = ""  # the namespace attribute; default: from names[0]
    kwargs: dict[str, Any] = field(default_factory=dict)  # argparse's type, choices, metavar, action, nargs, const
    hidden: bool = False  # accepted, not listed (Rally's spellings of a default)

    @property
    def attr(self) -> str:
        return self.dest or self.names[0].lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class RaceOption:
    """One ``RaceOptions`` field and the flags that set it."""

    field: str
    flags: tuple[Flag, ...]
    remote: Remote
    doc: str = ""  # the options table's text; default: the first flag's help
    moot_with: tuple[str, ...] = ()  # fields that, given, make this one not apply (stored trials leave it out)
    refused: str = ""  # remote == "refused": what to do instead
    convert: Convert | None = None
    # The remote race's arguments for this option's value (default: the flag and the value as typed).
    render: Callable[[RaceOptions], list[str]] | None = None
    # A remote race gets the value as a file or folder its caller puts there (a folder, a JSON object).
    as_file: bool = False

    @property
    def flag(self) -> str:
        return self.flags[0].names[0] if self.flags else ""


def _f(*names: str, help: str, dest: str = "", hidden: bool = False, **kwargs: Any) -> Flag:
    return Flag(names, help, dest, kwargs, hidden)


def kv_list(values: list[str] | None, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values or []:
        for part in filter(None, (p.strip() for p in item.split(","))):
            k, sep, v = part.partition(":")
            if not sep or not k:
                raise ConfigError(f"{what}: '{part}' is not key:value")
            out[k.strip()] = v.strip()
    return out


def _params(attr: str, what: str) -> Convert:
    def convert(a: argparse.Namespace) -> dict[str, Any]:
        from bench.track.track_params import parse_params

        return parse_params(getattr(a, attr), what=what)

    return convert


def _comma(attr: str) -> Convert:
    """A comma-separated list; None when the flag is not given, so the field keeps its default."""
    return lambda a: None if getattr(a, attr) is None else [x.strip() for x in getattr(a, attr).split(",")
                                                             if x.strip()]


def _or_list(attr: str) -> Convert:
    return lambda a: getattr(a, attr) or []


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


def _threshold_arg(t: Any) -> str:
    """A threshold as --threshold takes it again."""
    return t.text + (",abort-on-fail" if t.abort_on_fail else "") + (
        f",delay-abort-eval={t.delay_abort_eval_s:g}s" if t.delay_abort_eval_s else "")


def _live_html(a: argparse.Namespace) -> Any:
    from bench.race.live_html import checked_path

    return checked_path(a.live_html)


def _repository_flag(kind_attr: str) -> Callable[[RaceOptions], str]:
    """The flag of a track/workload repository option as the remote race spells it for the options' kind."""
    from bench.track.repository import KINDS

    return lambda o: str(getattr(KINDS[o.repository_kind], kind_attr))


def _render_as(flag: Callable[[RaceOptions], str], value: Callable[[RaceOptions], Any]) -> \
        Callable[[RaceOptions], list[str]]:
    def render(o: RaceOptions) -> list[str]:
        v = value(o)
        return [flag(o), str(v)] if v not in (None, "") else []

    return render


_TRACK_REPO_HELP = ("the track repository --track names a track of: default (elastic/rally-tracks) or a name with "
                    "[tracks] NAME.url in $BENCH_HOME/bench.ini (a git URL, file:// or a path)")
_TRACK_REV_HELP = ("a branch, tag or commit of the track repository (default: the branch fitting the cluster's "
                   "version, as Rally chooses it)")
_ELSEWHERE = "drop it, or race a local topology or --target-hosts"
_STARTING = ("target_hosts",)  # existing clusters: bench starts nothing, so nothing about starting one applies
_TOPOLOGY = ("target_hosts", "topology")  # a topology names each cluster's engine, version, car and nodes itself
_VERSIONED = ("target_hosts", "topology", "distribution", "distribution_path")


RACE_OPTIONS: tuple[RaceOption, ...] = (
    RaceOption("track", (_f("--track", help="a track name: bench's built-in ones, else one in the track repository "
                                            "(see 'bench list tracks')"),), "given",
               doc="a built-in track (`bench list tracks`) or one of the track repository",
               render=_render_as(_repository_flag("name_flag"), lambda o: o.track)),
    RaceOption("track_path", (_f("--track-path", "--workload-path", dest="track_path",
                                 help="a folder containing track.json (e.g. an unchanged Rally track) or an OpenSearch "
                                      "Benchmark workload.json (--workload-path, OSB's flag)"),), "given", as_file=True),
    RaceOption("track_repository", (_f("--track-repository", metavar="NAME", help=_TRACK_REPO_HELP),), "given",
               render=_render_as(_repository_flag("flag"), lambda o: o.track_repository)),
    RaceOption("track_revision", (_f("--track-revision", metavar="REV", help=_TRACK_REV_HELP),), "given",
               render=_render_as(_repository_flag("revision_flag"), lambda o: o.track_revision)),
    RaceOption("repository_kind", (
        _f("--workload", metavar="NAME", help="an OpenSearch Benchmark workload of the workload repository (OSB's "
                                              "flag)"),
        _f("--workload-repository", metavar="NAME",
           help="the workload repository --workload names a workload of: default "
                "(opensearch-project/opensearch-benchmark-workloads) or a name with [workloads] NAME.url in "
                "$BENCH_HOME/bench.ini"),
        _f("--workload-revision", metavar="REV",
           help="a branch, tag or commit of the workload repository (default: the branch fitting the cluster's "
                "version, as OSB chooses it)")), "given",
               doc="OSB's spellings of `--track`, `--track-repository` and `--track-revision`: a workload of the "
                   "workload repository",
               convert=lambda a: osb_flags(a), render=lambda o: []),  # the kind chooses the track and repository flags' spelling
    RaceOption("include_tasks", (_f("--include-tasks", help="only these tasks: names, type:OPERATION-TYPE, tag:TAG, "
                                                          "comma-separated"),), "given",
               convert=lambda a: a.include_tasks or [], render=lambda o: ["--include-tasks", ",".join(o.include_tasks)]),
    RaceOption("exclude_tasks", (_f("--exclude-tasks", help="all tasks but these: names, type:OPERATION-TYPE, "
                                                          "tag:TAG"),), "given",
               convert=lambda a: a.exclude_tasks or [], render=lambda o: ["--exclude-tasks", ",".join(o.exclude_tasks)]),
    RaceOption("race_id", (_f("--race-id", "--test-run-id", dest="race_id",
                              help="the trial's id (Rally's race id, OSB's test run id: a UUID or hex; default: a new "
                                   "one)"),), "here"),
    RaceOption("pipeline", (_f("--pipeline", help="benchmark-only (existing hosts: --target-hosts, default "
                                                  "127.0.0.1:9200) or from-distribution (bench starts the cluster); "
                                                  "default: from --target-hosts"),), "here"),
    RaceOption("track_params", (_f("--track-params", "--workload-params", dest="track_params",
                                   help="k:v,k2:v2 or a JSON file"),), "given",
               doc="`k:v,k2:v2` or a JSON file; unused params are an error unless `--ignore-unused-track-params`",
               convert=_params("track_params", "--track-params"), as_file=True),
    RaceOption("ignore_unused_track_params", (_f("--ignore-unused-track-params", action="store_true",
                                                 help="track parameters the track does not use are no error"),),
               "given"),
    RaceOption("randomization", (
        _f("--randomization-enabled", action="store_true",
           help="OSB's query randomization: search tasks get new range query values from the workload's standard "
                "value sources"),
        _f("--randomization-repeat-frequency", type=float, default=0.3,
           help="share of searches that repeat one of the standard values (default 0.3)"),
        _f("--randomization-n", type=int, default=5000, help="how many standard values (default 5000)"),
        _f("--randomization-alpha", type=float, default=1.0,
           help="Zipf exponent of which standard value repeats (default 1)")), "refused", refused=_ELSEWHERE,
               convert=_randomization),
    RaceOption("challenge", (_f("--challenge", "--test-procedure", dest="challenge",
                                help="the challenge (an OSB workload's test procedure) to run; default: the track's "
                                     "default"),), "given"),
    RaceOption("car", (_f("--car", help="car and mixins, e.g. defaults,4gheap,security"),), "moot",
               moot_with=_TOPOLOGY, convert=_comma("car")),
    RaceOption("car_params", (_f("--car-params", help="k:v,... or a JSON file: values for car config variables"),),
               "moot", moot_with=_TOPOLOGY, convert=_params("car_params", "--car-params")),
    RaceOption("distribution_version", (_f("--distribution-version", help="the engine's version"),), "moot",
               moot_with=_VERSIONED),
    RaceOption("distribution", (_f("--distribution", help="ENGINE:VERSION of the clusters bench starts, e.g. "
                                                        "opensearch:2.19.1 (overrides --distribution-version and a "
                                                        "topology's engine/version)"),), "here",
               moot_with=_STARTING),
    RaceOption("plugins", (_f("--plugin", action="append", dest="plugins", metavar="[CLUSTER:]PATH",
                              help="install a plugin zip or folder into every node (of CLUSTER only when given); "
                                   "repeatable"),), "here", moot_with=_STARTING, convert=_or_list("plugins")),
    RaceOption("elasticsearch_plugins", (_f("--elasticsearch-plugins", metavar="NAME[:VERSION],...",
                                            help="official Elasticsearch plugins, downloaded (verified, cached) and "
                                                 "installed into every Elasticsearch node bench starts; VERSION "
                                                 "defaults to the cluster's (Rally's flag)"),), "here",
               moot_with=_STARTING, convert=_or_list("elasticsearch_plugins")),
    RaceOption("opensearch_plugins", (_f("--opensearch-plugins", metavar="NAME[:VERSION],...",
                                         help="the same for OpenSearch clusters (OpenSearch Benchmark's flag)"),),
               "here", moot_with=_STARTING, convert=_or_list("opensearch_plugins")),
    RaceOption("distribution_repository", (_f("--distribution-repository",
                                              help="release (default: the official archive with its bundled JDK), "
                                                   "maven-integ-test (Maven Central's minimal build), a name defined "
                                                   "in bench.ini [distributions], or a URL template with {{VERSION}} "
                                                   "({{OSNAME}}, {{ARCH}})"),), "here", moot_with=_STARTING),
    RaceOption("runtime_jdk", (_f("--runtime-jdk", metavar="N|bundled",
                                  help="the JDK the nodes run on: bundled (the default where the archive has one) or "
                                       "a major version N of a system JDK (JAVA<N>_HOME, JAVA_HOME, ...), as Rally's "
                                       "flag"),), "here", moot_with=_STARTING),
    RaceOption("distribution_path", (_f("--distribution-path", help="a local archive (zip/tar.gz) or unpacked "
                                                                  "install"),), "refused", moot_with=_STARTING,
               refused="it is a build on this machine; drop it and name the version in the topology"),
    RaceOption("nodes", (_f("--nodes", type=int, help="nodes of the local cluster"),), "moot", moot_with=_TOPOLOGY),
    RaceOption("http_port", (_f("--http-port", type=int, help="first HTTP port of the local cluster (default: free "
                                                            "ports)"),), "moot", moot_with=_TOPOLOGY),
    RaceOption("target_hosts", (_f("--target-hosts", help="benchmark existing clusters: host:port,... or "
                                                        "name:host:port,... or JSON"),), "here"),
    RaceOption("client_options", (_f("--client-options", help="k:v,... or JSON file: basic_auth_user, "
                                                            "basic_auth_password, api_key, use_ssl, verify_certs, "
                                                            "ca_certs, client_cert, client_key, timeout, "
                                                            "http_compress"),), "given",
               convert=_params("client_options", "--client-options"), as_file=True),
    RaceOption("test_mode", (_f("--test-mode", action="store_true",
                                help="a tiny, fast version of the track to check it works"),), "given",
               doc="a tiny, fast version of the track to check it works: 1,000 docs per corpus, no warmup, ≤ 10 s "
                   "time periods, one iteration per client, no throttling"),
    RaceOption("offline", (_f("--offline", action="store_true",
                              help="never download corpora (use local copies only) nor install track "
                                   "dependencies"),), "given"),
    RaceOption("corpus_dir", (_f("--corpus-dir", help="a folder with local copies of corpus files "
                                                     "(<dir>/<corpus>/<file> or <dir>/<file>), looked at first "
                                                     "(Rally's local.dataset.cache)"),), "refused",
               refused="it is a folder of this machine; drop it (the driver host downloads or generates the "
                       "corpora)"),
    RaceOption("generate_corpora", (_f("--generate-corpora", nargs="?", const=1, type=int, metavar="SEED",
                                       help="generate every corpus from the track's own index mappings (seeded, "
                                            "default seed 1) instead of downloading it: the trial is stored and "
                                            "shown as synthetic"),), "given",
               render=lambda o: [f"--generate-corpora={o.generate_corpora}"]),
    RaceOption("on_error", (_f("--on-error", choices=["continue", "continue-on-network", "abort"],
                               help="after a failed request: continue (also after connection errors; a dead node "
                                    "stops the race), continue-on-network (Rally's name for the same here), "
                                    "abort"),), "given"),
    RaceOption("max_error_rate", (_f("--max-error-rate", metavar="RATE",
                                     help="exit 5 when a task's failed measured requests are more than RATE of its "
                                          "requests (0.01 or 1%%; 0: any failed request), as a k6 threshold; the "
                                          "trial is stored either way"),), "here"),
    RaceOption("thresholds", (_f("--threshold", action="append", dest="threshold", metavar="SCOPE:METRIC<LIMIT",
                                 help="pass/fail threshold, k6's: SCOPE is a task, * or an extension's scope (ccr), "
                                      "e.g. 'index-append:p99_latency<800ms', '*:error_rate<1%%', 'search:p(95)<500'; "
                                      "add ',abort-on-fail' to stop the race when it fails; exit 99 when one fails; "
                                      "repeatable"),), "given",
               doc="a pass/fail threshold (k6's): `SCOPE:METRIC<LIMIT`, SCOPE a task, `*` or an extension's scope "
                   "(`ccr:lag_p99<5s`); `,abort-on-fail` stops the race when it fails; a race that misses one exits "
                   "99 ([thresholds](../guide/thresholds.md)); repeatable",
               convert=lambda a: a.threshold or [],
               render=lambda o: [x for t in o.thresholds if t.origin == "--threshold"
                                 for x in ("--threshold", _threshold_arg(t))]),
    RaceOption("user_tags", (_f("--user-tag", "--user-tags", action="append", dest="user_tag",
                                help="k:v (repeatable or comma-separated)"),), "given",
               convert=lambda a: kv_list(a.user_tag, "--user-tag"),
               render=lambda o: ["--user-tag", ",".join(f"{k}:{v}" for k, v in o.user_tags.items())]),
    RaceOption("report_format", (_f("--report-format", choices=["table", "markdown", "csv", "json", "junit"],
                                    help="how the summary is printed (junit: a JUnit XML of the thresholds for "
                                         "CI)"),), "here"),
    RaceOption("report_file", (_f("--report-file", help="also write the summary to this file"),), "here"),
    RaceOption("show_in_report", (_f("--show-in-report", choices=["available", "all-percentiles", "all"],
                                     help="Rally's: all and all-percentiles print the full table (as --all); "
                                          "available: the headline"),), "here"),
    RaceOption("keep_cluster", (
        _f("--keep-cluster", action="store_true", help="leave the local cluster running ('bench stop TRIAL' stops "
                                                       "it)"),
        _f("--preserve-install", action="store_true",
           help="Rally's: keep the cluster and its data; bench keeps it running (as --keep-cluster)")), "refused",
               doc="leave the local cluster running after the race; `bench stop <trial-id-prefix>` stops it later "
                   "(SIGTERM, SIGKILL after 30 s), keeps its logs with the trial and deletes its node folders. With "
                   "security on, the keep line names the 0600 file holding the generated `user:password` (never the "
                   "password itself). `--preserve-install` is Rally's spelling",
               moot_with=_STARTING, convert=lambda a: a.keep_cluster or a.preserve_install,
               refused="its machines are deleted after the race; drop it, or race a local topology to keep the "
                       "clusters"),
    RaceOption("worker_processes", (_f("--worker-processes", type=int,
                                       help="load driver processes (clients are dealt out to them; default 1, with "
                                            "--load-driver=ray:... one per CPU of each Ray node)"),), "given"),
    RaceOption("load_driver", (
        _f("--load-driver", help="BACKEND:ADDRESS: drive from a distributed backend's workers instead of local "
                                 "processes, e.g. ray:auto or ray:HOST:PORT (needs bench[ray])"),
        _f("--ray-address", help="auto|HOST:PORT: the same as --load-driver=ray:ADDRESS")), "here",
               convert=lambda a: load_driver_of(a)[0]),
    RaceOption("load_driver_hosts", (_f("--load-driver-hosts", help="IP,...: drive only from the Ray nodes on these "
                                                                  "machines (Rally's flag; without --ray-address/"
                                                                  "--load-driver it means ray:auto)"),), "here",
               convert=lambda a: load_driver_of(a)[1]),
    RaceOption("topology", (_f("--topology", help="a topology file or a bundled example's name (topologies/: "
                                                  "ccr-local, ...): its clusters, locally or in a cloud"),), "here"),
    RaceOption("yes", (_f("--yes", action="store_true", help="with a cloud --topology: create machines without "
                                                             "asking"),), "here"),
    RaceOption("max_instances", (_f("--max-instances", type=int, help="with a cloud --topology: refuse more "
                                                                      "machines"),), "here"),
    RaceOption("progress", (_f("--quiet", action="store_true", default=argparse.SUPPRESS,
                               help="no progress display (also before the command: bench --quiet race)"),), "here",
               doc="no progress display: on a terminal, corpus preparation and cluster boot otherwise show a "
                   "spinner and each task a live table; off the terminal, a plain line every 10 s per task",
               convert=lambda a: not getattr(a, "quiet", False)),
    RaceOption("live_html", (_f("--live-html", metavar="PATH",
                                help="also show the live view as charts in a browser: a self-contained page written "
                                     "to PATH every second (it reloads itself), kept with the trial"),), "refused",
               doc="the live view (each task's throughput, latency p50/p90/p99 over the last 10 s, errors, and what "
                   "extensions add, e.g. CCR follower lag) also as charts: a self-contained HTML page at PATH, "
                   "rewritten every second while the race runs and reloading itself (open it from `file://`, no "
                   "server), its final state kept with the trial (`bench show TRIAL --live-html PATH` draws it "
                   "again). See the [live view](../guide/live-view.md)",
               refused="a cloud topology's race runs on its driver host, which cannot write the page here; drop it",
               convert=lambda a: _live_html(a)),
    RaceOption("telemetry", (_f("--telemetry",
                                help="telemetry devices, e.g. node-stats,ccr-stats,host (see 'bench list telemetry')"),),
               "here", convert=_comma("telemetry")),
    RaceOption("telemetry_params", (_f("--telemetry-params", help="k:v,... or a JSON file, e.g. "
                                                                "node-stats-sample-interval:5"),), "here",
               convert=_params("telemetry_params", "--telemetry-params")),
    RaceOption("telemetry_profile", (_f("--telemetry-profile", help="a profile from telemetry/ (e.g. ccr, default) "
                                                                    "or a YAML file"),), "here"),
    RaceOption("pinning", (_f("--pinning", metavar="off|auto|auto:N",
                              help="pin the clusters bench starts here and the load driver to disjoint CPU sets: "
                                   "auto divides the CPUs into one slot per cluster plus one for the driver (auto:N "
                                   "into N; the clusters take the first, the driver the last) when there are at "
                                   "least 4; default: a topology's own pinning"),), "here", moot_with=_STARTING),
    RaceOption("driver_cpus", (_f("--driver-cpus", metavar="LIST",
                                  help="run the load driver's worker processes on these CPUs (a Linux CPU list, as "
                                       "taskset -c takes: 1, 2-3,6) and bench's own process on the others, so "
                                       "neither waits for the other's core"),), "given",
               doc="run the load driver's local worker processes on these CPUs (a Linux CPU list as `taskset -c` "
                   "takes: `1`, `2-3,6`) and bench's own process (sample store, telemetry, live view) on the CPUs "
                   "no cluster and no worker is pinned to, so that an open-model schedule's requests do not wait "
                   "for a core bench itself holds. Refused beside a topology's `driver_cpus` or `--pinning`, which "
                   "pin the driver themselves, and with `--load-driver`. See the "
                   "[load model](../guide/load-model.md#giving-the-driver-its-own-cpus)"),
    RaceOption("enable_driver_profiling", (_f("--enable-driver-profiling", action="store_true",
                                              help="sample the load driver's worker processes (Python stacks, every "
                                                   "10 ms): a flame graph per worker kept with the trial "
                                                   "(profiles/driver/) and in HTML reports"),), "refused",
               refused=_ELSEWHERE),
    RaceOption("redline", (_f("--redline", help="task:NAME,p99:500ms[,errors:0.1%%,tolerance:5%%,warmup:10s,"
                                                "measure:30s,cooldown:5s,start:N,max:N,steps:20]: the highest "
                                                "throughput (requests/s) the task sustains within the latency/error "
                                                "objective, by exponential then binary search; a step objective "
                                                "(e.g. ccr-lag:p99:5s) judges each step too, or instead of pNN"),),
               "refused", refused=_ELSEWHERE),
)

# Flags of `bench race` that set no option of the race: how its summary is printed, Rally's no-ops.
REPORT_FLAGS: tuple[Flag, ...] = (
    _f("--all", action="store_true", help="print the full table after the headline (report files always have it)"),
    _f("--multi-cluster", action="store_true",
       help="Rally's: several named clusters in --target-hosts (bench reads them without this flag)"),
    _f("--enable-assertions", action="store_true", help="Rally's: bench always checks a track's assertions"),
    _f("--no-quiet", dest="quiet", action="store_false", default=argparse.SUPPRESS, help="", hidden=True),
    _f("--report-numbers-align", choices=["decimal"], help="", hidden=True),  # Rally's default only
    _f("--plugin-params", help="", hidden=True),  # Rally's; refused in one line (no plugin configs)
)

_BY_FIELD = {o.field: o for o in RACE_OPTIONS}


def option(field_name: str) -> RaceOption:
    return _BY_FIELD[field_name]


def _default(o: RaceOption) -> Any:
    info = RaceOptions.model_fields[o.field]
    return None if info.default_factory is not None else info.default


def add_race_flags(p: argparse.ArgumentParser) -> None:
    """Every race option's flags on ``p`` (the ``race`` parser), then the flags that only shape the report."""
    for o in RACE_OPTIONS:
        for i, f in enumerate(o.flags):
            kw = dict(f.kwargs)
            # The field's default where the flag alone sets it, so --help and the docs show it.
            if i == 0 and len(o.flags) == 1 and o.convert is None and "default" not in kw \
                    and kw.get("action") != "store_true":
                kw["default"] = _default(o)
            p.add_argument(*f.names, dest=f.attr, help=argparse.SUPPRESS if f.hidden else f.help, **kw)
    for f in REPORT_FLAGS:
        p.add_argument(*f.names, dest=f.attr, help=argparse.SUPPRESS if f.hidden else f.help, **f.kwargs)


def race_fields(a: argparse.Namespace) -> dict[str, Any]:
    """The parsed flags as ``RaceOptions``' fields (every field with a flag; the rest keep their defaults)."""
    out: dict[str, Any] = {"repository_kind": osb_flags(a)}  # first: it sets the track flags OSB's stand for
    for o in RACE_OPTIONS:
        if o.field in out:
            continue
        if o.convert is not None:
            out[o.field] = o.convert(a)
        elif o.flags:
            out[o.field] = getattr(a, o.flags[0].attr)
    return {k: v for k, v in out.items() if v is not None or RaceOptions.model_fields[k].default is None}


def osb_flags(a: argparse.Namespace) -> Literal["tracks", "workloads"]:
    """OSB's --workload/--workload-repository/--workload-revision as the track flags they stand for (set on ``a``);
    returns the repository kind ("workloads" when they were used). Mixing the two families is one line.
    Idempotent: the second call finds the track flags set and the workload flags cleared."""
    workload, repo, rev = (getattr(a, k, None) for k in ("workload", "workload_repository", "workload_revision"))
    if not (workload or repo or rev):
        return getattr(a, "repository_kind", "tracks")
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
    a.workload = a.workload_repository = a.workload_revision = None
    a.repository_kind = "workloads"
    return "workloads"


def load_driver_of(a: argparse.Namespace) -> tuple[str | None, list[str]]:
    """--load-driver / --ray-address / --load-driver-hosts as (backend:address or None, driver hosts)."""
    if a.ray_address and a.load_driver:
        raise ConfigError("--ray-address and --load-driver exclude each other: --ray-address=X is --load-driver=ray:X")
    load_driver = f"ray:{a.ray_address}" if a.ray_address else a.load_driver
    driver_hosts = [h.strip() for h in (a.load_driver_hosts or "").split(",") if h.strip()]
    if driver_hosts and not load_driver and any(h not in ("localhost", "127.0.0.1") for h in driver_hosts):
        load_driver = "ray:auto"  # Rally's flag names machines: bench drives from other machines through Ray
    return load_driver, driver_hosts


def moot_table() -> dict[str, frozenset[str]]:
    """For each option that decides the clusters, the options it makes moot (``bench.race.options`` reads it)."""
    out: dict[str, set[str]] = {}
    for o in RACE_OPTIONS:
        for when in o.moot_with:
            out.setdefault(when, set()).add(o.field)
    return {k: frozenset(v) for k, v in out.items()}


def moot_when(option: str) -> frozenset[str]:
    """The options that do not apply when ``option`` is given (e.g. a topology's clusters name their own car)."""
    return moot_table().get(option, frozenset())


def applying_options(options: dict[str, Any]) -> dict[str, Any]:
    """Stored race options without those that did not apply: no Elasticsearch default version beside an
    OpenSearch ``--distribution``, no ``--car`` default on a topology's clusters, nothing about starting clusters
    on ``--target-hosts``. Pure; also applied when showing trials stored before it existed."""
    moot = {k for when, keys in moot_table().items() if options.get(when) not in (None, "", [], {}) for k in keys}
    return {k: v for k, v in options.items() if k not in moot}


def public_options(opts: RaceOptions) -> dict[str, Any]:
    """The options as stored with a trial: secrets masked, and only those that applied to the race."""
    return applying_options(redact.redact(opts.model_dump(mode="json")))


def remote_groups() -> dict[Remote, frozenset[str]]:
    """The fields by how they reach a remote race."""
    out: dict[Remote, set[str]] = {"given": set(), "here": set(), "moot": set(), "refused": set()}
    for o in RACE_OPTIONS:
        out[o.remote].add(o.field)
    return {k: frozenset(v) for k, v in out.items()}


def refused_remotely(opts: RaceOptions) -> list[tuple[str, str]]:
    """(flag, what to do) for every option given that a remote race cannot take (its default is fine)."""
    defaults = RaceOptions()
    return [(o.flag, o.refused) for o in RACE_OPTIONS
            if o.remote == "refused" and getattr(opts, o.field) != getattr(defaults, o.field)]


def remote_args(opts: RaceOptions, files: Mapping[str, str] | None = None,
                replace: Mapping[str, list[str]] | None = None) -> list[str]:
    """The remote race's command line for every option given to it whose value is not its default. ``files``: where
    the caller put the values that travel as files (``as_file``) on the remote machine; ``replace``: a field's
    arguments as the caller writes them, whatever its value."""
    files, replace = files or {}, replace or {}
    defaults = RaceOptions()
    args: list[str] = []
    for o in RACE_OPTIONS:
        if o.remote != "given":
            continue
        if o.field in replace:
            args += replace[o.field]
        elif getattr(opts, o.field) == getattr(defaults, o.field):
            continue
        elif o.as_file:
            if o.field not in files:
                raise ValueError(f"{o.flag}: its value travels as a file: name where it is on the remote machine")
            args += [o.flag, files[o.field]]
        else:
            args += o.render(opts) if o.render is not None else _typed(o.flag, getattr(opts, o.field))
    return args


def _typed(flag: str, value: Any) -> list[str]:
    if value is True:
        return [flag]
    if isinstance(value, list | tuple):
        return [flag, ",".join(map(str, value))]
    return [flag, str(value)]


def options_table(parser: argparse.ArgumentParser) -> str:
    """The docs' table of race options, from the declarations and the parser's defaults."""
    defaults = {a.dest: a.default for a in parser._actions}
    rows = ["| option | default | meaning | on a cloud topology |", "|---|---|---|---|"]
    remote_text = {"given": "given to the driver host's race", "here": "applied by this bench",
                   "moot": "the topology decides", "refused": "refused in one line"}
    for o in RACE_OPTIONS:
        flags = [f for f in o.flags if not f.hidden]
        if not flags:
            continue
        names = ", ".join(f"`{n}`" for f in flags for n in f.names)
        default = defaults.get(flags[0].attr)
        if default in (None, argparse.SUPPRESS) and len(o.flags) == 1:
            default = RaceOptions.model_fields[o.field].get_default(call_default_factory=True)
            default = ",".join(default) if isinstance(default, list) else default
        shown = f"`{default}`" if default not in (None, False, argparse.SUPPRESS, [], {}, "") else ""
        text = (o.doc or flags[0].help).replace("%%", "%").replace("|", "\\|").replace("<", "&lt;")
        rows.append(f"| {names} | {shown} | {text} | {remote_text[o.remote]} |")
    for f in REPORT_FLAGS:
        if not f.hidden:
            rows.append(f"| {', '.join(f'`{n}`' for n in f.names)} |  | {f.help} | applied by this bench |")
    return "\n".join(rows) + "\n"
