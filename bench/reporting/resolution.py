"""What a study could resolve: from the spread of its main row within each variant (the repetitions), the smallest
difference against the baseline it could have detected, and how many interleaved repetitions a given effect would
need (``bench.compare.power``). Pure: the row's values in, a line of text out (bench/reporting/study.py picks the
row).
"""

from __future__ import annotations

from pydantic import BaseModel

from bench.compare.power import DEFAULT_POWER, min_detectable_diff, relative, repetitions_needed

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


def resolutions(row: str, reference: list[float], candidates: list[tuple[str, list[float]]], *,
                effect_pct: float = DEFAULT_EFFECT_PCT, confidence: float = 0.95,
                power: float = DEFAULT_POWER) -> list[Resolution]:
    """Each candidate's (name, values) resolution against the reference's values on the row ``row``."""
    if not reference:
        return []
    mean = sum(reference) / len(reference)
    out = []
    for variant, values in candidates:
        if not values:
            continue
        mdd = min_detectable_diff(reference, values, confidence=confidence, power=power)
        needed = repetitions_needed(reference, values, effect_pct / 100.0 * abs(mean), confidence=confidence,
                                    power=power) if mean else None
        out.append(Resolution(row=row, variant=variant, n_baseline=len(reference), n_candidate=len(values),
                              mdd_pct=relative(mdd, mean), effect_pct=effect_pct, needed=needed))
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
