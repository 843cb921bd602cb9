"""Rally's feature stats devices (and OpenSearch Benchmark's ``segment-replication-stats``), with their names,
parameters and requests:

- transform-stats: ``GET _transform/_stats`` every interval, per transform the counters and times; the last
  sample's values are Rally's ``total_*`` figures, with ``throughput`` = documents processed per second of
  search + processing + index time.
- searchable-snapshots-stats: ``GET _searchable_snapshots/stats`` (``level=indices`` when indices are given),
  per Lucene file type the counters.
- data-stream-stats: ``GET _data_stream/_stats``: data streams, backing indices and store size, per data stream too.
- ingest-pipeline-stats: ``GET _nodes/stats/ingest`` at the start and at the end; the summary reports the change
  (per node, per pipeline and per processor, and the cluster's total), as Rally does.
- disk-usage-stats: ``POST <index>/_disk_usage?run_expensive_tasks=true`` once at the end, per index and field.
- geoip-stats: ``GET _ingest/geoip/stats`` once at the end, per node the cache counters.
- master-node-stats: ``GET _cluster/state/master_node`` + ``_nodes/<id>``: which node is master (a change of
  master during the race shows as more than one).
- segment-replication-stats (OpenSearch): ``GET _cat/segment_replication/<index>`` per shard: checkpoints and
  bytes behind, current and last lag, rejected requests.

A device whose API the cluster does not serve (an engine without it, a distribution without the module) is
refused in one line before the schedule starts (``check``), never sampled into a column of failures.
"""

from __future__ import annotations

import fnmatch
from typing import Any, ClassVar

from bench.driver.samples import TelemetryRow
from bench.telemetry.device import ClusterDevice, Sampled, TelemetryError, flatten, rows_of, snippet
from bench.util.errors import ConfigError


class Unserved(ConfigError):
    """A device the cluster cannot serve: one line before the schedule, the race fails."""


def indices_for(device: str, value: Any, cluster: str) -> list[str] | None:
    """Rally's ``<device>-indices``: a pattern, a list, or {cluster: [patterns]} (None: every index)."""
    if value is None or value == "":
        return None
    if isinstance(value, dict):
        got = value.get(cluster)
        return None if got is None else [str(v) for v in (got if isinstance(got, list) else [got])]
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


class FeatureDevice(ClusterDevice):
    """A cluster device with an API some engines or distributions lack."""

    probe: ClassVar[tuple[str, str]] = ("GET", "/")  # the request that shows whether the API is there
    engines: ClassVar[tuple[str, ...]] = ("elasticsearch", "opensearch")
    module_hint: ClassVar[str] = ""

    def scopes(self) -> list[str]:
        # Rally: a {cluster: [...]} indices parameter names the clusters sampled.
        indices = self.params.get(f"{self.name}-indices")
        scopes = super().scopes()
        return [c for c in scopes if c in indices] if isinstance(indices, dict) else scopes

    async def check(self) -> None:
        for cluster in self.scopes():
            engine = self.ctx.engine(cluster)
            if engine not in self.engines:
                raise Unserved(f"telemetry device {self.name}: cluster {cluster} runs {engine}, which has no such "
                               f"API ({' or '.join(self.engines)} only); leave the device out")
            method, path = self.probe
            try:
                status, body = await self._http[cluster].request(method, path, timeout=self.request_timeout)
            except Exception:  # noqa: BLE001 - an unreachable cluster is the samples' failure to record, not this
                continue
            if _no_handler(status, body):
                raise Unserved(f"telemetry device {self.name}: cluster {cluster} ({engine} "
                               f"{self.ctx.clusters.get(cluster, {}).get('version', '')}) does not serve "
                               f"{method} {path} (HTTP {status}: {snippet(body, 120)}); "
                               f"{self.module_hint or 'use a distribution that has it'}, or leave the device out")


