"""The profile section in reports: rows (samples, share of the samples per thread pool), and flame graphs as HTML
figures -- each trial's own, and where a report compares sides, the differential of each candidate against the
baseline with the frames whose share grew most.

Graphs are matched across trials by cluster (a one-cluster trial's ``default`` stands for a CCR trial's ``leader``
and, as the node that did the indexing in the baseline, for its ``follower`` too), by the node's place in its cluster
and by window (task or ``all``). A side of several trials is the sum of their samples.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from bench.api import MetricRow
from bench.telemetry.flamegraph import (
    Stacks,
    merge,
    parse_collapsed,
    render_fragment,
    style,
    top_changes,
    tree,
)
from bench.telemetry.profile import ALL, SECTION, ProfileSection
from bench.util.home import trials_dir

SHOWN_POOL_SHARE = 0.01  # pools with at least 1 % of a node's samples get a row
TOP_FRAMES = 15


def profile_rows(data: dict[str, Any]) -> list[MetricRow]:
    if not data:
        return []
    s = ProfileSection.model_validate(data)
    rows: list[MetricRow] = []
    for g in s.graphs:
        scope = f"{g.cluster}/{g.node}"
        if g.task != ALL:
            rows.append(MetricRow(metric="Profile samples", task=f"{scope} {g.task}", value=g.samples, unit=""))
            continue
        rows.append(MetricRow(metric="Profile samples", task=scope, value=g.samples, unit=""))
        for pool, share in g.pools.items():
            if share >= SHOWN_POOL_SHARE:
                rows.append(MetricRow(metric=f"Profile share {pool}", task=scope, value=round(100 * share, 2),
                                      unit="%"))
    return rows


def _graphs(trial: Any) -> list[tuple[tuple[str, int, str], Path, str]]:
    """((cluster, node's place, window), collapsed file, node name) of a PlotTrial's stored profile."""
    summary = trial.summary
    data = (summary.sections.get(SECTION) if summary is not None else None) or {}
    if not data:
        return []
    s = ProfileSection.model_validate(data)
    places: dict[str, list[str]] = {}
    for g in s.graphs:
        nodes = places.setdefault(g.cluster, [])
        if g.node not in nodes:
            nodes.append(g.node)
    root = trials_dir() / trial.trial_id
    return [((g.cluster, sorted(places[g.cluster]).index(g.node), g.task), root / g.collapsed, g.node)
            for g in s.graphs]


def _read(path: Path, notes: list[str] | None) -> Stacks | None:
    try:
        return parse_collapsed(path.read_text())
    except OSError:
        if notes is not None:
            notes.append(f"Flame graph {path} is not on this machine (profiles stay in the trial folder of the "
                         "machine that ran the race).")
        return None
    except ValueError as e:
        if notes is not None:
            notes.append(f"Flame graph {path}: {e}.")
        return None


def _changes_table(base: Stacks, cand: Stacks) -> str:
    rows = "".join(f"<tr><td><code>{html.escape(c.frame)}</code></td><td>{100 * c.base_share:.2f}%</td>"
                   f"<td>{100 * c.share:.2f}%</td><td>+{100 * c.change:.2f}</td></tr>"
                   for c in top_changes(base, cand, TOP_FRAMES))
    return ("<table class='fg-top'><tr><th>frame (with what it calls)</th><th>baseline share</th>"
            "<th>candidate share</th><th>added, points</th></tr>" + (rows or "<tr><td colspan=4>none grew</td></tr>")
            + "</table>")


def profile_plots(trials: list[Any], notes: list[str] | None = None) -> list[Any]:
    from bench.reporting.plots import Plot

    sides: dict[int, list[Any]] = {}
    for t in trials:
        sides.setdefault(t.side_index, []).append(t)
    plots: list[Any] = []
    # per side: its samples per (cluster, node place, window), summed over the side's trials
    merged: dict[int, dict[tuple[str, int, str], Stacks]] = {}
    names: dict[int, dict[tuple[str, int, str], str]] = {}
    for index, side in sorted(sides.items()):
        for t in side:
            for key, path, node in _graphs(t):
                stacks = _read(path, notes)
                if stacks is not None:
                    merged.setdefault(index, {})[key] = merge(merged.get(index, {}).get(key, {}), stacks)
                    names.setdefault(index, {})[key] = node
    if not merged:
        return []
    label = {i: s[0].side for i, s in sides.items()}
    head = style() + "<style>.fg-top{border-collapse:collapse;font-size:12px}.fg-top td,.fg-top th{padding:2px 8px;" \
                     "border-bottom:1px solid #ddd;text-align:left}</style>"
    baseline = merged.get(min(sides), {})
    n = 0
    unmatched = 0
    for index in sorted(merged):
        for key, stacks in sorted(merged[index].items()):
            cluster, _place, window = key
            node = names[index][key]
            base_key = _baseline_key(key, baseline)
            if index != min(sides) and base_key is None and baseline:
                unmatched += 1  # a comparison draws what it can compare; the trial folder has the rest
                continue
            if index != min(sides) and base_key is not None:
                base = baseline[base_key]
                title = (f"Differential flame graph, {window}: {label[index]} {cluster}/{node} against "
                         f"{label[min(sides)]} {base_key[0]}/{names[min(sides)][base_key]}")
                body = (f"<p><b>Frames whose share of the samples grew most</b> ({title})</p>"
                        + _changes_table(base, stacks)
                        + render_fragment(tree(stacks, base), title, f"fg-{n}", diff=True))
                key_name = f"flamegraph-diff-{n}"
            else:
                title = f"Flame graph, {window}: {label[index]} {cluster}/{node} ({sum(stacks.values())} samples)"
                body = render_fragment(tree(stacks), title, f"fg-{n}")
                key_name = f"flamegraph-{n}"
            plots.append(Plot(key_name, title, None, html=(head if n == 0 else "") + body))
            n += 1
    if unmatched and notes is not None:
        notes.append(f"{unmatched} flame graph(s) of the candidates have no baseline counterpart (another task, "
                     "cluster or node) and are not drawn here; each trial's own are in its report and trial folder.")
    return plots


def _baseline_key(key: tuple[str, int, str], baseline: dict[tuple[str, int, str], Stacks]
                  ) -> tuple[str, int, str] | None:
    cluster, place, window = key
    for c in (cluster, "default"):
        if (c, place, window) in baseline:
            return (c, place, window)
    return None
