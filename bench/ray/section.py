"""The summary's "load-driver" section: what each Ray node of a race drove with, from the trial's stored
``load-driver`` telemetry rows (workers, clock offset, the driver's CPU per worker, corpus preparation), so
``bench show`` and the reports list the nodes, not only the log."""

from __future__ import annotations

from typing import Any

import pandas as pd
from pydantic import BaseModel

from bench.results.sections import MetricRow
from bench.results.summary import Summary
from bench.trials.model import TrialReader

SECTION = "load-driver"
DEVICE = "load-driver"  # the telemetry rows RayWorkerPool.telemetry() stores


class LoadDriverNode(BaseModel):
    node: str  # "Ray node 10.0.0.6 (3f2a9c1b)"
    workers: int
    clock_offset_ms: float | None = None
    cpu_cores_per_worker: float | None = None
    corpus_prepare_s: float | None = None


class LoadDriverSection(BaseModel):
    nodes: list[LoadDriverNode]


def load_driver_section(telemetry: pd.DataFrame) -> LoadDriverSection | None:
    """The section from a trial's telemetry rows; None when no distributed load driver stored any."""
    if telemetry.empty:
        return None
    rows = telemetry[telemetry["device"] == DEVICE]
    if rows.empty:
        return None
    nodes = []
    for node, g in rows.groupby("node", sort=False):
        last = {str(m): float(v) for m, v in zip(g["metric"], g["value"])}
        nodes.append(LoadDriverNode(node=str(node), workers=int(last.get("workers", 0)),
                                    clock_offset_ms=last.get("clock_offset_ms"),
                                    cpu_cores_per_worker=last.get("cpu_cores_per_worker"),
                                    corpus_prepare_s=last.get("corpus_prepare_s")))
    return LoadDriverSection(nodes=nodes)


def enrich_summary(summary: Summary | None, trials: TrialReader, trial_id: str) -> Summary | None:
    """The summary enricher (``bench.trials.summary``): the load-driver nodes as the section, when there are any."""
    section = load_driver_section(trials.telemetry(trial_id))
    if section is None:
        return summary
    return (summary or Summary()).with_section(SECTION, section.model_dump(mode="json"))


def load_driver_rows(data: dict[str, Any]) -> list[MetricRow]:
    """Report rows, one set per node (the Task column names it)."""
    if not data:
        return []
    rows: list[MetricRow] = []
    nodes = LoadDriverSection.model_validate(data).nodes
    for n in nodes:
        scope = _scope(n.node, [m.node for m in nodes])
        rows.append(MetricRow(metric="Load-driver workers", task=scope, value=n.workers, unit=""))
        if n.cpu_cores_per_worker is not None:
            rows.append(MetricRow(metric="Driver CPU per worker (Ray node, 100% = 1 core)", task=scope,
                                  value=n.cpu_cores_per_worker * 100, unit="%"))
        if n.clock_offset_ms is not None:
            rows.append(MetricRow(metric="Load-driver clock offset", task=scope, value=n.clock_offset_ms, unit="ms"))
        if n.corpus_prepare_s is not None:
            rows.append(MetricRow(metric="Load-driver corpus preparation", task=scope, value=n.corpus_prepare_s,
                                  unit="s"))
    return rows


def _scope(node: str, all_nodes: list[str]) -> str:
    """"Ray node 10.0.0.6" when that machine has one node: a Ray node's id changes with every `ray start`, its
    machine does not, so the rows of two trials from the same machines line up in a comparison."""
    ip = node.split(" (")[0]
    return ip if sum(1 for m in all_nodes if m.split(" (")[0] == ip) == 1 else node
