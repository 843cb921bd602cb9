"""Reports from Jinja2 templates: ``reports/report.md.j2`` (markdown) and ``reports/report.html.j2`` (one
self-contained HTML file: plotly.js is inlined, so it renders without network). Users pass their own
template with ``--template``; it gets the context described in ``bench.reporting.context``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import jinja2

from bench.compare.core import Comparison, Side
from bench.compare.render import markdown_result
from bench.reporting.context import compare_context, trial_context
from bench.reporting.plots import Plot, PlotTrial, all_plots, export_pngs, figure_div, plotly_js
from bench.trials.model import TrialReader
from bench.util.bundled import bundled_dir
from bench.util.errors import ConfigError
from bench.util.redact import redact_text

if TYPE_CHECKING:
    from bench.reporting.history import HistoryReport
    from bench.reporting.study import StudyTable, TableView

ReportKind = Literal["markdown", "html"]
KINDS: tuple[str, ...] = ("markdown", "html")


def templates_dir() -> Path:
    return bundled_dir("reports")


def default_template(fmt: ReportKind) -> Path:
    return templates_dir() / ("report.html.j2" if fmt == "html" else "report.md.j2")


@dataclass
class Report:
    text: str
    fmt: ReportKind
    plots: list[Plot] = field(default_factory=list)
    png_paths: list[Path] = field(default_factory=list)


def render_template(context: dict[str, Any], fmt: ReportKind, template: Path | str | None = None) -> str:
    path = Path(template).expanduser() if template else default_template(fmt)
    if not path.is_file():
        raise ConfigError(f"report template {path} does not exist: pass --template FILE (a Jinja2 template)")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(path.parent)),
                             autoescape=fmt == "html" or path.name.endswith((".html", ".html.j2")),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["mark"] = markdown_result  # bold improvement / regression in markdown cells
    env.filters["kv"] = lambda d: ", ".join(f"{k}={v}" for k, v in (d or {}).items()) or "-"
    env.filters["verdict_class"] = verdict_class
    try:
        return env.get_template(path.name).render(**context)
    except jinja2.TemplateSyntaxError as e:
        raise ConfigError(f"report template {e.filename or path}:{e.lineno}: {e.message}") from e
    except jinja2.UndefinedError as e:
        raise ConfigError(f"report template {path}: {e.message} (see bench/reporting/context.py for the "
                          "variables a template gets)") from e


_VERDICT_WORDS = (("regression", "regression"), ("improvement", "improvement"), ("within noise", "noise"),
                  ("no change", "noise"))


def verdict_class(text: str) -> str:
    """The CSS class of a cell that states a verdict ('' for any other cell)."""
    for word, cls in _VERDICT_WORDS:
        if re.search(rf"\b{word}\b", str(text)):
            return cls
    return ""


def plot_trials(store: TrialReader, sides: list[Side]) -> list[PlotTrial]:
    out = []
    for i, side in enumerate(sides):
        for rep, t in enumerate(side.trials):
            out.append(PlotTrial(side=side.label, side_index=i, trial_id=t.info.id, samples=store.samples(t.info.id),
                                 telemetry=store.telemetry(t.info.id), summary=t.summary, repetition=rep))
    return out


def _finish(store: TrialReader, context: dict[str, Any], sides: list[Side], fmt: ReportKind,
            template: Path | str | None, plots_dir: Path | str | None, first: list[Plot] | None = None) -> Report:
    if fmt not in KINDS:
        raise ConfigError(f"unknown report format {fmt!r}: use one of {', '.join(KINDS)}")
    plots: list[Plot] = []
    plot_notes: list[str] = []
    if fmt == "html" or plots_dir:
        plots = [*(first or []), *all_plots(plot_trials(store, sides), plot_notes)]
    context = dict(context, plot_notes=plot_notes)
    if fmt == "html":
        context = dict(context, plots=[{"key": p.key, "title": p.title, "div": figure_div(p)} for p in plots],
                       plotly_js=plotly_js())
    else:
        context = dict(context, plots=[{"key": p.key, "title": p.title} for p in plots], plotly_js="")
    pngs = export_pngs(plots, Path(plots_dir)) if plots_dir else []
    context["png_files"] = [p.name for p in pngs]
    text = render_template(context, fmt, template)
    # plotly.js itself is not scrubbed: it is large and holds no user data.
    if fmt == "html":
        js = context["plotly_js"]
        head, sep, tail = text.partition(js)
        text = redact_text(head) + sep + redact_text(tail) if sep else redact_text(text)
    else:
        text = redact_text(text)
    return Report(text=text, fmt=fmt, plots=plots, png_paths=pngs)


def trial_report(store: TrialReader, selector: str, *, fmt: ReportKind = "markdown",
                 template: Path | str | None = None, plots_dir: Path | str | None = None) -> Report:
    from bench.compare.select import load_trial

    info = store.get_trial(selector)
    data = load_trial(store, info)
    side = Side(label=info.id[:8], selector=selector, trials=[data])
    context = dict(trial_context(info, data.summary), study_tables=[])
    return _finish(store, context, [side], fmt, template, plots_dir)


def compare_report(store: TrialReader, cmp: Comparison, *, fmt: ReportKind = "markdown",
                   template: Path | str | None = None, plots_dir: Path | str | None = None,
                   study: StudyTable | None = None, history: HistoryReport | None = None,
                   tables: list[TableView] | None = None, plots: list[Plot] | None = None) -> Report:
    """``study``/``history``: an experiment's study table and its nightly trend, shown before the comparison;
    ``tables``: more of the study's tables (e.g. a follower settings sweep), after them; ``plots``: the study's
    own plots, before the trials' (in HTML reports and --plots-dir)."""
    from bench.reporting.study import study_view

    views = ([study_view(study).model_dump()] if study is not None else []) + \
            ([history.view().model_dump()] if history is not None else []) + \
            [t.model_dump() for t in tables or []]
    context = dict(compare_context(cmp), study_tables=views)
    return _finish(store, context, [cmp.baseline, *cmp.candidates], fmt, template, plots_dir, plots)


