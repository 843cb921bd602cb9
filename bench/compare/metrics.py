"""Which way is better for each report row, and the rows of one trial as comparable values.

Rows come from ``Summary.rows()`` (cluster totals, tasks and every extension's section), so compare shows
exactly the metrics ``bench show`` shows. The better direction of a row is decided by the first registered
pattern its metric name matches: bench's own rows below, then what extensions register (``register_metric``
from their ``setup()``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from bench import extensions
from bench.results.summary import Summary


@dataclass(frozen=True)
class MetricKind:
    pattern: re.Pattern[str]
    higher_is_better: bool | None  # None: no better direction (counts that merely describe the run)
    unit: str | None  # shown instead of the row's own unit; None: the row's


_METRICS: list[MetricKind] = []


def register_metric(pattern: str | re.Pattern[str], *, higher_is_better: bool | None,
                    unit: str | None = None) -> None:
    """Rows whose metric name matches ``pattern`` (a regular expression searched case-insensitively; a plain
    name is one too, so escape it with ``re.escape`` if it has special characters) are better higher (True),
    lower (False) or neither (None). Earlier registrations win; registering a pattern again changes nothing."""
    compiled = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern, re.IGNORECASE)
    if any(m.pattern.pattern == compiled.pattern for m in _METRICS):
        return
    _METRICS.append(MetricKind(pattern=compiled, higher_is_better=higher_is_better, unit=unit))


# bench's own rows: how the load driver drove (never judged), cluster totals and tasks.
register_metric(r"^driver ", higher_is_better=None)
register_metric(r"throughput", higher_is_better=True)
register_metric(r"latency|service time", higher_is_better=False)
register_metric(r"error rate|failed", higher_is_better=False)
register_metric(r"gc (count|time)", higher_is_better=False)
register_metric(r"\bcumulative .* time", higher_is_better=False)  # also the min/median/max across primary shards
register_metric(r"store size|segment count", higher_is_better=False)


def _kind(metric: str) -> MetricKind | None:
    extensions.load()
    return next((m for m in _METRICS if m.pattern.search(metric)), None)


def higher_is_better(metric: str) -> bool | None:
    """True/False for rows with a better direction; None for descriptive rows (doc counts, merge counts)."""
    kind = _kind(metric)
    return kind.higher_is_better if kind is not None else None


def metric_unit(metric: str, unit: str) -> str:
    """The unit compare shows for a row: a registered one, else the row's own."""
    kind = _kind(metric)
    return kind.unit if kind is not None and kind.unit is not None else unit


RowKey = tuple[str, str]  # (metric, task)


def trial_values(summary: Summary | None, scope: Callable[[str], str] | None = None
                 ) -> dict[RowKey, tuple[float, str]]:
    """(metric, task) -> (value, unit) of one trial, in report order (dicts keep insertion order). ``scope``
    renames the Task column of section rows (cluster/node scopes; ``bench.compare.roles``), never a task's."""
    out: dict[RowKey, tuple[float, str]] = {}
    if summary is None:
        return out
    for section, r in summary.labelled_rows():
        task = scope(r.task) if scope is not None and section else r.task
        out.setdefault((r.metric, task), (float(r.value), metric_unit(r.metric, r.unit)))
    return out
