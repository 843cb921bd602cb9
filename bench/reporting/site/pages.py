"""The site's pages as HTML strings (pure): the index, a page per experiment (filters and charts) and a page per
night (its study table, its races with their errors, its annotations). Templates: ``reports/site/*.j2``."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC
from typing import Any

import jinja2

from bench.reporting.changepoints import MIN_NIGHTS
from bench.reporting.site.nights import Night
from bench.reporting.site.series import Chart, night_page, slug
from bench.reporting.site.svg import render_chart
from bench.reporting.study import study_view
from bench.trials.annotations import Annotation
from bench.util.bundled import bundled_dir
from bench.util.redact import redact_text

FILTERS = (("track", "Track", "track"), ("challenge", "Challenge", "challenge"), ("variant", "Variant", "variant"),
           ("engine", "Engine version", "engine version"), ("car", "Car", "car"))
CP_RULE = (f"binary segmentation on the nightly values, segments of ≥ {MIN_NIGHTS} nights, a shift of more than 3 "
           "standard errors and 2 %")


def site_dir() -> Any:
    return bundled_dir("reports") / "site"


def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(site_dir())), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def _render(template: str, **context: Any) -> str:
    return redact_text(_env().get_template(template).render(**context))


def experiment_page(name: str) -> str:
    return f"{slug(name)}.html"


def _num(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.2f}"


def _chart_context(c: Chart) -> dict[str, Any]:
    last = next((p for p in reversed(c.points) if p.value is not None), None)
    caption = f"{len(c.points)} night(s)"
    if last is not None:
        caption += f"; last {_num(last.value)} ({last.trend})"
    marks = [{"text": f"{k}. {m.text}", "cls": ""} for k, m in enumerate(c.annotations, 1)]
    marks += [{"text": f"{c.points[m.index].date:%Y-%m-%d} (run {c.points[m.index].run_id}): {m.text}", "cls": m.kind}
              for m in c.steps]
    data = {key: "|".join(c.facets.get(facet, [])) for key, _label, facet in FILTERS}
    direction = "" if c.higher_is_better is None else "higher is better" if c.higher_is_better else "lower is better"
    return {"id": c.id, "title": c.title, "unit": c.unit, "direction": direction, "caption": caption,
            "svg": render_chart(c), "marks": marks, "data": data}


def render_experiment(name: str, nights: list[Night], charts: list[Chart], *, window: int) -> str:
    filters = []
    for key, label, facet in FILTERS:
        values = sorted({v for c in charts for v in c.facets.get(facet, [])})
        filters.append({"key": key, "label": label, "values": values})
    groups: dict[str, list[dict[str, Any]]] = {}
    for c in charts:
        groups.setdefault(c.track_label or "the track", []).append(_chart_context(c))
    failed = [{"page": night_page(n), "date": f"{n.date:%Y-%m-%d %H:%M}", "run_id": n.run_id,
               "text": "; ".join([f"{v}: {' / '.join(lines)}" for v, lines in n.errors.items()]
                                 + [f"damaged: {len(n.damaged)} trial(s) cannot be read"] * bool(n.damaged))}
              for n in nights if n.errors or n.damaged]
    dates = [n.date for n in nights]
    return _render("experiment.html.j2", name=name, nights=len({n.run_id for n in nights}), window=window,
                   first=f"{min(dates):%Y-%m-%d}" if dates else "–", last=f"{max(dates):%Y-%m-%d}" if dates else "–",
                   cp_rule=CP_RULE, filters=filters, failed=failed,
                   groups=[{"title": t, "charts": cs} for t, cs in groups.items()])


def _night_annotations(night: Night, annotations: Iterable[Annotation]) -> list[str]:
    day = night.date.astimezone(UTC).date()
    tracks = {t.track for t in night.trials}
    return [f"{a.message}" + (f" (track {a.track})" if a.track else "") + (f" (chart {a.chart_name or a.chart})"
                                                                         if a.chart_name or a.chart else "")
            for a in annotations if a.day == day and (not a.track or a.track in tracks)]


def render_night(night: Night, annotations: list[Annotation]) -> str:
    study = study_view(night.table).model_dump() if night.table is not None else None
    trials = [dict(t.model_dump(), start=f"{t.start:%Y-%m-%d %H:%M:%S}") for t in night.trials]
    command = (f"bench report --compare tag:experiment={night.experiment},experiment-run={night.run_id},variant=… "
               "(baseline, then each variant)")
    return _render("night.html.j2", experiment=night.experiment, experiment_page=experiment_page(night.experiment),
                   run_id=night.run_id, date=f"{night.date:%Y-%m-%d %H:%M} UTC", track_label=night.track_label,
                   annotations=_night_annotations(night, annotations), errors=night.errors, study=study,
                   damaged=night.damaged,
                   trials=trials, report_command=command)


def render_index(summaries: list[dict[str, Any]], *, last_night: str, damaged: list[str] | None = None) -> str:
    return _render("index.html.j2", experiments=summaries, last_night=last_night, damaged=damaged or [])


def experiment_summary(name: str, nights: list[Night], charts: list[Chart]) -> dict[str, Any]:
    latest = []
    for c in charts:
        last = next((p for p in reversed(c.points) if p.value is not None), None)
        step = c.steps[-1] if c.steps else None
        latest.append({"id": c.id, "title": f"{c.track_label + ': ' if c.track_label else ''}{c.title}",
                       "value": f"{_num(last.value)} {c.unit}" if last else "–",
                       "trend": last.trend if last else "–",
                       "trend_class": last.trend if last and last.trend in ("regression", "improvement") else "",
                       "step": f"{c.points[step.index].date:%Y-%m-%d}: {step.text}" if step else "none",
                       "step_class": step.kind if step else ""})
    return {"name": name, "page": experiment_page(name), "nights": len({n.run_id for n in nights}),
            "charts": len(charts), "failed": sum(1 for n in nights if n.errors or n.damaged),
            "damaged": sum(1 for n in nights if n.damaged), "latest": latest}