def _no_handler(status: int, body: Any) -> bool:
    """The engine does not know the endpoint (as opposed to: knows it, and answers an error about the data)."""
    if status in (404, 405, 400):
        text = snippet(body, 2000).lower()
        # Without the module the path falls through to the index APIs ("Invalid index name [_transform]").
        return "no handler found" in text or "incorrect http method" in text or "must not start with '_'" in text or (
            status == 404 and "index_not_found" not in text and "resource_not_found" not in text
            and "no searchable snapshots" not in text)
    return False


class TransformStats(FeatureDevice):
    name = "transform-stats"
    probe = ("GET", "/_transform/_stats")
    engines = ("elasticsearch",)
    module_hint = "use a distribution with the transform module (x-pack-transform)"

    async def sample(self, scope: str, ts: float) -> Sampled:
        _, body = await self.get(scope, "/_transform/_stats", {"size": "1000"})
        wanted = indices_for(self.name, self.params.get("transform-stats-transforms"), scope)
        rows: list[TelemetryRow] = []
        for t in (body or {}).get("transforms", []):
            tid = str(t.get("id"))
            if wanted is not None and tid not in wanted:
                continue
            stats = t.get("stats") or {}
            values = {k: float(stats.get(k, 0) or 0) for k in (
                "pages_processed", "documents_processed", "documents_indexed", "index_total", "index_failures",
                "search_total", "search_failures", "processing_total", "search_time_in_ms", "index_time_in_ms",
                "processing_time_in_ms")}
            busy = values["search_time_in_ms"] + values["processing_time_in_ms"] + values["index_time_in_ms"]
            if busy > 0:
                values["throughput"] = values["documents_processed"] / busy * 1000.0
            rows += rows_of(ts, scope, tid, self.name, values)
        return Sampled(rows=rows)


class SearchableSnapshotsStats(FeatureDevice):
    name = "searchable-snapshots-stats"
    probe = ("GET", "/_searchable_snapshots/stats")
    engines = ("elasticsearch",)
    module_hint = "use a distribution with the searchable-snapshots module"

    async def sample(self, scope: str, ts: float) -> Sampled:
        indices = indices_for(self.name, self.params.get("searchable-snapshots-stats-indices"), scope)
        status, body = await self.get(scope, "/_searchable_snapshots/stats",
                                      {"level": "indices" if indices else "cluster"}, ok=(404,))
        if status == 404:  # no searchable snapshot mounted yet: Rally keeps sampling, indices may come later
            return Sampled(rows=[TelemetryRow(ts, scope, "", self.name, "mounted_indices", 0.0)])
        rows: list[TelemetryRow] = []
        for f in (body or {}).get("total", []):
            rows += _file_rows(ts, scope, "_all", f)
        for index, data in ((body or {}).get("indices") or {}).items():
            if indices and any(fnmatch.fnmatch(index, p) for p in indices):
                for f in (data or {}).get("total", []):
                    rows += _file_rows(ts, scope, index, f)
        return Sampled(rows=rows, raw=body)


def _file_rows(ts: float, cluster: str, index: str, stats: dict[str, Any]) -> list[TelemetryRow]:
    ext = str(stats.get("file_ext", "?"))
    return rows_of(ts, cluster, index, "searchable-snapshots-stats",
                   ((f"{ext}.{k}", v) for k, v in flatten({k: v for k, v in stats.items() if k != "file_ext"})))


