"""node-stats: ``GET _nodes/stats`` per node, only the sections kept (metric selection in the path,
``filter_path`` in the query), stored as one row per numeric value (``jvm.gc.collectors.young.collection_count``).

Not skewing the benchmark: the ``completion`` index section is never requested, and on Elasticsearch
before 7.2.0 neither is ``docs`` -- on those versions computing them made shards refresh (rally#608),
which changes segment counts, merges and indexing throughput. The request is read-only otherwise; no
``include_segment_file_sizes`` (it opens every segment's files).
"""

from __future__ import annotations

import logging
from typing import Any

from bench.telemetry.device import ClusterDevice, Sampled, TelemetryContext, TelemetryError, flatten, rows_of

log = logging.getLogger(__name__)

REFRESHING_SECTIONS_BEFORE_7_2 = ("docs",)
INDEX_METRIC_ALIASES = {"merges": "merge"}


def index_metrics(params: dict[str, Any], version: tuple[int, ...], engine: str) -> list[str]:
    metrics = [m.strip() for m in str(params.get("node-stats-include-indices-metrics") or "").split(",") if m.strip()]
    # Rally's names are the response's section names ("merges"); the request wants "merge".
    metrics = list(dict.fromkeys(INDEX_METRIC_ALIASES.get(m, m) for m in metrics if m != "completion"))
    if engine == "elasticsearch" and version and version < (7, 2, 0):
        metrics = [m for m in metrics if m not in REFRESHING_SECTIONS_BEFORE_7_2]
    return metrics


def request_for(params: dict[str, Any], version: tuple[int, ...] = (), engine: str = "elasticsearch"
                ) -> tuple[str, dict[str, Any]]:
    """The path and query parameters of one node-stats sample, from the device's parameters."""
    on = lambda key: bool(params.get(f"node-stats-include-{key}", True))
    metrics: list[str] = []
    keep = ["nodes.*.name"]
    idx = index_metrics(params, version, engine)
    if idx:
        metrics.append("indices")
        keep.append("nodes.*.indices")  # the path already limits it to the chosen sections
    if on("thread-pools"):
        metrics.append("thread_pool")
        keep += ["nodes.*.thread_pool.write", "nodes.*.thread_pool.search"]
    if on("breakers"):
        metrics.append("breaker")
        keep += ["nodes.*.breakers.*.tripped", "nodes.*.breakers.*.estimated_size_in_bytes"]
    if on("gc") or on("mem"):
        metrics.append("jvm")
        if on("gc"):
            keep += ["nodes.*.jvm.gc.collectors.*.collection_count",
                     "nodes.*.jvm.gc.collectors.*.collection_time_in_millis"]
        if on("mem"):
            keep += ["nodes.*.jvm.mem.heap_used_in_bytes", "nodes.*.jvm.mem.heap_max_in_bytes",
                     "nodes.*.jvm.mem.heap_used_percent"]
    if on("process") or on("mem"):
        metrics.append("os")
        if on("process"):
            keep += ["nodes.*.os.cpu.percent", "nodes.*.os.cpu.load_average"]
        if on("mem"):
            keep += ["nodes.*.os.mem.used_in_bytes", "nodes.*.os.mem.free_in_bytes", "nodes.*.os.mem.total_in_bytes",
                     "nodes.*.os.mem.used_percent"]
    if on("process"):
        metrics.append("process")
        keep += ["nodes.*.process.cpu.percent", "nodes.*.process.cpu.total_in_millis",
                 "nodes.*.process.open_file_descriptors"]
    if on("fs"):
        metrics.append("fs")
        keep += ["nodes.*.fs.io_stats.total", "nodes.*.fs.total.available_in_bytes"]
    if on("network"):
        metrics += ["transport", "http"]
        keep += [f"nodes.*.transport.{k}" for k in ("rx_count", "rx_size_in_bytes", "tx_count", "tx_size_in_bytes",
                                                   "server_open")]
        keep += ["nodes.*.http.current_open", "nodes.*.http.total_opened",
                 "nodes.*.http.routes.*.requests.total_size_in_bytes",
                 "nodes.*.http.routes.*.responses.total_size_in_bytes"]
    if on("indexing-pressure"):
        metrics.append("indexing_pressure")
        keep.append("nodes.*.indexing_pressure.memory")
    path = "/_nodes/stats/" + ",".join(metrics) if metrics else "/_nodes/stats"
    if idx:
        path += "/" + ",".join(idx)
    query: dict[str, Any] = {"filter_path": ",".join(keep)}
    if params.get("node-stats-include-indices"):
        query["level"] = "indices"
    return path, query


def node_metrics(node: dict[str, Any]) -> dict[str, float]:
    """One node's document -> metric name -> value. http per-route byte counts become two totals."""
    doc = dict(node)
    http = dict(doc.get("http") or {})
    routes = http.pop("routes", None)
    if routes is not None:
        http["rx_size_in_bytes"] = sum((r.get("requests") or {}).get("total_size_in_bytes", 0) for r in routes.values())
        http["tx_size_in_bytes"] = sum((r.get("responses") or {}).get("total_size_in_bytes", 0)
                                       for r in routes.values())
    if http:
        doc["http"] = http
    indices = dict(doc.get("indices") or {})
    per_index = indices.pop("indices", None)  # level=indices: kept under "index.<name>.<section>"
    doc["indices"] = indices
    if per_index:
        doc["index"] = per_index
    doc.pop("name", None)
    # a sentinel (Long.MIN_VALUE until an auto-id append happened), not a measurement
    return {k: v for k, v in flatten(doc) if not k.endswith("max_unsafe_auto_id_timestamp")}


class NodeStats(ClusterDevice):
    name = "node-stats"

    def __init__(self, params: dict[str, Any], ctx: TelemetryContext) -> None:
        super().__init__(params, ctx)
        self._requests = {c: request_for(params, ctx.version(c), ctx.engine(c)) for c in self.scopes()}
        for c in self.scopes():
            version, engine = ctx.version(c), ctx.engine(c)
            if engine == "elasticsearch" and version and version < (7, 2, 0) and "docs" in str(
                    params.get("node-stats-include-indices-metrics")):
                log.warning("node-stats on %s: Elasticsearch %s refreshes shards to compute docs stats; "
                            "leaving 'docs' out", c, ".".join(map(str, version)))

    async def sample(self, scope: str, ts: float) -> Sampled:
        path, query = self._requests[scope]
        _, body = await self.get(scope, path, query)
        nodes = (body or {}).get("nodes") if isinstance(body, dict) else None
        if not nodes:
            raise TelemetryError(f"GET {path} on {scope} answered without nodes")
        rows = []
        for node_id, node in nodes.items():
            rows += rows_of(ts, scope, str(node.get("name") or node_id), self.name, node_metrics(node))
        return Sampled(rows=rows, raw=body)
