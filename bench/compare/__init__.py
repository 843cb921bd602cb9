"""``bench compare``: baseline against candidates, telling signal from noise.

- ``stats``: confidence intervals of a difference of means and the verdict of a row (pure).
- ``metrics``: each row's better direction and one trial's values.
- ``core``: ``compare(baseline, candidates) -> Comparison`` (pure).
- ``roles``: a one-cluster trial's ``default`` rows compared as a CCR trial's ``leader`` rows (pure, explicit).
- ``select``: selectors (ids, id lists, ``tag:k=v``) -> sides, from the trial store.
- ``render``: terminal, markdown, csv, json.
"""

from bench.compare.core import CandidateCell, CompareRow, Comparison, Side, TrialData, compare
from bench.compare.render import FORMATS, comparison_renderable, render_comparison
from bench.compare.select import resolve_sides
from bench.compare.stats import DiffCI, bootstrap_diff_ci, diff_ci, judge, welch_diff_ci

__all__ = [
           "FORMATS",
           "CandidateCell",
           "CompareRow",
           "Comparison",
           "DiffCI",
           "Side",
           "TrialData",
           "bootstrap_diff_ci",
           "compare",
           "comparison_renderable",
           "diff_ci",
           "judge",
           "render_comparison",
           "resolve_sides",
           "welch_diff_ci",
]
