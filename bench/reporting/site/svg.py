"""One chart as inline SVG (pure): drawn on the server, so a page shows its charts without JavaScript, from
``file://`` or any static host, and every point is a plain link to its night's page.

What is drawn, back to front: the noise band of each night (shaded), nights without a value (a grey column with
a ✕, its error in the tooltip), gaps between runs much longer than usual ("no run"), annotations (purple, numbered),
change points (dashed, orange for a regression, green for an improvement), each night's 95 % confidence interval
(a vertical bar), the line of nightly values, and the points (red: regression against the noise band, green:
improvement, blue otherwise)."""

from __future__ import annotations

import statistics
from datetime import datetime
from html import escape

from bench.reporting.site.series import Chart, Point

WIDTH, HEIGHT = 760, 250
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 14, 30
COLOURS = {"regression": "#c62828", "improvement": "#2e7d32", "change": "#ef6c00"}
POINT = "#1565c0"


def _num(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.2f}"


def _f(v: float) -> str:
    return f"{v:.1f}"


def _x_positions(points: list[Point]) -> list[float]:
    """By date, so a missing night leaves its space; one night alone sits in the middle."""
    span = WIDTH - LEFT - RIGHT
    if len(points) == 1:
        return [LEFT + span / 2]
    t0, t1 = points[0].date.timestamp(), points[-1].date.timestamp()
    if t1 == t0:
        return [LEFT + span * i / (len(points) - 1) for i in range(len(points))]
    return [LEFT + span * (p.date.timestamp() - t0) / (t1 - t0) for p in points]


def _y_range(points: list[Point]) -> tuple[float, float]:
    vals: list[float] = []
    for p in points:
        if p.value is not None:
            vals.append(p.value)
        for pair in (p.ci, p.band):
            if pair is not None:
                vals += list(pair)
    if not vals:
        return 0.0, 1.0
    lo, hi = min(vals), max(vals)
    pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 1.0
    return lo - pad, hi + pad


def _tooltip(p: Point, unit: str) -> str:
    if p.value is None:
        return f"{p.date:%Y-%m-%d %H:%M} run {p.run_id}: no value: {p.error}"
    text = f"{p.date:%Y-%m-%d %H:%M} run {p.run_id}: {_num(p.value)} {unit} (n={p.n})"
    if p.ci:
        text += f", 95 % CI {_num(p.ci[0])} … {_num(p.ci[1])}"
    if p.band:
        text += f", noise band {_num(p.band[0])} … {_num(p.band[1])} ({p.band_from})"
    return f"{text}: {p.trend}"


def _gaps(points: list[Point], xs: list[float]) -> list[tuple[float, float, datetime, datetime]]:
    """Stretches between two runs more than twice the usual spacing: nights when nothing ran at all."""
    if len(points) < 3:
        return []
    steps = [(b.date - a.date).total_seconds() for a, b in zip(points, points[1:])]
    usual = statistics.median(steps)
    return [(xs[i], xs[i + 1], points[i].date, points[i + 1].date) for i, s in enumerate(steps)
            if usual > 0 and s > 2 * usual]


