"""The headline of a race: the few rows a reader looks at first, before the full table.

Per task that did real work (more than one request, or any failure): min/median/max throughput, p50/p99
latency and service time, error rate. Then the rows extensions mark as headline rows when they register their
summary section (per-node CPU, disk and network, CCR lag and catch-up). Pure: a Summary in, rows out.
"""

from __future__ import annotations

from pydantic import BaseModel

from bench.results.sections import MetricRow, section_kinds, section_title
from bench.results.summary import Summary, TaskSummary

# The task rows of the headline, by their name in the full table.
TASK_METRICS = ("Min Throughput", "Median Throughput", "Max Throughput", "50th percentile latency",
                "99th percentile latency", "50th percentile service time", "99th percentile service time",
                "error rate")


class TaskLine(BaseModel):
    task: str
    unit: str  # throughput unit, e.g. docs/s
    throughput: tuple[float, float, float] | None  # min, median, max
    latency: tuple[float, float] | None  # p50, p99 (ms); p100 where fewer than 100 requests
    service_time: tuple[float, float] | None
    high_label: str  # "p99" or the percentile shown instead ("p100")
    error_rate: float  # %
    failed_requests: int


class Headline(BaseModel):
    tasks: list[TaskLine] = []
    other: list[tuple[str, MetricRow]] = []  # (section title, row)


def headline_tasks(summary: Summary) -> list[TaskSummary]:
    """Tasks worth a headline line: those that ran more than one request or had failures (one-off steps such
    as create-index are in the full table)."""
    return [t for t in summary.tasks if t.requests > 1 or t.failed_requests]


def _pair(pcts: dict[float, float]) -> tuple[tuple[float, float] | None, str]:
    if not pcts:
        return None, "p99"
    high = 99.0 if 99.0 in pcts else max(p for p in pcts if p <= 100.0)
    label = f"p{high:g}"
    return (pcts.get(50.0, pcts[high]), pcts[high]), label


def race_headline(summary: Summary) -> Headline:
    lines = []
    for t in headline_tasks(summary):
        lat, label = _pair(t.latency)
        svc, _ = _pair(t.service_time)
        tp = t.throughput
        lines.append(TaskLine(task=t.task, unit=tp.unit if tp else f"{t.unit}/s",
                              throughput=(tp.min, tp.median, tp.max) if tp else None, latency=lat,
                              service_time=svc, high_label=label, error_rate=t.error_rate * 100.0,
                              failed_requests=t.failed_requests))
    return Headline(tasks=lines, other=headline_section_rows(summary))


def headline_section_rows(summary: Summary) -> list[tuple[str, MetricRow]]:
    kinds = {k.name: k for k in section_kinds()}
    out = []
    for section, row in summary.labelled_rows():
        kind = kinds.get(section)
        # A zero (no disk reads, no transport traffic on one node, no rejections) says nothing at a glance.
        if kind is not None and kind.headline is not None and kind.headline(row.metric) and row.value:
            out.append((section_title(row.metric, section) or section, row))
    return out
