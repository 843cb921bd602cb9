"""The telemetry section of a race summary: pure functions from the stored telemetry rows.

Counters (GC, refresh, merge, flush, rejections, disk and network bytes) are reported as the change from the
first to the last sample of the race; disk IO twice, each row saying which: the node's own processes (host
device) and the whole device (node-stats fs, shared by every node on the disk); network bytes as transport and
HTTP apart; gauges (CPU, heap, lag) as median / percentiles / max over the samples.
Two CPU figures exist on purpose: node-stats' ``process.cpu.percent`` is Elasticsearch's own (share of the
whole machine), the host device's is psutil's (100 % = one core); each row names which it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

from bench.driver.loop_load import DEVICE as LOOP_DEVICE
from bench.results.summary import MetricRow, Summary
from bench.telemetry.feature_summary import Figure, feature_figures
from bench.telemetry.over_time import Window, windows
from bench.telemetry.runner import ERROR_METRIC, SAMPLE_METRIC

if TYPE_CHECKING:
    from bench.trials.model import TrialReader

SECTION = "telemetry"  # its name among a summary's sections

MB = 1024 * 1024
DRIVER_CPU_WARNING = 80.0  # % of one core per worker


class DeviceCount(BaseModel):
    device: str
    cluster: str
    samples: int
    failed: int
    errors: int = 0  # problems reported inside good samples (e.g. a CCR fatal_exception, a missing follower)
    first_error: str | None = None


class NodeTelemetry(BaseModel):
    cluster: str
    node: str
    cpu_median: float | None = None  # node-stats process.cpu.percent (share of the machine)
    cpu_max: float | None = None
    host_cpu_median: float | None = None  # host device, psutil: 100 = one core
    host_cpu_max: float | None = None
    # Disk IO of the node's own processes (host device, psutil io_counters of the node's JVMs).
    process_read_bytes: float | None = None
    process_write_bytes: float | None = None
    # node-stats fs.io_stats: the whole block devices holding the node's data, every process's IO included, so
    # nodes sharing a disk report the same numbers.
    device_read_bytes: float | None = None
    device_write_bytes: float | None = None
    # node-stats transport (node to node, CCR included) and HTTP (clients: bulk ingress, responses); HTTP only
    # where the engine counts bytes (Elasticsearch's http.routes), else absent.
    transport_rx_bytes: float | None = None
    transport_tx_bytes: float | None = None
    http_rx_bytes: float | None = None
    http_tx_bytes: float | None = None
    # Summaries stored before the fields above: device-wide (else process) disk IO and transport + HTTP bytes.
    disk_read_bytes: float | None = None
    disk_write_bytes: float | None = None
    net_rx_bytes: float | None = None
    net_tx_bytes: float | None = None
    gc_young_count: float | None = None
    gc_young_time_ms: float | None = None
    gc_old_count: float | None = None
    gc_old_time_ms: float | None = None
    refresh_count: float | None = None
    refresh_time_ms: float | None = None
    merge_count: float | None = None
    merge_time_ms: float | None = None
    flush_count: float | None = None
    flush_time_ms: float | None = None
    write_rejections: float | None = None
    peak_heap_bytes: float | None = None
    # node-stats samples of its cluster in which this node was not there (down, restarting, not answering): its
    # rows cover the other samples only, counters lose what happened meanwhile (a restart resets them).
    absent_samples: int = 0
    cluster_samples: int = 0


class FollowerLag(BaseModel):
    cluster: str
    index: str
    lag_ops_median: float | None = None
    lag_ops_p99: float | None = None
    lag_ops_max: float | None = None
    lag_s_median: float | None = None
    lag_s_p99: float | None = None
    lag_s_max: float | None = None
    read_exceptions: float = 0.0  # most exceptions a sample listed
    failed_read_requests: float = 0.0  # during the race
    failed_write_requests: float = 0.0
    missing_samples: int = 0  # samples in which the follower was absent / paused / not replicating
    paused_samples: int = 0  # of those, the samples in which it was paused (a state, not a failure)
    lag_samples: int = 0  # samples with a known lag in operations (the lag-ops rows are over these only)
    lag_over_time: list[Window] = []  # the lag time per hour (runs of 2 h or more) or per tenth of the run


class DriverCpu(BaseModel):
    median: float | None = None  # all bench processes, 100 = one core
    max: float | None = None
    workers: int = 0
    worker_median: dict[str, float] = {}


class TelemetrySummary(BaseModel):
    devices: list[DeviceCount] = []
    nodes: list[NodeTelemetry] = []
    followers: list[FollowerLag] = []
    driver: DriverCpu | None = None
    features: list[Figure] = []  # the feature stats devices and node startup times (feature_summary.py)
    notes: list[str] = []


def _series(df: pd.DataFrame, metric: str) -> pd.Series:
    return df.loc[df["metric"] == metric].sort_values("timestamp")["value"]


def _delta(df: pd.DataFrame, metric: str, scale: float = 1.0) -> float | None:
    s = _series(df, metric)
    if s.empty:
        return None
    return max(0.0, float(s.iloc[-1] - s.iloc[0])) * scale


def _stat(df: pd.DataFrame, metric: str, how: str) -> float | None:
    s = _series(df, metric)
    if s.empty:
        return None
    return float(s.median() if how == "median" else s.max())


def _device_counts(df: pd.DataFrame) -> list[DeviceCount]:
    out = []
    marks = df[df["metric"] == SAMPLE_METRIC]
    errs = df[df["metric"] == ERROR_METRIC]
    for (device, cluster), g in marks.groupby(["device", "cluster"], sort=False):
        failed = g[g["value"] == 0]
        e = errs[(errs["device"] == device) & (errs["cluster"] == cluster)]
        first = next((r.get("error") for r in [*failed["raw"], *e["raw"]] if isinstance(r, dict)), None)
        out.append(DeviceCount(device=str(device), cluster=str(cluster), samples=len(g), failed=len(failed),
                               errors=len(e), first_error=first))
    return out


def _nodes(df: pd.DataFrame) -> list[NodeTelemetry]:
    ns = df[(df["device"] == "node-stats") & (df["node"] != "")]
    marks = df[(df["device"] == "node-stats") & (df["metric"] == SAMPLE_METRIC)]
    host = df[(df["device"] == "host") & ~df["cluster"].isin(["host", "driver"])]
    keys = list(dict.fromkeys([*zip(ns["cluster"], ns["node"]), *zip(host["cluster"], host["node"])]))
    out = []
    for cluster, node in keys:
        n = ns[(ns["cluster"] == cluster) & (ns["node"] == node)]
        h = host[(host["cluster"] == cluster) & (host["node"] == node)]
        t = NodeTelemetry(cluster=str(cluster), node=str(node))
        t.cpu_median, t.cpu_max = _stat(n, "process.cpu.percent", "median"), _stat(n, "process.cpu.percent", "max")
        t.host_cpu_median = _stat(h, "process.cpu.percent", "median")
        t.host_cpu_max = _stat(h, "process.cpu.percent", "max")
        t.process_read_bytes = _delta(h, "process.read_bytes")
        t.process_write_bytes = _delta(h, "process.write_bytes")
        t.device_read_bytes = _delta(n, "fs.io_stats.total.read_kilobytes", 1024.0)
        t.device_write_bytes = _delta(n, "fs.io_stats.total.write_kilobytes", 1024.0)
        t.transport_rx_bytes = _delta(n, "transport.rx_size_in_bytes")
        t.transport_tx_bytes = _delta(n, "transport.tx_size_in_bytes")
        t.http_rx_bytes = _delta(n, "http.rx_size_in_bytes")
        t.http_tx_bytes = _delta(n, "http.tx_size_in_bytes")
        t.gc_young_count = _delta(n, "jvm.gc.collectors.young.collection_count")
        t.gc_young_time_ms = _delta(n, "jvm.gc.collectors.young.collection_time_in_millis")
        t.gc_old_count = _delta(n, "jvm.gc.collectors.old.collection_count")
        t.gc_old_time_ms = _delta(n, "jvm.gc.collectors.old.collection_time_in_millis")
        for what, section in (("refresh", "refresh"), ("merge", "merges"), ("flush", "flush")):
            setattr(t, f"{what}_count", _delta(n, f"indices.{section}.total"))
            setattr(t, f"{what}_time_ms", _delta(n, f"indices.{section}.total_time_in_millis"))
        t.write_rejections = _delta(n, "thread_pool.write.rejected")
        t.peak_heap_bytes = _stat(n, "jvm.mem.heap_used_in_bytes", "max")
        if not n.empty:
            # Every sample of the cluster, failed ones too (a one-node cluster that is down answers nothing).
            taken = set(marks.loc[marks["cluster"] == cluster, "timestamp"])
            t.cluster_samples = len(taken)
            t.absent_samples = len(taken - set(n["timestamp"]))
        out.append(t)
    return out


def _pct(s: pd.Series, p: float) -> float | None:
    return float(np.percentile(s.to_numpy(), p)) if not s.empty else None


def _followers(df: pd.DataFrame) -> list[FollowerLag]:
    ccr = df[(df["device"] == "ccr-stats") & (df["node"] != "") & ~df["node"].str.contains(r"\[", regex=True)]
    indices = ccr[ccr["metric"].isin(["lag_ops", "missing", "paused"])]
    out = []
    for (cluster, index), g in ccr[ccr.set_index(["cluster", "node"]).index.isin(
            set(zip(indices["cluster"], indices["node"])))].groupby(["cluster", "node"], sort=False):
        ops, secs = _series(g, "lag_ops"), _series(g, "lag_seconds")
        paused = _series(g, "paused")
        out.append(FollowerLag(
            cluster=str(cluster), index=str(index),
            lag_ops_median=float(ops.median()) if not ops.empty else None, lag_ops_p99=_pct(ops, 99),
            lag_ops_max=float(ops.max()) if not ops.empty else None,
            lag_s_median=float(secs.median()) if not secs.empty else None, lag_s_p99=_pct(secs, 99),
            lag_s_max=float(secs.max()) if not secs.empty else None,
            read_exceptions=float(_series(g, "read_exceptions").max()) if not _series(g, "read_exceptions").empty
            else 0.0,
            failed_read_requests=_delta(g, "failed_read_requests") or 0.0,
            failed_write_requests=_delta(g, "failed_write_requests") or 0.0,
            missing_samples=int(_series(g, "missing").sum() + (paused > 0).sum()), lag_samples=len(ops),
            paused_samples=int((paused > 0).sum()), lag_over_time=_lag_windows(g)))
    return out


def _lag_windows(g: pd.DataFrame) -> list[Window]:
    """One follower's lag time window by window. Every sample that has the follower but no lag time (the first one,
    whose lag is only a lower bound; a paused, absent, unreadable or not yet syncing follower) counts as unknown in
    its window."""
    known = g.loc[g["metric"] == "lag_seconds", ["timestamp", "value"]]
    at = set(known["timestamp"])
    unknown = sorted(float(t) for t in set(g["timestamp"]) - at)
    return windows(list(zip(known["timestamp"].astype(float), known["value"].astype(float), strict=True)),
                   unknown)


def _driver(df: pd.DataFrame) -> DriverCpu | None:
    d = df[(df["device"] == "host") & (df["cluster"] == "driver") & (df["metric"] == "process.cpu.percent")]
    if d.empty:
        return None
    total = d[d["node"] == "all"]["value"]
    workers = d[d["node"].str.startswith("worker-")]
    return DriverCpu(median=float(total.median()) if not total.empty else None,
                     max=float(total.max()) if not total.empty else None,
                     workers=int(workers["node"].nunique()),
                     worker_median={str(k): float(v) for k, v in workers.groupby("node")["value"].median().items()})


def _absence_notes(nodes: list[NodeTelemetry], df: pd.DataFrame) -> list[str]:
    """Why a node has no HTTP bytes or no process disk IO rows: absent because not measured, never a zero."""
    notes = []
    no_http = [f"{n.cluster}/{n.node}" for n in nodes if n.transport_rx_bytes is not None and n.http_rx_bytes is None]
    if no_http:
        notes.append(f"Network rx/tx (HTTP) is not reported for {', '.join(no_http)}: the engine's _nodes/stats "
                     "http section has no byte counters (Elasticsearch counts them per route, OpenSearch does "
                     "not), so the bulk ingress is not measured there; Network rx/tx (transport) is node-to-node "
                     "traffic only.")
    host_ran = not df[(df["device"] == "host") & (df["metric"] == SAMPLE_METRIC)].empty
    no_io = [f"{n.cluster}/{n.node}" for n in nodes if n.process_read_bytes is None]
    if host_ran and no_io:
        notes.append(f"Disk read/write (node processes) is not reported for {', '.join(no_io)}: the host device "
                     "found no process of these nodes on this machine (or could not read its IO counters).")
    return notes


def summarize_telemetry(df: pd.DataFrame) -> TelemetrySummary:
    """``df``: ``TrialStore.telemetry(trial_id)``."""
    if df.empty:
        return TelemetrySummary()
    s = TelemetrySummary(devices=_device_counts(df), nodes=_nodes(df), followers=_followers(df), driver=_driver(df),
                         features=feature_figures(df))
    s.notes += _absence_notes(s.nodes, df)
    for c in s.devices:
        if c.failed or c.errors:
            s.notes.append(device_note(c))
    if s.driver is not None:
        busy = {w: v for w, v in s.driver.worker_median.items() if v > DRIVER_CPU_WARNING}
        if busy:
            s.notes.append("The load driver used more than 80% of a core per worker ("
                           + ", ".join(f"{w}: {v:.0f}%" for w, v in sorted(busy.items()))
                           + "): the client, not the cluster, may be the bottleneck; use more "
                             "--worker-processes or a bigger driver machine.")
    return s


def device_note(c: DeviceCount) -> str:
    """What went wrong with a device's samples: those that got no answer, and the problems the answered ones
    reported (a failing follower, an unreadable lag), told apart."""
    if c.failed and c.errors:
        what = (f"{c.failed} of {c.samples} samples failed, and the {c.samples - c.failed} answered ones reported "
                f"{c.errors} problem(s)")
    elif c.failed:
        what = f"{c.failed} of {c.samples} samples failed"
    else:
        what = f"all {c.samples} samples were answered, and they reported {c.errors} problem(s)"
    return f"Telemetry {c.device} on {c.cluster}: {what}" + (f" (first: {c.first_error})" if c.first_error else "") \
        + "."


def with_telemetry(summary: Summary | None, telemetry: pd.DataFrame) -> Summary | None:
    """Put the telemetry section (and its warnings) into a race summary; a race that measured nothing but
    has telemetry still gets a summary holding it. The load driver's own loop rows are the core's section."""
    if not telemetry.empty:
        telemetry = telemetry[telemetry["device"] != LOOP_DEVICE]
    if telemetry.empty:
        return summary
    ts = summarize_telemetry(telemetry)
    return (summary or Summary()).with_section(SECTION, ts.model_dump(mode="json"), ts.notes)


def enrich_summary(summary: Summary | None, trials: TrialReader, trial_id: str) -> Summary | None:
    """The summary enricher (``bench.trials.summary``): the trial's stored telemetry as its section."""
    return with_telemetry(summary, trials.telemetry(trial_id))


