"""From nights to charts (pure): one chart per experiment, track entry, study row and variant, with each night's
value (the mean of its repetitions), its 95 % confidence interval, the noise band of the previous ``window`` nights
and the night's judgement against it (exactly ``bench experiment --history``'s: bench/reporting/history.py), the
change points (bench/reporting/changepoints.py), the annotations that apply, and why a night has no value."""

from __future__ import annotations

import math
import re
import statistics
from datetime import UTC, datetime

from pydantic import BaseModel

from bench.reporting.changepoints import ChangePoint, change_points
from bench.reporting.history import judge_night, noise_band, t_quantile
from bench.reporting.site.nights import Night
from bench.trials.annotations import Annotation

# Which bench charts a Rally --chart-type names (the others name charts bench does not draw).
CHART_TYPE_ROWS: dict[str, tuple[str, ...]] = {
    "indexing": ("Throughput", "catch-up"),
    "io": ("Disk", "Network"),
    "stats": ("CPU",),
}


class Point(BaseModel):
    run_id: str
    date: datetime
    value: float | None = None
    n: int = 0
    ci: tuple[float, float] | None = None  # 95 % CI of the night's mean (n ≥ 2)
    band: tuple[float, float] | None = None
    band_from: str = ""
    trend: str = "no history"
    error: str | None = None  # why there is no value
    report: str = ""  # the night's page, relative to the site's root


class Marker(BaseModel):
    index: int  # the point it stands before (change point) or at (annotation)
    text: str
    kind: str  # change point: regression / improvement / change; annotation: "annotation"
    id: str = ""


class Chart(BaseModel):
    id: str
    experiment: str
    track_label: str
    variant: str
    label: str
    unit: str
    higher_is_better: bool | None
    facets: dict[str, list[str]]  # filter name -> the values this chart's nights had
    points: list[Point]
    steps: list[Marker] = []
    annotations: list[Marker] = []

    @property
    def title(self) -> str:
        return f"{self.label} — {self.variant}"


def slug(*parts: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")


def night_page(night: Night) -> str:
    return f"nights/{slug(night.experiment)}/{slug(night.run_id)}-{night.track_index}.html"


def _ci(values: list[float]) -> tuple[float, float] | None:
    if len(values) < 2:
        return None
    mean, half = statistics.fmean(values), t_quantile(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return mean - half, mean + half


def _applies(a: Annotation, chart: Chart, tracks: set[str]) -> bool:
    if a.track and a.track not in tracks:
        return False
    if a.chart and not any(word in chart.label for word in CHART_TYPE_ROWS.get(a.chart, ())):
        return False
    return not a.chart_name or a.chart_name in (chart.label, chart.title)


def _annotation_markers(chart: Chart, annotations: list[Annotation], tracks: set[str]) -> list[Marker]:
    out = []
    for a in annotations:
        if not _applies(a, chart, tracks):
            continue
        midnight = datetime.combine(a.day, datetime.min.time(), tzinfo=UTC)
        # On the first night from that midnight on: the night the change first shows in.
        index = next((i for i, p in enumerate(chart.points) if p.date.astimezone(UTC) >= midnight), None)
        if index is not None:
            out.append(Marker(index=index, text=f"{a.day:%Y-%m-%d}: {a.message}", kind="annotation", id=a.id))
    return out


def _step_marker(cp: ChangePoint, unit: str) -> Marker:
    pct = f"{cp.shift_pct:+.1f} %" if cp.shift_pct is not None else f"{cp.after - cp.before:+,.2f} {unit}"
    return Marker(index=cp.index, kind=cp.direction,
                  text=f"step {pct} ({cp.direction}): median {cp.before:,.2f} → {cp.after:,.2f} {unit}")


def charts(nights: list[Night], annotations: list[Annotation], *, window: int) -> list[Chart]:
    """The charts of one experiment's nights (oldest first)."""
    keys: list[tuple[int, str, str]] = []  # (track index, row label, variant) in order of appearance
    meta: dict[tuple[int, str, str], tuple[str, bool | None]] = {}
    for night in nights:
        if night.table is None:
            continue
        for row in night.table.rows:
            for v in night.table.variants:
                key = (night.track_index, row.label, v)
                if key not in meta:
                    keys.append(key)
                meta[key] = (row.unit, row.higher_is_better)
    out: list[Chart] = []
    for ti, label, variant in keys:
        unit, higher = meta[(ti, label, variant)]
        mine = [n for n in nights if n.track_index == ti]
        points: list[Point] = []
        facets: dict[str, set[str]] = {"track": set(), "challenge": set(), "variant": {variant}, "engine version": set(),
                                       "car": set()}
        for night in mine:
            p = Point(run_id=night.run_id, date=night.date, report=night_page(night))
            for t in night.trials:
                if t.variant == variant and t.status == "complete":
                    facets["track"].add(t.track)
                    facets["challenge"].add(t.challenge)
                    facets["engine version"].add(f"{t.engine} {t.version}".strip())
                    facets["car"].add(t.car)
            table = night.table
            match = next((r for r in table.rows if r.label == label), None) if table else None
            if table is not None and variant in table.variants and match is not None:
                cell = match.cells[table.variants.index(variant)]
                p.value, p.n, p.ci = cell.value, len(cell.values), _ci(cell.values)
                values = cell.values
            else:
                values = []
                p.error = "; ".join(night.errors.get(variant, [])) or "this row was not measured this night"
            previous = [q.value for q in points if q.value is not None][-window:]
            if p.value is not None and previous:
                band = noise_band(previous, values)
                if band is not None:
                    p.band, p.band_from = (band[0], band[1]), band[2]
                p.trend = judge_night(p.value, p.band, higher)
            elif p.value is None:
                p.trend = "failed" if variant in night.errors else "n/a"
            points.append(p)
        chart = Chart(id=slug(mine[0].experiment, str(ti), variant, label), experiment=mine[0].experiment,
                      track_label=mine[0].track_label, variant=variant, label=label, unit=unit,
                      higher_is_better=higher, facets={k: sorted(v) for k, v in facets.items()}, points=points)
        measured = [i for i, p in enumerate(points) if p.value is not None]
        series = [points[i].value for i in measured]
        chart.steps = [_step_marker(cp.model_copy(update={"index": measured[cp.index]}), unit)
                       for cp in change_points([v for v in series if v is not None], higher)]
        chart.annotations = _annotation_markers(chart, annotations, set(facets["track"]))
        out.append(chart)
    return out
