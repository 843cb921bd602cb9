"""Summary sections as a seam: how an extension's section of a ``bench.results.summary.Summary`` becomes report rows.

An extension calls ``register_section`` from its ``setup()``; ``Summary.rows()`` and the reports ask
``section_kinds()`` / ``section_title()`` and so know no extension by name. ``MetricRow`` (one report row) lives
here because both the core summary and the sections produce it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from bench import extensions
from bench.util.numbers import value_text


class MetricRow(BaseModel):
    metric: str
    task: str
    value: float | int
    unit: str
    # Why the value comes from incomplete telemetry (e.g. a follower paused for part of the run): every format
    # shows it as partial, a maximum as a lower bound, and compare does not judge it.
    partial: str | None = None


def row_cells(row: MetricRow, number: Callable[[float | int], str]) -> tuple[str, str]:
    """The value and unit cells of a human-readable report: ``number(value)`` (``yes``/``no`` for a yes/no row), marked
    when partial ("≥" for a maximum, which can only be higher)."""
    text, unit = value_text(row.value, row.unit, number(row.value))
    if row.partial is None:
        return text, unit
    return f"{'≥ ' if row.metric.startswith('Max ') else ''}{text} (partial: {row.partial})", unit


# What an extension's section of a summary turns into: its report rows, from the section as stored (JSON).
SectionRows = Callable[[dict[str, Any]], list[MetricRow]]


class SectionTable(BaseModel):
    """A table of its own that a section adds to reports (e.g. a curve, one row per step), cells as text."""

    name: str
    headers: list[str]
    rows: list[list[str]]


# The tables a section adds to reports besides its rows, from the section as stored.
SectionTables = Callable[[dict[str, Any]], list[SectionTable]]


@dataclass(frozen=True)
class SectionKind:
    """How one extension's summary section is shown (``register_section``)."""

    name: str
    rows: SectionRows
    # Metric names of other sections' rows that this section repeats: removed from them when this section is
    # there, and grouped under this section's title in reports either way.
    hides: Callable[[str], bool] | None
    title: str  # the report heading of its rows
    order: int  # sections appear by (order, name), after cluster totals and tasks
    # Which of its rows belong in the headline (the short summary shown first), by metric name.
    headline: Callable[[str], bool] | None = None
    tables: SectionTables | None = None
    # Which of its headline rows a comparison's sentence always states, "from X to Y", by metric name.
    sentence: Callable[[str], bool] | None = None
    # Figures for HTML reports: (the report's PlotTrials, notes) -> bench.reporting.plots.Plot list.
    plots: Callable[..., list[Any]] | None = None


_SECTIONS: dict[str, SectionKind] = {}


def register_section(name: str, *, rows: SectionRows, hides: Callable[[str], bool] | None = None,
                     title: str | None = None, order: int = 100,
                     headline: Callable[[str], bool] | None = None, tables: SectionTables | None = None,
                     plots: Callable[..., list[Any]] | None = None,
                     sentence: Callable[[str], bool] | None = None) -> None:
    """Register how the summary section ``name`` becomes report rows (``headline``: which of them, by metric
    name, the headline shows; ``tables``: tables of its own for reports; ``plots``: figures of its own for HTML
    reports, given the report's ``PlotTrial`` list and notes; ``sentence``: which rows a comparison's sentence
    states from baseline to candidate); registering a name again replaces it."""
    _SECTIONS[name] = SectionKind(name=name, rows=rows, hides=hides, title=title or name, order=order,
                                  headline=headline, tables=tables, plots=plots, sentence=sentence)


def section_kinds() -> list[SectionKind]:
    """Every registered section kind (extensions loaded first), in report order."""
    extensions.load()
    return sorted(_SECTIONS.values(), key=lambda k: (k.order, k.name))


def section_title(metric: str, section: str) -> str | None:
    """The report heading of a row of ``section`` ("" for cluster and task rows): the section that hides
    rows like it, else its own; None for a core row."""
    kinds = section_kinds()
    owner = next((k for k in kinds if k.hides is not None and k.hides(metric)), None)
    if owner is not None:
        return owner.title
    kind = _SECTIONS.get(section)
    return kind.title if kind is not None else (section or None)


def section_tables(sections: dict[str, dict[str, Any]], label: str = "") -> list[SectionTable]:
    """The tables the registered sections make of a summary's ``sections`` (each name prefixed by ``label``)."""
    out: list[SectionTable] = []
    for kind in section_kinds():
        data = sections.get(kind.name)
        if kind.tables is not None and data:
            out.extend(t.model_copy(update={"name": f"{label}{t.name}"}) for t in kind.tables(data))
    return out