class DataStreamStats(FeatureDevice):
    name = "data-stream-stats"
    probe = ("GET", "/_data_stream/_stats")
    module_hint = "use a distribution with the data-streams module"

    async def check(self) -> None:
        for cluster in self.scopes():
            if self.ctx.engine(cluster) == "elasticsearch" and self.ctx.version(cluster) and \
                    self.ctx.version(cluster) < (7, 9):
                raise Unserved(f"telemetry device {self.name}: cluster {cluster} runs Elasticsearch "
                               f"{'.'.join(map(str, self.ctx.version(cluster)))}; data stream stats need 7.9 or "
                               f"later (Rally's rule); leave the device out")
        await super().check()

    async def sample(self, scope: str, ts: float) -> Sampled:
        _, body = await self.get(scope, "/_data_stream/_stats")
        body = body or {}
        shards = body.get("_shards") or {}
        rows = rows_of(ts, scope, "", self.name, {
            "data_stream_count": body.get("data_stream_count", 0), "backing_indices": body.get("backing_indices", 0),
            "total_store_size_bytes": body.get("total_store_size_bytes", 0),
            "shards.total": shards.get("total", 0), "shards.failed": shards.get("failed", 0)})
        for ds in body.get("data_streams", []):
            rows += rows_of(ts, scope, str(ds.get("data_stream")), self.name, {
                "backing_indices": ds.get("backing_indices", 0), "store_size_bytes": ds.get("store_size_bytes", 0),
                "maximum_timestamp": ds.get("maximum_timestamp", 0)})
        return Sampled(rows=rows)


class IngestPipelineStats(FeatureDevice):
    """Sampled at the start and the end; the summary reports the change, as Rally's device does."""

    name = "ingest-pipeline-stats"
    bounds_only = True
    probe = ("GET", "/_nodes/stats/ingest")

    async def sample(self, scope: str, ts: float) -> Sampled:
        _, body = await self.get(scope, "/_nodes/stats/ingest")
        rows: list[TelemetryRow] = []
        for node in ((body or {}).get("nodes") or {}).values():
            name = str(node.get("name"))
            ingest = node.get("ingest") or {}
            total = ingest.get("total") or {}
            rows += rows_of(ts, scope, name, self.name, {f"node.{k}": total.get(k, 0) for k in
                                                         ("count", "time_in_millis", "failed")})
            for pipeline, stats in (ingest.get("pipelines") or {}).items():
                rows += rows_of(ts, scope, name, self.name, {f"pipeline.{pipeline}.{k}": stats.get(k, 0)
                                                             for k in ("count", "time_in_millis", "failed")})
                # processors of the same type are numbered 1..N in order, as Rally labels them
                for n, processor in enumerate(stats.get("processors") or [], start=1):
                    for ptype, pstats in processor.items():
                        inner = (pstats or {}).get("stats") or {}
                        rows += rows_of(ts, scope, name, self.name, {
                            f"processor.{pipeline}.{ptype}_{n}.{k}": inner.get(k, 0)
                            for k in ("count", "time_in_millis", "failed")})
        return Sampled(rows=rows)


class DiskUsageStats(FeatureDevice):
    name = "disk-usage-stats"
    end_only = True
    probe = ("GET", "/_nodes/_local/version")  # in every engine version bench runs; the index is checked at the end

    async def sample(self, scope: str, ts: float) -> Sampled:
        indices = indices_for(self.name, self.params.get("disk-usage-stats-indices"), scope) or ["*"]
        flush = "true" if self.params.get("disk-usage-stats-flush", True) else "false"
        timeout = float(self.params.get("disk-usage-stats-timeout") or 600)
        rows: list[TelemetryRow] = []
        missing: list[str] = []
        for index in indices:
            status, body = await self._http[scope].request(
                "POST", f"/{index}/_disk_usage", params={"run_expensive_tasks": "true", "flush": flush},
                timeout=timeout)
            if status == 404:
                missing.append(index)
                continue
            if status >= 400:
                raise TelemetryError(f"POST {index}/_disk_usage on {scope} answered HTTP {status}: {snippet(body)}")
            if ((body or {}).get("_shards") or {}).get("failed"):
                raise TelemetryError(f"disk usage of {index} on {scope}: shards failed: "
                                     f"{snippet(body['_shards'].get('failures'))}")
            for name, data in (body or {}).items():
                if name == "_shards":
                    continue
                for field, info in ((data or {}).get("fields") or {}).items():
                    values = {"total": info.get("total_in_bytes", 0),
                              "inverted_index": (info.get("inverted_index") or {}).get("total_in_bytes", 0)}
                    for part in ("stored_fields", "doc_values", "points", "norms", "term_vectors", "knn_vectors"):
                        values[part] = info.get(f"{part}_in_bytes", 0)
                    rows += rows_of(ts, scope, f"{name}/{field}", self.name,
                                    {k: v for k, v in values.items() if k == "total" or v})
        if not rows and missing:
            raise TelemetryError(f"disk-usage-stats on {scope}: no index found for {', '.join(missing)}")
        return Sampled(rows=rows, errors=[f"no index {i} for disk usage" for i in missing])


