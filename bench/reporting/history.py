"""Nightly drift: tonight's run of an experiment against its previous N runs, per variant and key study row.

Each run of an experiment is kept in the store as its own dated run (the ``experiment-run`` tag, the run's date
= its first trial's start). For every variant and key row of the study table (bench/reporting/study.py) a
night's value is the mean of that night's repetitions, and tonight is judged against a noise band:

    centre     = mean of the previous nights' values
    half-width = max(prediction half-width, tonight's CI half-width)
      prediction half-width = t(0.975, k-1) * s_prev * sqrt(1 + 1/k)   (k ≥ 2 previous nights, s_prev their
                              standard deviation): where one more night falls 95 % of the time if nothing changed
      tonight's CI half-width = t(0.975, n-1) * s_tonight / sqrt(n)    (n ≥ 2 repetitions tonight)

Tonight outside the band on the worse side of the row's direction is a regression (better side: an
improvement); inside it is within noise. With neither spread known (one previous night and one repetition)
a change is "not judged": a single pair of numbers cannot tell drift from noise.
"""

from __future__ import annotations

import math
import statistics
from datetime import datetime
from typing import Literal

from pydantic import BaseModel

from bench.compare.stats import CiMethod
from bench.race.experiment import ExperimentFile, runs_of
from bench.reporting.changepoints import ChangePoint, change_points
from bench.reporting.study import StudyTable, TableView, load_study_table
from bench.trials.model import TrialReader
from bench.util.errors import ConfigError, StoreError

Trend = Literal["regression", "improvement", "within noise", "not judged", "no history", "n/a"]
CONFIDENCE = 0.95


class Night(BaseModel):
    run_id: str
    date: datetime
    value: float | None = None  # mean of the night's repetitions
    n: int = 0


class HistoryRow(BaseModel):
    variant: str
    label: str
    unit: str
    higher_is_better: bool | None
    nights: list[Night]  # oldest first; tonight last
    band: tuple[float, float] | None = None
    band_from: str = ""  # which spread set the band's width
    delta_pct: float | None = None  # tonight against the band's centre
    trend: Trend = "no history"


class HistoryReport(BaseModel):
    experiment: str
    tonight: str
    previous: list[str]  # run ids, oldest first
    rows: list[HistoryRow]
    notes: list[str] = []
    judged_regressed: bool = False  # what --fail-on-regression's rule made of it (bench experiment sets it)

    @property
    def regressions(self) -> list[HistoryRow]:
        return [r for r in self.rows if r.trend == "regression"]

    def view(self) -> TableView:
        dates = [n.date.strftime("%Y-%m-%d %H:%M") for n in self.rows[0].nights] if self.rows else []
        headers = ["Variant", "Metric", "Unit", *dates[:-1], f"tonight {dates[-1]}" if dates else "tonight",
                   "noise band", "Δ % vs previous", "trend"]
        rows = []
        for r in self.rows:
            band = f"{_num(r.band[0])} … {_num(r.band[1])} ({r.band_from})" if r.band else "–"
            delta = f"{r.delta_pct:+.1f} %" if r.delta_pct is not None else "–"
            rows.append([r.variant, r.label, r.unit, *[_num(n.value) for n in r.nights], band, delta, r.trend])
        return TableView(title=f"History: {self.experiment}, tonight {self.tonight} against "
                               f"{len(self.previous)} previous run(s)", headers=headers, rows=rows,
                         notes=self.notes)


def _num(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.2f}"


def t_quantile(df: int) -> float:
    from scipy.stats import t as student_t

    return float(student_t.ppf(0.5 + CONFIDENCE / 2.0, df))


MIN_RELATIVE_NOISE = 0.02  # no band is narrower than ±2 % of the previous nights' mean


def noise_band(previous: list[float], tonight: list[float]) -> tuple[float, float, str] | None:
    """(low, high, what set the width) around the previous nights' mean; None when no spread is known."""
    if not previous:
        return None
    centre = statistics.fmean(previous)
    widths: list[tuple[float, str]] = []
    if len(previous) >= 2:
        k = len(previous)
        widths.append((t_quantile(k - 1) * statistics.stdev(previous) * math.sqrt(1 + 1 / k), "previous nights"))
    if len(tonight) >= 2:
        n = len(tonight)
        widths.append((t_quantile(n - 1) * statistics.stdev(tonight) / math.sqrt(n), "tonight's repetitions"))
    if not widths:
        return None
    half, source = max(widths)
    floor = MIN_RELATIVE_NOISE * abs(centre)
    if half < floor:
        # Identical repetitions (a paced schedule) give a zero-width band that would flag any change at all.
        half, source = floor, f"the {MIN_RELATIVE_NOISE:.0%} floor"
    return centre - half, centre + half, source


