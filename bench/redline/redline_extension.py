"""What the redline extension registers with bench's seams (published as a ``bench.extensions`` entry point)."""

from __future__ import annotations

from typing import Any

from bench.api import register_metric, register_race_hook, register_section
from bench.redline.race_hook import RedlineHook
from bench.redline.section import FAILING, SECTION, SUSTAINED, is_headline_metric, redline_rows, redline_tables


def setup() -> None:
    register_race_hook(RedlineHook)
    register_section(SECTION, rows=redline_rows, title="Redline", order=30, headline=is_headline_metric,
                     tables=redline_tables, plots=_plots, sentence=is_headline_metric)
    register_metric(rf"^{SUSTAINED}|^Redline sustained target", higher_is_better=True)
    register_metric(r"^Redline lowest failing target", higher_is_better=True)
    register_metric(rf"^{FAILING}", higher_is_better=True)


def _plots(trials: list[Any], notes: list[str] | None = None) -> list[Any]:
    # plotly is imported only when a report draws: every process that loads extensions runs this module.
    from bench.redline.plots import redline_plots

    return redline_plots(trials, notes)
