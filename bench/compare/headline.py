"""The headline of a comparison: the rows of the race headline (``bench.results.headline``) with each candidate's Δ %,
confidence interval and verdict, and one plain sentence per candidate. Pure: a Comparison in, rows and text out.
"""

from __future__ import annotations

from pydantic import BaseModel

from bench.compare.core import CandidateCell, CompareRow, Comparison
from bench.results.headline import TASK_METRICS, headline_tasks
from bench.results.sections import section_kinds
from bench.util.numbers import compact, rescale

# Short names for the headline's task rows.
SHORT = {"Min Throughput": "min throughput", "Median Throughput": "median throughput",
         "Max Throughput": "max throughput", "50th percentile latency": "p50 latency",
         "99th percentile latency": "p99 latency", "50th percentile service time": "p50 service time",
         "99th percentile service time": "p99 service time", "error rate": "error rate"}
SIGNIFICANT = {"improvement", "regression"}
# Besides median throughput (always) and CCR catch-up: the rows a sentence mentions when their change is
# significant (the tails of throughput and the p50s stay in the table).
SENTENCE_TASK_METRICS = {"99th percentile latency", "99th percentile service time", "error rate"}


class CompareHeadline(BaseModel):
    rows: list[CompareRow] = []
    sentences: list[str] = []


def _headline_task_names(cmp: Comparison) -> set[str]:
    names: set[str] = set()
    for side in (cmp.baseline, *cmp.candidates):
        for t in side.trials:
            if t.summary is not None:
                names.update(ts.task for ts in headline_tasks(t.summary))
    return names


def _section_metric(metric: str) -> bool:
    return any(k.headline is not None and k.headline(metric) for k in section_kinds())


def _sentence_metric(metric: str) -> bool:
    return any(k.sentence is not None and k.sentence(metric) for k in section_kinds())


def headline_rows(cmp: Comparison) -> list[CompareRow]:
    tasks = _headline_task_names(cmp)
    task_rows = [r for r in cmp.rows if r.metric in TASK_METRICS and r.task in tasks]
    # Task rows grouped per task in the headline's order of metrics, then the rows extensions mark.
    order = {m: i for i, m in enumerate(TASK_METRICS)}
    task_order = {t: i for i, t in enumerate(dict.fromkeys(r.task for r in task_rows))}
    task_rows.sort(key=lambda r: (task_order[r.task], order[r.metric]))
    # As in the race headline, an extension's row that is zero (or absent) on every side says nothing at a glance.
    return task_rows + [r for r in cmp.rows if r.metric not in TASK_METRICS and _section_metric(r.metric)
                        and any(v for v in (r.baseline, *(c.value for c in r.candidates)))]


def short_metric(metric: str) -> str:
    return SHORT.get(metric, metric)


def _pct(v: float) -> str:
    return f"{'+' if v > 0 else '−' if v < 0 else '±'}{abs(v):,.1f} %"


def _change(row: CompareRow, cell: CandidateCell, confidence: float) -> str:
    if cell.diff_pct is None:
        return "no baseline value" if row.baseline is None else "missing"
    text = _pct(cell.diff_pct)
    if cell.ci_pct is not None:
        lo, hi = cell.ci_pct
        ci = f"{confidence * 100:.0f} % CI {_pct(lo)[:-2]} … {_pct(hi)}"
        return f"{text} ({ci}, {_verdict_word(cell)})"
    return f"{text} ({_verdict_word(cell)})"


def _verdict_word(cell: CandidateCell) -> str:
    return {"improvement": "significant, better", "regression": "significant, worse",
            "within noise": "within noise", "no change": "no change"}.get(cell.verdict, "not judged")


def sentences(cmp: Comparison, rows: list[CompareRow]) -> list[str]:
    """One sentence per candidate: every headline task's median throughput; the rows sections want stated from
    baseline to candidate; the other headline rows whose change is significant; CCR catch-up as measured."""
    out = []
    for k, side in enumerate(cmp.candidates):
        parts = []
        for r in rows:
            cell = r.candidates[k]
            if r.metric == "Median Throughput":
                parts.append(f"median throughput of {r.task} {_change(r, cell, cmp.confidence)}")
            elif _sentence_metric(r.metric) and cell.value is not None and r.baseline is not None:
                parts.append(f"{r.metric} of {r.task} from {compact(r.baseline)} to {compact(cell.value)} "
                             f"{r.unit} {_change(r, cell, cmp.confidence)}")
            elif "catch-up time" in r.metric and cell.value is not None:
                value, unit = rescale(cell.value, r.unit)
                parts.append(f"{r.metric} {compact(value)} {unit} ({r.task})".replace("  ", " "))
            elif (cell.verdict in SIGNIFICANT and cell.diff_pct is not None
                  and (r.metric in SENTENCE_TASK_METRICS or r.metric not in TASK_METRICS)):
                parts.append(f"{short_metric(r.metric)} of {r.scope} {_pct(cell.diff_pct)} "
                             f"({'better' if cell.verdict == 'improvement' else 'worse'})")
        if parts:
            out.append(f"{side.label} vs {cmp.baseline.label}: " + "; ".join(parts) + ".")
        else:
            out.append(f"{side.label} vs {cmp.baseline.label}: no headline row to compare.")
    return out


def compare_headline(cmp: Comparison) -> CompareHeadline:
    rows = headline_rows(cmp)
    return CompareHeadline(rows=rows, sentences=sentences(cmp, rows))
