"""What the summary says of the feature stats devices (pure, from the stored rows), as Rally reports them:
ingest pipelines as the change from the start to the end of the race (per cluster, pipeline and processor),
transforms and data streams as their last sample, disk usage per field, GeoIP caches per node, master changes,
segment replication's worst lag, and each started node's startup time. Searchable-snapshots stats are kept as
rows (per file type), not summarised.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pandas as pd
from pydantic import BaseModel

STARTUP_DEVICE = "startup"  # rows written from the started clusters' facts (Rally's always-on node_startup_time)


class Figure(BaseModel):
    metric: str
    scope: str
    value: float
    unit: str = ""


@dataclass(frozen=True)
class _Row:
    timestamp: float
    cluster: str
    node: str
    device: str
    metric: str
    value: float


def _rows(df: pd.DataFrame) -> dict[str, list[_Row]]:
    out: dict[str, list[_Row]] = defaultdict(list)
    if df.empty:
        return out
    for ts, cluster, node, device, metric, value in zip(df["timestamp"], df["cluster"], df["node"], df["device"],
                                                       df["metric"], df["value"], strict=True):
        if not str(metric).startswith("_"):
            out[str(device)].append(_Row(float(ts), str(cluster), str(node), str(device), str(metric), float(value)))
    for rows in out.values():
        rows.sort(key=lambda r: r.timestamp)
    return out


def _change(rows: list[_Row]) -> dict[tuple[str, str, str], float]:
    """Per (cluster, node, metric): last minus first value (rows in time order)."""
    first: dict[tuple[str, str, str], float] = {}
    last: dict[tuple[str, str, str], float] = {}
    for r in rows:
        key = (r.cluster, r.node, r.metric)
        first.setdefault(key, r.value)
        last[key] = r.value
    return {k: last[k] - first[k] for k in last}


def _last(rows: list[_Row]) -> list[_Row]:
    """The rows of each cluster's last sample."""
    latest: dict[str, float] = {}
    for r in rows:
        latest[r.cluster] = max(latest.get(r.cluster, r.timestamp), r.timestamp)
    return [r for r in rows if r.timestamp == latest[r.cluster]]


def _words(metric: str) -> str:
    return metric.replace("_in_millis", "").replace("_", " ")


def _unit(metric: str) -> str:
    return "ms" if "millis" in metric else "bytes" if "bytes" in metric else ""


def feature_figures(df: pd.DataFrame) -> list[Figure]:
    by = _rows(df)
    out: list[Figure] = []
    if rows := by.get("ingest-pipeline-stats"):
        cluster_total: dict[tuple[str, str], float] = defaultdict(float)
        for (cluster, _node, metric), v in sorted(_change(rows).items()):
            kind, _, rest = metric.partition(".")
            name, _, what = rest.rpartition(".")
            if kind == "node":
                cluster_total[(cluster, what)] += v
            else:
                out.append(Figure(metric=f"Ingest {kind} {_words(what)}", scope=f"{cluster}/{name}", value=v,
                                  unit=_unit(what)))
        out += [Figure(metric=f"Ingest pipeline cluster {_words(what)}", scope=cluster, value=v, unit=_unit(what))
                for (cluster, what), v in cluster_total.items()]
    if rows := by.get("transform-stats"):
        out += [Figure(metric=f"Transform {_words(r.metric)}", scope=f"{r.cluster}/{r.node}", value=r.value,
                       unit="docs/s" if r.metric == "throughput" else "")
                for r in _last(rows) if r.metric in ("documents_processed", "documents_indexed", "throughput",
                                                     "index_failures", "search_failures")]
    if rows := by.get("data-stream-stats"):
        out += [Figure(metric=f"Data stream {_words(r.metric)}", scope=f"{r.cluster}/{r.node}" if r.node else r.cluster,
                       value=r.value, unit=_unit(r.metric))
                for r in _last(rows) if r.metric in ("data_stream_count", "backing_indices", "total_store_size_bytes",
                                                     "store_size_bytes")]
    if rows := by.get("disk-usage-stats"):
        out += [Figure(metric="Disk usage of field", scope=f"{r.cluster}/{r.node}", value=r.value, unit="bytes")
                for r in rows if r.metric == "total"]
    if rows := by.get("geoip-stats"):
        out += [Figure(metric=f"GeoIP {_words(r.metric)}", scope=f"{r.cluster}/{r.node}", value=r.value,
                       unit=_unit(r.metric)) for r in rows]
    if rows := by.get("master-node-stats"):
        masters: dict[str, list[str]] = defaultdict(list)
        for r in rows:
            masters[r.cluster].append(r.node)
        out += [Figure(metric="Master node changes", scope=cluster,
                       value=float(sum(1 for a, b in zip(m, m[1:], strict=False) if a != b)))
                for cluster, m in masters.items()]
    if rows := by.get("segment-replication-stats"):
        worst: dict[tuple[str, str], float] = {}
        for r in rows:
            worst[(r.cluster, r.metric)] = max(worst.get((r.cluster, r.metric), r.value), r.value)
        out += [Figure(metric=f"Max segment replication {_words(metric)}", scope=cluster, value=v, unit=_unit(metric))
                for (cluster, metric), v in worst.items()]
    if rows := by.get(STARTUP_DEVICE):
        out += [Figure(metric="Node startup time", scope=f"{r.cluster}/{r.node}", value=r.value, unit="s")
                for r in rows]
    return out
