"""The redline section of a trial's summary: the objective, every step (the curve) and the sustained maximum,
as stored (JSON), and the report rows, headline and table made from it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from bench.redline.step import StepResult
from bench.results.sections import MetricRow, SectionTable

SECTION = "redline"
SUSTAINED = "Redline sustained throughput"
SUSTAINED_TARGET = "Redline sustained target"


class RedlineSection(BaseModel):
    task: str
    objective: str  # e.g. "p99 latency ≤ 500 ms, errors ≤ 0 %"
    percentile: float
    latency_ms: float
    max_error_rate: float
    tolerance: float
    warmup_s: float
    measure_s: float
    steps: list[StepResult]
    sustained: float | None  # sustained target (requests/s), None when no step met the objective
    lowest_failing: float | None  # lowest failing target above it
    converged: bool
    reason: str

    def best(self) -> StepResult | None:
        """The step the sustained redline comes from."""
        return next((s for s in self.steps if s.met and s.target == self.sustained), None)


def sustained_metric(section: RedlineSection | dict[str, Any]) -> str:
    s = section if isinstance(section, RedlineSection) else RedlineSection.model_validate(section)
    return f"{SUSTAINED} ({s.objective})"


def redline_rows(data: dict[str, Any]) -> list[MetricRow]:
    """The sustained maximum (in the task's unit and as a target in requests/s), the bracket and the steps taken;
    the per-step curve is in ``curve_table``."""
    s = RedlineSection.model_validate(data)
    best = s.best()
    rows: list[MetricRow] = []
    if best is not None:
        rows.append(MetricRow(metric=sustained_metric(s), task=s.task, value=best.throughput, unit=f"{best.unit}/s"))
        rows.append(MetricRow(metric=SUSTAINED_TARGET, task=s.task, value=best.target, unit="requests/s"))
    if s.lowest_failing is not None:
        rows.append(MetricRow(metric="Redline lowest failing target", task=s.task, value=s.lowest_failing,
                              unit="requests/s"))
    rows.append(MetricRow(metric="Redline steps", task=s.task, value=len(s.steps), unit=""))
    return rows


def is_headline_metric(metric: str) -> bool:
    return metric.startswith(SUSTAINED)


def is_redline_metric(metric: str) -> bool:
    return metric.startswith("Redline ")


CURVE_HEADERS = ["step", "target req/s", "achieved req/s", "throughput", "latency p50 ms", "latency p99 ms",
                 "service p50 ms", "service p99 ms", "errors", "result"]


def curve_table(data: dict[str, Any]) -> list[list[str]]:
    """One row per step, in the order they ran (``CURVE_HEADERS``)."""
    s = RedlineSection.model_validate(data)
    out = []
    for st in s.steps:
        out.append([str(st.step), f"{st.target:,.4g}", f"{st.achieved:,.4g}", f"{st.throughput:,.0f} {st.unit}/s",
                    _ms(st.latency_ms.get("50")), _ms(st.latency_ms.get("99")), _ms(st.service_time_ms.get("50")),
                    _ms(st.service_time_ms.get("99")), f"{st.errors} ({st.error_rate * 100:.2g} %)",
                    "met" if st.met else f"missed: {st.miss}"])
    return out


def summary_line(data: dict[str, Any]) -> str:
    """One sentence: the sustained maximum and how it was found."""
    s = RedlineSection.model_validate(data)
    best = s.best()
    head = (f"Redline of {s.task} at {s.objective}: "
            + (f"{best.throughput:,.0f} {best.unit}/s sustained (target {best.target:,.4g} requests/s"
               + (f", {s.lowest_failing:,.4g} failed)" if s.lowest_failing is not None else ")")
               if best is not None else "no step met the objective"))
    return f"{head}; {len(s.steps)} steps of {s.warmup_s:g} s warmup + {s.measure_s:g} s measured; {s.reason}."


def _ms(v: float | None) -> str:
    return "–" if v is None or v != v else f"{v:,.1f}"


def redline_tables(data: dict[str, Any]) -> list[SectionTable]:
    """The curve as a report table, titled with the objective and the result."""
    s = RedlineSection.model_validate(data)
    return [SectionTable(name=f"Redline curve of {s.task} ({s.objective})", headers=CURVE_HEADERS,
                         rows=curve_table(data))]