def render_chart(chart: Chart) -> str:
    pts = chart.points
    xs = _x_positions(pts)
    lo, hi = _y_range(pts)
    plot_h = HEIGHT - TOP - BOTTOM

    def y(v: float) -> float:
        return TOP + plot_h * (1 - (v - lo) / (hi - lo))

    out = [f'<svg class="chart-svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
           f'aria-label="{escape(chart.title)}" xmlns="http://www.w3.org/2000/svg">']
    # axes and y ticks
    for frac in (0.0, 0.5, 1.0):
        v = lo + (hi - lo) * (0.08 / 1.16 + frac * (1 - 0.16 / 1.16))
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_f(y(v))}" y2="{_f(y(v))}" class="grid"/>'
                   f'<text x="{LEFT - 6}" y="{_f(y(v) + 4)}" class="tick" text-anchor="end">{_num(v)}</text>')
    if pts:
        out.append(f'<text x="{_f(xs[0])}" y="{HEIGHT - 8}" class="tick" text-anchor="start">{pts[0].date:%Y-%m-%d}</text>')
        if len(pts) > 1:
            out.append(f'<text x="{_f(xs[-1])}" y="{HEIGHT - 8}" class="tick" text-anchor="end">'
                       f'{pts[-1].date:%Y-%m-%d}</text>')
    # noise band: one polygon per run of consecutive nights that have one
    runs: list[list[int]] = [[]]
    for i, p in enumerate(pts):
        if p.band is None:
            runs.append([])
        else:
            runs[-1].append(i)
    for run in (r for r in runs if r):
        upper = [f"{_f(xs[i])},{_f(y(pts[i].band[1]))}" for i in run if pts[i].band]  # type: ignore[index]
        lower = [f"{_f(xs[i])},{_f(y(pts[i].band[0]))}" for i in reversed(run) if pts[i].band]  # type: ignore[index]
        if len(run) == 1:
            i = run[0]
            b = pts[i].band
            assert b is not None
            out.append(f'<rect class="band" x="{_f(xs[i] - 3)}" width="6" y="{_f(y(b[1]))}" '
                       f'height="{_f(y(b[0]) - y(b[1]))}"/>')
        else:
            out.append(f'<polygon class="band" points="{" ".join(upper + lower)}"/>')
    for x0, x1, d0, d1 in _gaps(pts, xs):
        out.append(f'<rect class="norun" x="{_f(x0 + 4)}" width="{_f(max(x1 - x0 - 8, 1))}" y="{TOP}" height="{plot_h}">'
                   f'<title>no run between {d0:%Y-%m-%d} and {d1:%Y-%m-%d}</title></rect>')
    for i, p in enumerate(pts):
        if p.value is None:
            out.append(f'<a href="{escape(p.report)}" class="failed" data-night="{escape(p.run_id)}">'
                       f'<title>{escape(_tooltip(p, chart.unit))}</title>'
                       f'<rect x="{_f(xs[i] - 4)}" width="8" y="{TOP}" height="{plot_h}"/>'
                       f'<text x="{_f(xs[i])}" y="{TOP + plot_h - 4}" text-anchor="middle">✕</text></a>')
    for k, m in enumerate(chart.annotations, 1):
        x = xs[m.index]
        out.append(f'<g class="annotation" data-night="{escape(pts[m.index].run_id)}"><title>{escape(m.text)}</title>'
                   f'<line x1="{_f(x)}" x2="{_f(x)}" y1="{TOP}" y2="{TOP + plot_h}"/>'
                   f'<text x="{_f(x + 3)}" y="{TOP + 10}">{k}</text></g>')
    for m in chart.steps:
        x = (xs[m.index - 1] + xs[m.index]) / 2 if m.index > 0 else xs[0]
        out.append(f'<g class="step {m.kind}" data-night="{escape(pts[m.index].run_id)}"><title>{escape(m.text)}</title>'
                   f'<line x1="{_f(x)}" x2="{_f(x)}" y1="{TOP}" y2="{TOP + plot_h}" '
                   f'stroke="{COLOURS.get(m.kind, COLOURS["change"])}"/></g>')
    for i, p in enumerate(pts):
        if p.ci is not None:
            out.append(f'<line class="ci" x1="{_f(xs[i])}" x2="{_f(xs[i])}" y1="{_f(y(p.ci[0]))}" y2="{_f(y(p.ci[1]))}"/>')
    segments: list[list[str]] = [[]]
    for i, p in enumerate(pts):
        if p.value is None:
            segments.append([])
        else:
            segments[-1].append(f"{_f(xs[i])},{_f(y(p.value))}")
    for seg in (s for s in segments if len(s) > 1):
        out.append(f'<polyline class="line" points="{" ".join(seg)}"/>')
    for i, p in enumerate(pts):
        if p.value is None:
            continue
        colour = COLOURS.get(p.trend, POINT)
        out.append(f'<a href="{escape(p.report)}" class="point" data-night="{escape(p.run_id)}" '
                   f'data-trend="{escape(p.trend)}"><circle cx="{_f(xs[i])}" cy="{_f(y(p.value))}" r="4" '
                   f'fill="{colour}"><title>{escape(_tooltip(p, chart.unit))}</title></circle></a>')
    out.append("</svg>")
    return "".join(out)
