"""Which telemetry devices a race runs, with which parameters: ``--telemetry``, ``--telemetry-params``
and ``--telemetry-profile`` resolved (and validated) into one ``TelemetryConfig``.

Parameter names are Rally's where Rally has them (``node-stats-sample-interval``, ``ccr-stats-indices``,
...). Every device also takes ``<device>-clusters`` (the race's clusters it samples; default: all).
A profile is a YAML file in ``telemetry/`` naming devices and parameters; explicit options override it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from bench.util.bundled import bundled_dir
from bench.util.errors import ConfigError
from bench.util.yaml_file import load_yaml_model


@dataclass(frozen=True)
class ParamSpec:
    name: str
    default: Any
    help: str


@dataclass(frozen=True)
class DeviceSpec:
    name: str
    help: str
    params: tuple[ParamSpec, ...]
    end_only: bool = False  # sampled once, at the end of the race (segment-stats)
    # configures the JVM of the nodes bench starts (jfr, gc, jit, heapdump) or attaches to local nodes' JVMs
    # (profile); no sampling loop
    jvm: bool = False

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}


# node-level index sections sampled by default; refresh/flush included (Rally >= 2.8 does too). Never
# "completion" and, before 7.2.0, never "docs": asking for them made Elasticsearch refresh (rally#608).
DEFAULT_INDEX_METRICS = "docs,store,indexing,refresh,flush,merges,segments,translog,search,query_cache," \
                        "fielddata,request_cache"


def _clusters(device: str) -> ParamSpec:
    return ParamSpec(f"{device}-clusters", None, "clusters of the race to sample (list or comma-separated; "
                                                 "default: all)")


DEVICES: dict[str, DeviceSpec] = {d.name: d for d in (
    DeviceSpec("node-stats", "GET _nodes/stats per node: indexing, refresh, flush, merges, segments, translog, "
                             "store, docs, thread pools, breakers, JVM heap and GC, process and OS CPU, memory, "
                             "fs io, transport/http bytes, indexing pressure", (
        ParamSpec("node-stats-sample-interval", 1.0, "seconds between samples"),
        ParamSpec("node-stats-include-indices", False, "also per-index stats (level=indices)"),
        ParamSpec("node-stats-include-indices-metrics", DEFAULT_INDEX_METRICS,
                  "index stat sections (comma-separated); 'completion' is refused (it forces refreshes)"),
        ParamSpec("node-stats-include-thread-pools", True, "thread pools write and search"),
        ParamSpec("node-stats-include-breakers", True, "circuit breakers"),
        ParamSpec("node-stats-include-gc", True, "JVM garbage collector counts and times"),
        ParamSpec("node-stats-include-mem", True, "JVM heap and OS memory"),
        ParamSpec("node-stats-include-process", True, "process and OS CPU"),
        ParamSpec("node-stats-include-fs", True, "file system io"),
        ParamSpec("node-stats-include-network", True, "transport and http bytes"),
        ParamSpec("node-stats-include-indexing-pressure", True, "indexing pressure"),
        _clusters("node-stats"),
    )),
    DeviceSpec("ccr-stats", "follower shard stats and replication lag (Elasticsearch CCR: GET _ccr/stats; "
                            "OpenSearch replication plugin: _plugins/_replication/*)", (
        ParamSpec("ccr-stats-sample-interval", 1.0, "seconds between samples"),
        ParamSpec("ccr-stats-indices", None, "follower indices: a list, or {cluster: [index, ...]} "
                                             "(default: every follower found)"),
        _clusters("ccr-stats"),
    )),
    DeviceSpec("host", "psutil on the load driver machine: CPU per core, memory, disk, network; CPU, RSS, io and "
                       "open files of each node bench started and of the bench driver processes", (
        ParamSpec("host-sample-interval", 1.0, "seconds between samples"),
    )),
    DeviceSpec("recovery-stats", "GET <indices>/_recovery?active_only: ongoing shard recoveries", (
        ParamSpec("recovery-stats-sample-interval", 1.0, "seconds between samples"),
        ParamSpec("recovery-stats-indices", "_all", "index pattern"),
        _clusters("recovery-stats"),
    )),
    DeviceSpec("shard-stats", "GET _stats?level=shards: docs, store size, segments per shard", (
        ParamSpec("shard-stats-sample-interval", 60.0, "seconds between samples"),
        ParamSpec("shard-stats-indices", "_all", "index pattern"),
        _clusters("shard-stats"),
    )),
    DeviceSpec("segment-stats", "GET _cat/segments once at the end of the race", (
        ParamSpec("segment-stats-indices", "_all", "index pattern"),
        _clusters("segment-stats"),
    ), end_only=True),
    DeviceSpec("transform-stats", "GET _transform/_stats: per transform pages, documents, searches, index "
                                  "operations and times, and the throughput of the last sample (Elasticsearch)", (
        ParamSpec("transform-stats-sample-interval", 1.0, "seconds between samples"),
        ParamSpec("transform-stats-transforms", None, "transform ids: a list, or {cluster: [ids]} (default: all)"),
        _clusters("transform-stats"),
    )),
    DeviceSpec("searchable-snapshots-stats", "GET _searchable_snapshots/stats per Lucene file type (Elasticsearch)", (
        ParamSpec("searchable-snapshots-stats-sample-interval", 1.0, "seconds between samples"),
        ParamSpec("searchable-snapshots-stats-indices", None, "index patterns (also per index): a pattern, a list, "
                                                              "or {cluster: [patterns]}"),
        _clusters("searchable-snapshots-stats"),
    )),
    DeviceSpec("data-stream-stats", "GET _data_stream/_stats: data streams, backing indices, store size", (
        ParamSpec("data-stream-stats-sample-interval", 10.0, "seconds between samples"),
        _clusters("data-stream-stats"),
    )),
    DeviceSpec("ingest-pipeline-stats", "GET _nodes/stats/ingest at the start and at the end: the change in "
                                        "count, time and failures per node, pipeline and processor", (
        _clusters("ingest-pipeline-stats"),
    )),
    DeviceSpec("disk-usage-stats", "POST <index>/_disk_usage once at the end: bytes per field (inverted index, "
                                   "stored fields, doc values, points, norms, term vectors, knn vectors)", (
        ParamSpec("disk-usage-stats-indices", None, "indices (comma-separated or a list; default: every "
                                                    "non-hidden index)"),
        ParamSpec("disk-usage-stats-timeout", 600.0, "seconds the disk usage API may take"),
        ParamSpec("disk-usage-stats-flush", True, "flush=true (uncommitted data included)"),
        _clusters("disk-usage-stats"),
    ), end_only=True),
    DeviceSpec("geoip-stats", "GET _ingest/geoip/stats once at the end: the GeoIP cache per node (Elasticsearch)", (
        _clusters("geoip-stats"),
    ), end_only=True),
    DeviceSpec("master-node-stats", "which node is the elected master (GET _cluster/state/master_node)", (
        ParamSpec("master-node-stats-sample-interval", 30.0, "seconds between samples"),
        _clusters("master-node-stats"),
    )),
    DeviceSpec("segment-replication-stats", "GET _cat/segment_replication per shard: checkpoints and bytes "
                                            "behind, lag, rejected requests (OpenSearch)", (
        ParamSpec("segment-replication-stats-sample-interval", 1.0, "seconds between samples"),
        ParamSpec("segment-replication-stats-indices", None, "index patterns: a pattern, a list, or "
                                                             "{cluster: [patterns]}"),
        _clusters("segment-replication-stats"),
    )),
    DeviceSpec("jfr", "Java Flight Recorder on every node bench starts, for the whole life of the node: "
                      "profile.jfr in the node's logs, kept with the trial", (
        ParamSpec("recording-template", None, "a JFR settings template: default, profile, or a .jfc file the "
                                              "node's user can read (default: the JDK's default)"),
        ParamSpec("jfr-delay", None, "delay before the recording starts, e.g. 30s"),
        ParamSpec("jfr-duration", None, "length of the recording, e.g. 5m"),
    ), jvm=True),
    DeviceSpec("jit", "JIT compiler log (-XX:+LogCompilation) on every node bench starts: jit.log in the node's "
                      "logs", (), jvm=True),
    DeviceSpec("gc", "GC log (-Xlog) on every node bench starts: gc.log in the node's logs", (
        ParamSpec("gc-log-config", "gc*=info,safepoint=info,age*=trace", "the -Xlog selection"),
    ), jvm=True),
    DeviceSpec("profile", "flame graphs of where each node's CPU goes: JFR execution sampling in every node of the "
                          "race's clusters that runs on this machine, during the schedule; per node and task the "
                          "collapsed stacks and a flame graph (HTML) kept with the trial, and in HTML reports", (
        ParamSpec("profile-interval", 20.0, "milliseconds between execution samples of a thread"),
        ParamSpec("profile-sampler", "jfr", "jfr (JFR execution sampling, Java frames of running threads) or "
                                            "async-profiler (downloaded from Maven Central: per-thread CPU time, "
                                            "native and JVM frames too)"),
        _clusters("profile"),
    ), jvm=True),
    DeviceSpec("heapdump", "a heap dump of every node bench starts, taken when the schedule ended "
                           "(jcmd GC.heap_dump): heap_at_exit_<pid>.hprof in the node's logs", (), jvm=True),
)}


class TelemetryProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    description: str = ""
    devices: list[str] = []
    params: dict[str, Any] = {}


class TelemetryConfig(BaseModel):
    """The resolved choice: devices in a stable order, and every parameter of those devices."""

    devices: list[str] = []
    params: dict[str, Any] = {}
    profile: str | None = None

    def device_params(self, device: str) -> dict[str, Any]:
        own = {p.name for p in DEVICES[device].params} if device in DEVICES else set()
        return {k: v for k, v in self.params.items() if k.startswith(device + "-") or k in own}

    def jvm_devices(self) -> list[str]:
        return [d for d in self.devices if DEVICES[d].jvm]


def profiles_dir() -> Path:
    return bundled_dir("telemetry-profiles")


def available_profiles() -> dict[str, Path]:
    folder = profiles_dir()
    return {p.stem: p for p in sorted(folder.glob("*.yml"))} if folder.is_dir() else {}


def load_profile(name: str) -> TelemetryProfile:
    profiles = available_profiles()
    path = Path(name).expanduser()
    if not path.is_file():
        if name not in profiles:
            raise ConfigError(f"--telemetry-profile: unknown profile '{name}': use one of "
                              f"{', '.join(profiles) or '(none)'} or a YAML file")
        path = profiles[name]
    return load_yaml_model(path, TelemetryProfile, "telemetry profile", "devices and params", empty_ok=True)

def _device_list(spec: str | list[str] | None, what: str) -> list[str]:
    items = spec.split(",") if isinstance(spec, str) else list(spec or [])
    out: list[str] = []
    for d in (str(x).strip() for x in items):
        if not d:
            continue
        if d not in DEVICES:
            raise ConfigError(f"{what}: unknown telemetry device '{d}': use one of {', '.join(DEVICES)} "
                              "(see 'bench list telemetry')")
        if d not in out:
            out.append(d)
    return out


def _owner(param: str) -> str | None:
    # Rally's names: most start with the device's, a few do not (jfr's recording-template)
    return next((d for d in DEVICES if any(p.name == param for p in DEVICES[d].params)), None)


def _check_value(param: str, value: Any, what: str) -> Any:
    if param.endswith("-sample-interval"):
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{what}: {param} must be a number of seconds, got {value!r}") from None
        if not 0.05 <= v <= 3600:
            raise ConfigError(f"{what}: {param} must be between 0.05 and 3600 seconds, got {value!r}")
        return v
    if param.startswith("node-stats-include-") and param != "node-stats-include-indices-metrics" \
            and not isinstance(value, bool):
        raise ConfigError(f"{what}: {param} must be true or false, got {value!r}")
    if param == "node-stats-include-indices-metrics":
        metrics = value if isinstance(value, list) else str(value).split(",")
        metrics = [str(m).strip() for m in metrics if str(m).strip()]
        if "completion" in metrics:
            raise ConfigError(f"{what}: node-stats-include-indices-metrics: 'completion' makes Elasticsearch "
                              "refresh and would skew the benchmark; leave it out")
        return ",".join(metrics)
    if param.endswith("-clusters") and value is not None:
        return [c.strip() for c in (value.split(",") if isinstance(value, str) else value) if str(c).strip()]
    if param == "profile-interval":
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{what}: {param} must be a number of milliseconds, got {value!r}") from None
        if not 1 <= v <= 1000:
            raise ConfigError(f"{what}: {param} must be between 1 and 1000 ms, got {value!r}")
        return v
    if param == "profile-sampler" and value not in ("jfr", "async-profiler"):
        raise ConfigError(f"{what}: profile-sampler must be jfr or async-profiler, got {value!r}")
    if param == "disk-usage-stats-timeout":
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{what}: {param} must be a number of seconds, got {value!r}") from None
    if param == "disk-usage-stats-flush" and not isinstance(value, bool):
        raise ConfigError(f"{what}: {param} must be true or false, got {value!r}")
    if param == "ccr-stats-indices" and value is not None:
        if isinstance(value, str):
            return [i.strip() for i in value.split(",") if i.strip()]
        if not isinstance(value, (list, dict)):
            raise ConfigError(f"{what}: ccr-stats-indices must be a list or {{cluster: [indices]}}, got {value!r}")
    return value


def resolve_telemetry(devices: str | list[str] | None, params: dict[str, Any] | None,
                      profile: str | None) -> TelemetryConfig:
    """Devices from the profile plus ``devices``; parameters: defaults < profile < ``params``.

    Unknown devices and parameters are one-line errors (a typo must not silently sample nothing).
    """
    prof = load_profile(profile) if profile else TelemetryProfile()
    where = f"telemetry profile {profile}" if profile else "--telemetry"
    chosen = _device_list(prof.devices, where)
    chosen += [d for d in _device_list(devices, "--telemetry") if d not in chosen]
    merged: dict[str, Any] = {}
    for source, values in ((where, prof.params), ("--telemetry-params", params or {})):
        for k, v in values.items():
            if _owner(k) is None:
                known = sorted(p.name for d in DEVICES.values() for p in d.params)
                raise ConfigError(f"{source}: unknown telemetry parameter '{k}'; known: {', '.join(known)}")
            merged[k] = _check_value(k, v, source)
    resolved: dict[str, Any] = {}
    for d in chosen:
        for p in DEVICES[d].params:
            resolved[p.name] = merged.get(p.name, p.default)
    # Parameters of devices that are not enabled are kept too (Rally ignores them); they do nothing.
    for k, v in merged.items():
        resolved.setdefault(k, v)
    return TelemetryConfig(devices=chosen, params=resolved, profile=profile)


def device_table() -> list[tuple[str, str, str, str]]:
    """(device, parameter, default, description) rows for ``bench list telemetry``."""
    rows: list[tuple[str, str, str, str]] = []
    for d in DEVICES.values():
        rows.append((d.name, "", "", d.help))
        for p in d.params:
            rows.append(("", p.name, "" if p.default is None else str(p.default).lower()
                         if isinstance(p.default, bool) else str(p.default), p.help))
    return rows