def judge_night(value: float, band: tuple[float, float] | None, higher_is_better: bool | None) -> Trend:
    if band is None:
        return "not judged"
    low, high = band
    if low <= value <= high:
        return "within noise"
    if higher_is_better is None:
        return "n/a"
    return "improvement" if (value > high) == higher_is_better else "regression"


def history_rows(tables: list[tuple[str, datetime, StudyTable]]) -> list[HistoryRow]:
    """Rows of the key study rows per variant over nights (oldest first, tonight last). Pure."""
    *before, (tonight_id, _d, tonight) = tables
    rows = []
    for v_i, variant in enumerate(tonight.variants):
        for srow in tonight.rows:
            if not srow.key:
                continue
            nights, prev_values = [], []
            for run_id, date, table in tables:
                cell = None
                if variant in table.variants:
                    match = next((r for r in table.rows if r.label == srow.label), None)
                    cell = match.cells[table.variants.index(variant)] if match else None
                nights.append(Night(run_id=run_id, date=date, value=cell.value if cell else None,
                                    n=len(cell.values) if cell else 0))
                if run_id != tonight_id and cell is not None and cell.value is not None:
                    prev_values.append(cell.value)
            tonight_cell = srow.cells[v_i]
            row = HistoryRow(variant=variant, label=srow.label, unit=srow.unit,
                             higher_is_better=srow.higher_is_better, nights=nights)
            if tonight_cell.value is None:
                row.trend = "n/a"
            elif prev_values:
                centre = statistics.fmean(prev_values)
                row.delta_pct = 100.0 * (tonight_cell.value - centre) / abs(centre) if centre else None
                band = noise_band(prev_values, tonight_cell.values)
                if band is not None:
                    row.band, row.band_from = (band[0], band[1]), band[2]
                row.trend = judge_night(tonight_cell.value, row.band, srow.higher_is_better)
            rows.append(row)
    return rows


def history_report(store: TrialReader, exp: ExperimentFile, tonight: str, previous: int, *,
                   ci_method: CiMethod = "auto") -> HistoryReport:
    """Tonight's run of ``exp`` against the ``previous`` runs before it (by date)."""
    if exp.study is None:
        raise ConfigError(f"--history needs a 'study:' block in experiment {exp.name} (the key rows it follows)")
    runs = runs_of(store, exp.name)  # newest first
    if tonight not in runs:
        raise ConfigError(f"experiment {exp.name} has no run {tonight}")
    dated = sorted(((rid, min(t.start_time for t in trials)) for rid, trials in runs.items()), key=lambda x: x[1])
    tonight_date = dict(dated)[tonight]
    earlier = [(rid, d) for rid, d in dated if d < tonight_date][-previous:]
    notes = []
    tables: list[tuple[str, datetime, StudyTable]] = []
    for rid, d in [*earlier, (tonight, tonight_date)]:
        try:
            tables.append((rid, d, load_study_table(store, exp, rid, ci_method=ci_method)))
        except (ConfigError, StoreError) as e:  # e.g. a night whose races of one variant all failed
            if rid == tonight:
                raise
            notes.append(f"Run {rid} is left out: {e}")
    used_prev = [rid for rid, _d, _t in tables[:-1]]
    if not used_prev:
        notes.append("No previous run to compare with: tonight is the first.")
    notes.append("Noise band: the previous runs' mean ± the larger of their 95 % prediction half-width "
                 "(t · s · √(1 + 1/k) over k ≥ 2 runs) and tonight's 95 % confidence half-width of its repetitions "
                 "(t · s / √n, n ≥ 2); outside it on the worse side is a regression.")
    return HistoryReport(experiment=exp.name, tonight=tonight, previous=used_prev, rows=history_rows(tables),
                         notes=notes)


def confirmed_steps(report: HistoryReport) -> list[tuple[HistoryRow, ChangePoint]]:
    """Steps (bench/reporting/changepoints.py) over the runs of the report that tonight's value confirms: found
    with tonight, not without it. ``index`` is the row's night where the step starts."""
    out = []
    for row in report.rows:
        measured = [i for i, n in enumerate(row.nights) if n.value is not None]
        if not measured or measured[-1] != len(row.nights) - 1:
            continue  # no value tonight: nothing new to confirm
        values = [row.nights[i].value for i in measured]
        before = {cp.index for cp in change_points(values[:-1], row.higher_is_better)}  # type: ignore[arg-type]
        for cp in change_points(values, row.higher_is_better):  # type: ignore[arg-type]
            if cp.index not in before:
                out.append((row, cp.model_copy(update={"index": measured[cp.index]})))
    return out
