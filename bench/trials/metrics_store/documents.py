"""bench's records as Rally's metrics-store documents, and back.

Rally's layout and field names (``rally-races-*``: one document per race; ``rally-metrics-*``: one per measured
value -- a request's ``latency`` and its ``service_time``, each telemetry value; ``rally-results-*``: one per
summary figure), so Rally users' dashboards and queries work. bench's own fields follow the same style:
``bench-record`` (``request``/``telemetry``), ``bench-seq`` (the order rows were taken) and ``bench``, an unindexed
object holding what reading a trial back needs exactly (a sample's seconds as measured, the trial, the summary).
Pure functions: rows in, documents out; everything here was redacted when it was stored locally.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pandas as pd

from bench.driver.samples import RequestSample, TelemetryRow
from bench.results.stats import SAMPLE_COLUMNS, normalize_frame
from bench.results.summary import Summary
from bench.trials.metrics_store.layout import METRICS as METRICS  # re-exported: callers say documents.METRICS
from bench.trials.metrics_store.layout import RACES as RACES
from bench.trials.metrics_store.layout import RESULTS as RESULTS
from bench.trials.metrics_store.layout import Layout, kind
from bench.trials.model import TrialInfo


def race_timestamp(t: datetime) -> str:
    """Rally's ``race-timestamp`` (basic_date_time_no_millis, UTC)."""
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def index_name(prefix: str, index_kind: str, trial: TrialInfo, layout: Layout = "rally") -> str:
    """Rally's (and OSB's) monthly indices, by the race's start: rally-metrics-2026-11, benchmark-test-runs-2026-11."""
    t = trial.start_time if trial.start_time.tzinfo else trial.start_time.replace(tzinfo=timezone.utc)
    t = t.astimezone(timezone.utc)
    return f"{prefix}-{kind(index_kind, layout)}-{t.year:04d}-{t.month:02d}"


def _car_name(trial: TrialInfo) -> str:
    return "+".join(trial.car) if trial.car else "external"


def _distribution(trial: TrialInfo) -> tuple[str | None, str | None]:
    first = trial.clusters[0] if trial.clusters else {}
    return first.get("version"), first.get("engine")


def _common(trial: TrialInfo, environment: str) -> dict[str, Any]:
    """What every metrics and results document of a trial repeats (Rally's per-document race context)."""
    doc: dict[str, Any] = {"race-id": trial.id, "race-timestamp": race_timestamp(trial.start_time),
                           "environment": environment, "track": trial.track, "challenge": trial.challenge,
                           "car": _car_name(trial)}
    if trial.track_params:
        doc["track-params"] = _flat_params(trial.track_params)
    return doc


def _flat_params(params: dict[str, Any]) -> dict[str, Any]:
    # Track params of any shape must not fight over one field's mapping across races: text, as Rally's are.
    return {k: v if isinstance(v, str) else json.dumps(v, sort_keys=True) for k, v in params.items()}


def _tags_meta(trial: TrialInfo) -> dict[str, str]:
    # Rally puts user tags into every metric's meta as tag_<key>.
    return {f"tag_{k}": v for k, v in trial.user_tags.items()}


def race_document(trial: TrialInfo, summary: Summary | None, environment: str) -> dict[str, Any]:
    version, engine = _distribution(trial)
    doc: dict[str, Any] = {
        "race-id": trial.id, "race-timestamp": race_timestamp(trial.start_time), "environment": environment,
        "pipeline": trial.pipeline, "user-tags": trial.user_tags, "track": trial.track, "challenge": trial.challenge,
        "car": trial.car or ["external"], "node-count": sum(int(c.get("nodes") or 0) if isinstance(c.get("nodes"), int)
                                                           else len(c.get("nodes") or []) for c in trial.clusters),
        "cluster": {"distribution-version": version, "distribution-flavor": engine},
        "bench-version": trial.bench_version, "status": trial.status, "test-mode": trial.test_mode,
        "bench": {"trial": trial.model_dump(mode="json"),
                  "summary": summary.model_dump(mode="json") if summary is not None else None},
    }
    if trial.track_params:
        doc["track-params"] = _flat_params(trial.track_params)
    if trial.end_time is not None:
        doc["end-timestamp"] = race_timestamp(trial.end_time)
    if trial.error:
        doc["error"] = trial.error
    return doc


def trial_of(race_doc: dict[str, Any]) -> TrialInfo:
    return TrialInfo.model_validate(race_doc["bench"]["trial"])


def summary_of(race_doc: dict[str, Any]) -> Summary | None:
    data = (race_doc.get("bench") or {}).get("summary")
    return Summary.model_validate(data) if data else None


def sample_documents(trial: TrialInfo, sample: RequestSample, seq: int, environment: str
                     ) -> list[tuple[str, dict[str, Any]]]:
    """A request's two Rally metric documents, (id suffix, document): ``latency`` and ``service_time``; the
    latter also carries the sample exactly, for reading it back."""
    s = sample
    success = bool(s.success)
    meta: dict[str, Any] = {**_tags_meta(trial), "success": success, "client-id": int(s.client_id),
                            "weight": int(s.units), "unit": s.unit, "failed-units": int(s.failed_units),
                            "bytes-sent": int(s.bytes_sent), "bytes-received": int(s.bytes_received)}
    if s.status:
        meta["http-status"] = int(s.status)
    if not success or s.error_type:
        meta["error-type"] = s.error_type or "unknown"
    if s.error:
        meta["error-description"] = s.error
    base = {**_common(trial, environment), "@timestamp": int(round(s.absolute_time * 1000)),
            "relative-time": s.relative_time * 1000.0, "sample-type": "warmup" if s.warmup else "normal",
            "task": s.task, "operation": s.operation, "operation-type": s.operation_type, "meta": meta,
            "bench-record": "request", "bench-seq": seq}
    exact = {"absolute_time": s.absolute_time, "relative_time": s.relative_time, "latency": s.latency,
             "service_time": s.service_time, "error_type": s.error_type, "track_meta": s.meta}
    return [("l", {**base, "name": "latency", "value": s.latency * 1000.0, "unit": "ms"}),
            ("s", {**base, "name": "service_time", "value": s.service_time * 1000.0, "unit": "ms", "bench": exact})]


