"""What a study could resolve: from the spread of its main row within each variant (the repetitions), the smallest
difference against the baseline it could have detected, and how many interleaved repetitions a given effect would
need (``bench.compare.power``). Pure: a StudyTable in, a line of text out.
"""

from __future__ import annotations

from pydantic import BaseModel

from bench.compare.power import DEFAULT_POWER, min_detectable_diff, relative, repetitions_needed
from bench.reporting.study import StudyRow, StudyTable

MAIN_ROW = "Median Throughput (indexing)"
DEFAULT_EFFECT_PCT = 3.0


class Resolution(BaseModel):
    """One candidate's resolution on the study's main row."""

    row: str
    variant: str
    n_baseline: int
    n_candidate: int
    mdd_pct: float | None  # smallest detectable difference, % of the reference's mean; None: spread unknown
    effect_pct: float
    needed: int | None  # repetitions per variant for effect_pct; None: unknown, or more than MAX_REPETITIONS


def main_row(table: StudyTable, label: str | None = None) -> StudyRow | None:
    """The row the study is about: ``label``, else the median indexing throughput, else the first key row."""
    want = label or MAIN_ROW
    row = next((r for r in table.rows if r.label == want), None)
    if row is None and label is None:
        row = next((r for r in table.rows if r.key), None)
    return row


def study_resolution(table: StudyTable, *, effect_pct: float = DEFAULT_EFFECT_PCT, confidence: float = 0.95,
                     power: float = DEFAULT_POWER, row_label: str | None = None) -> list[Resolution]:
    row = main_row(table, row_label)
    if row is None:
        return []
    ref_i = table.variants.index(row.reference) if row.reference in table.variants else 0
    ref = row.cells[ref_i].values
    mean = sum(ref) / len(ref) if ref else 0.0
    out = []
    for i, cell in enumerate(row.cells):
        if i == ref_i or not cell.values or not ref:
            continue
        mdd = min_detectable_diff(ref, cell.values, confidence=confidence, power=power)
        needed = repetitions_needed(ref, cell.values, effect_pct / 100.0 * abs(mean), confidence=confidence,
                                    power=power) if mean else None
        out.append(Resolution(row=row.label, variant=table.variants[i], n_baseline=len(ref),
                              n_candidate=len(cell.values), mdd_pct=relative(mdd, mean), effect_pct=effect_pct,
                              needed=needed))
    return out


def _n(res: list[Resolution]) -> str:
    counts = sorted({r.n_baseline for r in res} | {r.n_candidate for r in res})
    if len(counts) == 1:
        return f"{counts[0]} repetition{'s' if counts[0] != 1 else ''} per variant"
    return f"{counts[0]}–{counts[-1]} repetitions per variant"


def _needed(r: Resolution) -> str:
    return f"more than {100_000:,}" if r.needed is None else f"about {r.needed:,}"


def resolution_line(res: list[Resolution], *, confidence: float = 0.95, power: float = DEFAULT_POWER) -> str | None:
    """"Resolution: with 2 repetitions per variant the study could detect differences of ±34 % in ... (95 %
    confidence, 80 % power); 3 % would need about 250 repetitions per variant." None without a candidate."""
    if not res:
        return None
    head = f"Resolution ({res[0].row}; {confidence:.0%} confidence, {power:.0%} power)".replace("%", " %")
    if any(r.mdd_pct is None for r in res):
        return (f"{head}: not known: with {_n(res)} the spread within a variant is unknown; run at least 2 "
                "repetitions.")
    one = len(res) == 1
    mdd = (f"±{res[0].mdd_pct:.1f} %" if one else
           ", ".join(f"±{r.mdd_pct:.1f} % ({r.variant})" for r in res))
    eff = f"{res[0].effect_pct:g} %"
    needed = (f"{_needed(res[0])} repetitions per variant" if one else
              "; ".join(f"{r.variant}: {_needed(r)}" for r in res) + " repetitions per variant")
    return f"{head}: with {_n(res)} the study could detect differences of {mdd}; {eff} would need {needed}."