def telemetry_rows(data: dict[str, Any]) -> list[MetricRow]:
    """Report rows of a stored telemetry section; the Task column names the cluster/node, follower index or
    device."""
    if not data:
        return []
    s = TelemetrySummary.model_validate(data)
    rows: list[MetricRow] = []

    def add(metric: str, scope: str, value: float | None, unit: str, scale: float = 1.0,
            partial: str | None = None) -> None:
        if value is not None:
            rows.append(MetricRow(metric=metric, task=scope, value=value / scale if scale != 1.0 else value,
                                  unit=unit, partial=partial))

    for n in s.nodes:
        scope = f"{n.cluster}/{n.node}"
        node_rows = len(rows)
        add("Median CPU usage (node-stats)", scope, n.cpu_median, "%")
        add("Max CPU usage (node-stats)", scope, n.cpu_max, "%")
        add("Median process CPU (host, 100% = 1 core)", scope, n.host_cpu_median, "%")
        add("Max process CPU (host, 100% = 1 core)", scope, n.host_cpu_max, "%")
        add("Disk read (node processes)", scope, n.process_read_bytes, "MB", MB)
        add("Disk write (node processes)", scope, n.process_write_bytes, "MB", MB)
        add("Disk read (device-wide, all processes)", scope, n.device_read_bytes, "MB", MB)
        add("Disk write (device-wide, all processes)", scope, n.device_write_bytes, "MB", MB)
        add("Network rx (transport)", scope, n.transport_rx_bytes, "MB", MB)
        add("Network tx (transport)", scope, n.transport_tx_bytes, "MB", MB)
        add("Network rx (HTTP)", scope, n.http_rx_bytes, "MB", MB)
        add("Network tx (HTTP)", scope, n.http_tx_bytes, "MB", MB)
        add("Disk read", scope, n.disk_read_bytes, "MB", MB)  # summaries stored before the rows above
        add("Disk write", scope, n.disk_write_bytes, "MB", MB)
        add("Network rx", scope, n.net_rx_bytes, "MB", MB)
        add("Network tx", scope, n.net_tx_bytes, "MB", MB)
        add("Young GC count", scope, n.gc_young_count, "")
        add("Young GC time", scope, n.gc_young_time_ms, "s", 1000.0)
        add("Old GC count", scope, n.gc_old_count, "")
        add("Old GC time", scope, n.gc_old_time_ms, "s", 1000.0)
        for what in ("refresh", "merge", "flush"):
            add(f"{what.capitalize()} count", scope, getattr(n, f"{what}_count"), "")
            add(f"{what.capitalize()} time", scope, getattr(n, f"{what}_time_ms"), "s", 1000.0)
        add("Write thread pool rejections", scope, n.write_rejections, "")
        add("Peak heap used", scope, n.peak_heap_bytes, "MB", MB)
        partial = node_partial(n.absent_samples, n.cluster_samples)
        if partial:
            for i in range(node_rows, len(rows)):
                rows[i] = rows[i].model_copy(update={"partial": partial})
    for f in s.followers:
        add_follower_lag_rows(add, f"{f.cluster}/{f.index}", f, f.missing_samples)
    if s.driver is not None:
        add("Median driver CPU (100% = 1 core)", "driver", s.driver.median, "%")
        add("Max driver CPU (100% = 1 core)", "driver", s.driver.max, "%")
        for w, v in sorted(s.driver.worker_median.items()):
            add("Median driver CPU per worker (100% = 1 core)", f"driver/{w}", v, "%")
    for fig in s.features:
        add(fig.metric, fig.scope, fig.value, fig.unit)
    for c in s.devices:
        scope = f"{c.device}@{c.cluster}"
        add("Telemetry samples", scope, c.samples, "")
        add("Telemetry failed samples", scope, c.failed, "")
    return rows