class GeoIpStats(FeatureDevice):
    name = "geoip-stats"
    end_only = True
    probe = ("GET", "/_ingest/geoip/stats")
    engines = ("elasticsearch",)
    module_hint = "use a distribution with the ingest-geoip module"

    async def sample(self, scope: str, ts: float) -> Sampled:
        _, names = await self.get(scope, "/_nodes", {"filter_path": "nodes.*.name"})
        id_to_name = {k: str(v.get("name")) for k, v in ((names or {}).get("nodes") or {}).items()}
        _, body = await self.get(scope, "/_ingest/geoip/stats")
        rows: list[TelemetryRow] = []
        for node_id, node in ((body or {}).get("nodes") or {}).items():
            cache = node.get("cache_stats") or {}
            rows += rows_of(ts, scope, id_to_name.get(node_id, node_id), self.name, {
                f"cache_{k}": cache.get(k, 0) for k in ("count", "hits", "misses", "evictions",
                                                        "hits_time_in_millis", "misses_time_in_millis")})
        return Sampled(rows=rows)


class MasterNodeStats(FeatureDevice):
    name = "master-node-stats"
    probe = ("GET", "/_cluster/state/master_node")

    async def sample(self, scope: str, ts: float) -> Sampled:
        _, state = await self.get(scope, "/_cluster/state/master_node")
        master = str((state or {}).get("master_node") or "")
        if not master:
            raise TelemetryError(f"cluster {scope} has no elected master")
        _, info = await self.get(scope, f"/_nodes/{master}", {"filter_path": "nodes.*.name"})
        name = str((((info or {}).get("nodes") or {}).get(master) or {}).get("name") or master)
        return Sampled(rows=[TelemetryRow(ts, scope, name, self.name, "master", 1.0)],
                       raw={"master_node": master, "node": name})


class SegmentReplicationStats(FeatureDevice):
    name = "segment-replication-stats"
    probe = ("GET", "/_cat/segment_replication?format=json")
    engines = ("opensearch",)
    module_hint = "segment replication is OpenSearch 2.7 or later"

    async def sample(self, scope: str, ts: float) -> Sampled:
        rows: list[TelemetryRow] = []
        for index in indices_for(self.name, self.params.get("segment-replication-stats-indices"), scope) or [""]:
            _, body = await self.get(scope, f"/_cat/segment_replication/{index}",
                                     {"format": "json", "time": "ms", "bytes": "b"})
            for shard in body if isinstance(body, list) else []:
                node = f"{shard.get('shardId')}@{shard.get('target_node')}"
                rows += rows_of(ts, scope, node, self.name, {
                    "checkpoints_behind": _num(shard.get("checkpoints_behind")),
                    "bytes_behind": _num(shard.get("bytes_behind")),
                    "current_lag_in_millis": _num(shard.get("current_lag")),
                    "last_completed_lag_in_millis": _num(shard.get("last_completed_lag")),
                    "rejected_requests": _num(shard.get("rejected_requests"))})
        return Sampled(rows=rows)


def _num(v: Any) -> float:
    try:
        return float(str(v).rstrip("msb") if isinstance(v, str) else v)
    except (TypeError, ValueError):
        return 0.0


FEATURE_DEVICES: tuple[type[FeatureDevice], ...] = (
    TransformStats, SearchableSnapshotsStats, DataStreamStats, IngestPipelineStats, DiskUsageStats, GeoIpStats,
    MasterNodeStats, SegmentReplicationStats)