def telemetry_document(trial: TrialInfo, row: TelemetryRow, seq: int, environment: str) -> dict[str, Any]:
    return {**_common(trial, environment), "@timestamp": int(round(row.timestamp * 1000)), "name": row.metric,
            "value": row.value, "unit": "", "sample-type": "normal",
            "meta": {**_tags_meta(trial), "device": row.device, "cluster": row.cluster, "node_name": row.node},
            "bench-record": "telemetry", "bench-seq": seq,
            "bench": {"timestamp": row.timestamp, "raw": json.dumps(row.raw) if row.raw is not None else None}}


def result_documents(trial: TrialInfo, summary: Summary, environment: str) -> list[tuple[str, dict[str, Any]]]:
    """Rally's results: per task ``throughput`` (min/mean/median/max), ``latency`` and ``service_time``
    (percentiles as Rally's ``50_0`` keys), ``error_rate``, plus bench's errors by type and every other report row
    (cluster totals, telemetry, CCR lag) as ``{"single": value}`` with its unit."""
    version, engine = _distribution(trial)
    base = {**_common(trial, environment), "user-tags": trial.user_tags, "distribution-version": version,
            "distribution-flavor": engine, "active": True, "bench-version": trial.bench_version}
    if version and version.split(".")[0].isdigit():
        base["distribution-major-version"] = int(version.split(".")[0])
    docs: list[tuple[str, dict[str, Any]]] = []

    def add(key: str, **fields: Any) -> None:
        docs.append((key, {**base, **fields}))

    for t in summary.tasks:
        op = {"task": t.task, "operation": t.task, "operation-type": t.operation_type}
        if t.throughput is not None:
            tp = t.throughput
            add(f"{t.task}/throughput", **op, name="throughput", unit=f"{t.unit}/s",
                value={"min": tp.min, "mean": tp.mean, "median": tp.median, "max": tp.max, "unit": f"{t.unit}/s"})
        for name, pct in (("latency", t.latency), ("service_time", t.service_time)):
            if pct:
                add(f"{t.task}/{name}", **op, name=name, unit="ms",
                    value={f"{p:g}".replace(".", "_") if "." in f"{p:g}" else f"{p:g}_0": v for p, v in pct.items()}
                    | {"unit": "ms"})
        add(f"{t.task}/error_rate", **op, name="error_rate", unit="", value={"single": t.error_rate})
        add(f"{t.task}/duration", **op, name="duration", unit="s", value={"single": t.duration_s})
        for err_type, count in t.errors_by_type.items():
            add(f"{t.task}/errors/{err_type}", **op, name="error_count", unit="requests",
                value={"single": count}, meta={"error-type": err_type})
    task_names = {t.task for t in summary.tasks}
    for section, row in summary.labelled_rows():
        if row.task in task_names and not section:
            continue  # the task's own rows are above, in Rally's shape
        add(f"{section or 'cluster'}/{row.task}/{row.metric}", name=row.metric, task=row.task or None,
            unit=row.unit, value={"single": float(row.value)}, **({"meta": {"section": section}} if section else {}))
    return docs


def samples_frame(docs: list[dict[str, Any]]) -> pd.DataFrame:
    """``service_time`` documents (in ``bench-seq`` order) back into a samples frame, as the local store gives."""
    rows = []
    for d in docs:
        m, b = d.get("meta") or {}, d.get("bench") or {}
        rows.append(RequestSample(
            task=d.get("task", ""), operation=d.get("operation", ""), operation_type=d.get("operation-type", ""),
            client_id=int(m.get("client-id", 0)), absolute_time=float(b["absolute_time"]),
            relative_time=float(b["relative_time"]), latency=float(b["latency"]),
            service_time=float(b["service_time"]), units=int(m.get("weight", 0)), unit=m.get("unit", "ops"),
            bytes_sent=int(m.get("bytes-sent", 0)), success=bool(m.get("success", True)),
            error_type=b.get("error_type"), warmup=d.get("sample-type") == "warmup",
            failed_units=int(m.get("failed-units", 0)), bytes_received=int(m.get("bytes-received", 0)),
            status=int(m.get("http-status", 0)), error=m.get("error-description"), meta=b.get("track_meta")))
    return normalize_frame(pd.DataFrame.from_records(rows, columns=SAMPLE_COLUMNS))


def telemetry_frame(docs: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for d in docs:
        m, b = d.get("meta") or {}, d.get("bench") or {}
        raw = b.get("raw")
        rows.append({"timestamp": float(b.get("timestamp", d["@timestamp"] / 1000.0)), "cluster": m.get("cluster", ""),
                     "node": m.get("node_name", ""), "device": m.get("device", ""), "metric": d["name"],
                     "value": float(d["value"]), "raw": json.loads(raw) if isinstance(raw, str) else None})
    return pd.DataFrame(rows, columns=["timestamp", "cluster", "node", "device", "metric", "value", "raw"])