# Per node: CPU, the node processes' disk IO and the transport network (the cluster's own traffic), rejected
# writes, and the driver's CPU (is the client the limit?).
HEADLINE_METRICS = frozenset({
    "Median CPU usage (node-stats)", "Median process CPU (host, 100% = 1 core)", "Disk read (node processes)",
    "Disk write (node processes)", "Network rx (transport)", "Network tx (transport)", "Write thread pool rejections",
    "Median driver CPU (100% = 1 core)", "Max CCR lag", "99th percentile CCR lag time"})


def is_headline_metric(metric: str) -> bool:
    return metric in HEADLINE_METRICS


def node_partial(absent: int, samples: int) -> str | None:
    """Why a node's rows are partial: the node-stats samples of its cluster it was missing from (None: none)."""
    if not absent:
        return None
    return (f"node absent from {absent} of {samples} node-stats samples (down or not answering): counts miss "
            "what it did meanwhile")


def lag_partial(missing: int, known: int) -> str | None:
    """Why a follower's lag rows are partial: the samples in which its lag was unknown (None: none)."""
    if not missing:
        return None
    of = f" of {missing + known}" if known else ""
    return f"lag unknown in {missing}{of} samples: follower paused, absent or not replicating"


def add_follower_lag_rows(add: Any, scope: str, f: Any, missing: int) -> None:
    """The CCR lag rows of one follower index; shared by the telemetry section and the CCR section
    (bench/ccr/section.py) so both name and order them alike. ``f`` has the lag_* and exception fields. A
    follower whose lag was unknown in some samples (paused, unreadable) gets lag rows over the others only:
    they are marked partial, a maximum being a lower bound."""
    partial = lag_partial(missing, int(getattr(f, "lag_samples", 0) or 0))
    add("Median CCR lag", scope, f.lag_ops_median, "ops", partial=partial)
    add("99th percentile CCR lag", scope, f.lag_ops_p99, "ops", partial=partial)
    add("Max CCR lag", scope, f.lag_ops_max, "ops", partial=partial)
    add("Median CCR lag time", scope, f.lag_s_median, "s", partial=partial)
    add("99th percentile CCR lag time", scope, f.lag_s_p99, "s", partial=partial)
    add("Max CCR lag time", scope, f.lag_s_max, "s", partial=partial)
    add("CCR read exceptions", scope, f.read_exceptions, "")
    add("CCR failed read requests", scope, f.failed_read_requests, "")
    add("CCR failed write requests", scope, f.failed_write_requests, "")
    if missing:
        add("CCR samples without follower checkpoints", scope, missing, "")
