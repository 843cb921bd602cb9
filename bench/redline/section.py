"""The redline section of a trial's summary: the objective, every step (the curve) and the sustained maximum,
as stored (JSON), and the report rows, headline and table made from it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from bench.api import CurvePoint
from bench.redline.step import StepResult
from bench.results.sections import MetricRow, SectionTable

SECTION = "redline"
SUSTAINED = "Redline sustained throughput"
SUSTAINED_TARGET = "Redline sustained target"
FAILING = "Redline first failing throughput"


class RedlineSection(BaseModel):
    task: str
    objective: str  # e.g. "p99 latency ≤ 500 ms, errors ≤ 0 %"
    percentile: float
    latency_ms: float | None  # None: no latency objective (a step objective only)
    max_error_rate: float
    tolerance: float
    warmup_s: float
    measure_s: float
    cooldown_s: float = 0.0  # after each step's load, for its step objectives
    steps: list[StepResult]
    sustained: float | None  # sustained target (requests/s), None when no step met the objective
    lowest_failing: float | None  # lowest failing target above it
    converged: bool
    reason: str

    def best(self) -> StepResult | None:
        """The step the sustained redline comes from."""
        return next((s for s in self.steps if s.met and s.target == self.sustained), None)

    def first_failing(self) -> StepResult | None:
        """The (last) step at the lowest failing target above the sustained one: the first that did not hold."""
        return next((s for s in reversed(self.steps) if not s.met and s.target == self.lowest_failing), None)


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
        failing = s.first_failing()
        if failing is not None and failing.objectives:
            rows.append(MetricRow(metric=FAILING, task=s.task, value=failing.throughput, unit=f"{failing.unit}/s"))
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
    extra = any(st.objectives for st in s.steps)
    for st in s.steps:
        row = [str(st.step), f"{st.target:,.4g}", f"{st.achieved:,.4g}", f"{st.throughput:,.0f} {st.unit}/s",
               _ms(st.latency_ms.get("50")), _ms(st.latency_ms.get("99")), _ms(st.service_time_ms.get("50")),
               _ms(st.service_time_ms.get("99")), f"{st.errors} ({st.error_rate * 100:.2g} %)"]
        if extra:
            row.append(figures_text(st))
        out.append([*row, "met" if st.met else f"missed: {st.miss}"])
    return out


def curve_headers(data: dict[str, Any]) -> list[str]:
    """``CURVE_HEADERS``, with a column for the step objectives' figures when a step has any."""
    s = RedlineSection.model_validate(data)
    if any(st.objectives for st in s.steps):
        return [*CURVE_HEADERS[:-1], "step objectives", CURVE_HEADERS[-1]]
    return CURVE_HEADERS


def figures_text(st: StepResult) -> str:
    """E.g. "lag p99 1.2 s, catch-up 0.4 s" (unknown figures say so)."""
    return "; ".join(", ".join(f"{k} {_num(v)}" for k, v in o.figures.items()) for o in st.objectives)


def _num(v: float | None) -> str:
    return "unknown" if v is None or v != v else f"{v:,.3g}"


def summary_line(data: dict[str, Any]) -> str:
    """One sentence: the sustained maximum and how it was found."""
    s = RedlineSection.model_validate(data)
    best = s.best()
    head = (f"Redline of {s.task} at {s.objective}: "
            + (f"{best.throughput:,.0f} {best.unit}/s sustained (target {best.target:,.4g} requests/s"
               + (f", {s.lowest_failing:,.4g} failed)" if s.lowest_failing is not None else ")")
               if best is not None else "no step met the objective"))
    failing = s.first_failing()
    if failing is not None and failing.objectives:
        head += (f"; the first that did not: {failing.throughput:,.0f} {failing.unit}/s (step {failing.step}, "
                 f"{failing.why})")
    elif any(st.objectives for st in s.steps) and s.steps and all(st.met for st in s.steps):
        head += "; every step within the objective"
    cool = f" + {s.cooldown_s:g} s cool-down" if s.cooldown_s else ""
    return (f"{head}; {len(s.steps)} steps of {s.warmup_s:g} s warmup + {s.measure_s:g} s measured{cool}; "
            f"{s.reason}.")


def _ms(v: float | None) -> str:
    return "–" if v is None or v != v else f"{v:,.1f}"


def redline_tables(data: dict[str, Any]) -> list[SectionTable]:
    """The curve as a report table, titled with the objective and the result."""
    s = RedlineSection.model_validate(data)
    return [SectionTable(name=f"Redline curve of {s.task} ({s.objective})", headers=curve_headers(data),
                         rows=curve_table(data)), *objective_curve_tables(s)]


def answer_steps(s: RedlineSection) -> list[StepResult]:
    """The two steps the answer rests on: the sustained one and the first failing one (those that ran)."""
    return [st for st in (s.best(), s.first_failing()) if st is not None]


def per_second(points: list[CurvePoint]) -> dict[int, tuple[float | None, str]]:
    """Second -> (the highest known value in it, its phase); None where every reading in it was unknown."""
    out: dict[int, tuple[float | None, str]] = {}
    for p in points:
        sec = int(p.t)
        old = out.get(sec, (None, p.phase))[0]
        known = [v for v in (old, p.value) if v is not None]
        out[sec] = (max(known) if known else None, out.get(sec, (None, p.phase))[1])
    return out


def objective_curve_tables(s: RedlineSection) -> list[SectionTable]:
    """Per step objective with a curve: its value in every second of the sustained and the first failing step."""
    steps = [st for st in answer_steps(s) if st.objectives]
    tables: list[SectionTable] = []
    for key in dict.fromkeys(o.key for st in steps for o in st.objectives):
        found = [(st, o) for st in steps for o in st.objectives if o.key == key and o.curve]
        if not found:
            continue
        bins = [per_second(o.curve) for _, o in found]
        seconds = sorted(set().union(*bins))
        rows = [[str(sec), *[(_num(b[sec][0]) + ("" if b[sec][1] == "measured" else f" ({b[sec][1]})"))
                             if sec in b else "" for b in bins]] for sec in seconds]
        headers = ["s", *[f"step {st.step}: {st.throughput:,.0f} {st.unit}/s ({'met' if st.met else 'missed'})"
                          for st, _ in found]]
        tables.append(SectionTable(name=f"Redline {found[0][1].curve_label} per second, {key}", headers=headers,
                                   rows=rows))
    return tables
