"""The live page (pure): a ``LiveRecord`` as one self-contained HTML file -- tables of the newest values and inline
SVG line charts of throughput, latency percentiles, errors and every extension value over time. No JavaScript
library and no extra: while the race runs the page reloads itself every second (the file is rewritten whole,
with its data in it), so it works from ``file://``, where Chromium refuses ``fetch()``, and needs no server."""

from __future__ import annotations

import json
from datetime import datetime
from html import escape

from bench.results.live_record import ExtraPoint, LiveRecord, TaskPoint

WIDTH, HEIGHT = 720, 220
LEFT, RIGHT, TOP, BOTTOM = 64, 150, 12, 28
MOST_POINTS = 600  # a longer series is drawn from buckets of consecutive points (their max; throughput: mean)
COLOURS = ["#1565c0", "#c62828", "#2e7d32", "#ef6c00", "#6a1b9a", "#00838f", "#5d4037", "#ad1457"]
Series = tuple[str, list[tuple[float, float | None]]]

CSS = """body{font-family:system-ui,sans-serif;margin:16px;color:#222}h1{font-size:20px;margin:0 0 4px}
.status{color:#555;margin-bottom:12px}table{border-collapse:collapse;margin:8px 0 16px}
th,td{padding:3px 10px;text-align:right;border-bottom:1px solid #ddd}th:first-child,td:first-child{text-align:left}
.charts{display:flex;flex-wrap:wrap;gap:12px}.chart{border:1px solid #ddd;padding:6px}.chart h3{font-size:14px;margin:0}
svg{width:720px;max-width:100%;height:auto}.grid{stroke:#eee}.tick{font-size:11px;fill:#555}
.line{fill:none;stroke-width:1.6}.legend{font-size:11px}.err{color:#c62828}"""


def _num(v: float | None) -> str:
    if v is None:
        return "?"
    if v == 0:
        return "0"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.1f}" if abs(v) >= 10 else f"{v:,.2f}"


def downsample(points: list[tuple[float, float | None]], mean: bool = False,
               most: int = MOST_POINTS) -> list[tuple[float, float | None]]:
    """At most ``most`` points: consecutive points bucketed, each bucket at its last x with the max of its known
    values (so a spike stays visible) or, with ``mean``, their mean; a bucket with no known value stays a gap."""
    if len(points) <= most:
        return points
    k = -(-len(points) // most)
    out: list[tuple[float, float | None]] = []
    for i in range(0, len(points), k):
        chunk = points[i:i + k]
        known = [y for _, y in chunk if y is not None]
        y = (sum(known) / len(known) if mean else max(known)) if known else None
        out.append((chunk[-1][0], y))
    return out


def line_chart(title: str, series: list[Series], mean: bool = False, x_end: float | None = None) -> str:
    """One chart: a line per series over x from 0 to ``x_end`` seconds (default: the last point), y from 0;
    unknown values leave gaps."""
    drawn = [(name, downsample(pts, mean)) for name, pts in series]
    xs = [x for _, pts in drawn for x, _ in pts]
    ys = [y for _, pts in drawn for _, y in pts if y is not None]
    x1 = x_end or max(xs, default=1.0) or 1.0
    y1 = (max(ys, default=1.0) or 1.0) * 1.1
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> str:
        return f"{LEFT + pw * x / x1:.1f}"

    def py(y: float) -> str:
        return f"{TOP + ph * (1 - y / y1):.1f}"

    out = [f'<div class="chart"><h3>{escape(title)}</h3><svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
           f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">']
    for frac in (0.0, 0.5, 1.0):
        y = y1 / 1.1 * frac
        out.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{py(y)}" y2="{py(y)}"/>'
                   f'<text class="tick" x="{LEFT - 6}" y="{float(py(y)) + 4:.1f}" text-anchor="end">{_num(y)}</text>')
    out.append(f'<text class="tick" x="{LEFT}" y="{HEIGHT - 8}">0 s</text>'
               f'<text class="tick" x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" text-anchor="end">{x1:,.0f} s</text>')
    for i, (name, pts) in enumerate(drawn):
        colour = COLOURS[i % len(COLOURS)]
        segments: list[list[str]] = [[]]
        for x, v in pts:
            if v is None:
                segments.append([])
            else:
                segments[-1].append(f"{px(x)},{py(v)}")
        for seg in segments:
            if len(seg) == 1:
                cx, cy = seg[0].split(",")
                out.append(f'<circle cx="{cx}" cy="{cy}" r="2" fill="{colour}"/>')
            elif seg:
                out.append(f'<polyline class="line" stroke="{colour}" points="{" ".join(seg)}"/>')
        out.append(f'<text class="legend" x="{WIDTH - RIGHT + 8}" y="{TOP + 12 + 14 * i}" fill="{colour}">'
                   f'{escape(name)}</text>')
    out.append("</svg></div>")
    return "".join(out)


def _task_table(record: LiveRecord) -> str:
    rows = ['<table id="tasks"><tr><th>Task</th><th>Rate now</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th>'
            '<th>Requests</th><th>Errors</th></tr>']
    for task, pts in record.tasks.items():
        if not pts:
            continue
        p = pts[-1]
        lat = p.latency_ms or {}
        cells = [("rate", f"{_num(p.rate)} {p.unit}"), *((k, _num(lat.get(k))) for k in ("p50", "p90", "p99")),
                 ("requests", f"{p.requests:,}"), ("errors", f"{p.errors:,}")]
        rows.append(f'<tr><td>{escape(task)}</td>' + "".join(
            f'<td data-task="{escape(task)}" data-field="{f}"{" class=err" if f == "errors" and p.errors else ""}>'
            f'{escape(v)}</td>' for f, v in cells) + "</tr>")
    return "".join(rows) + "</table>"


def _extra_tables(record: LiveRecord) -> str:
    out = []
    for group, keys in record.extras.items():
        cols = list(dict.fromkeys(c for pts in keys.values() for p in pts[-1:] for c in p.values))
        out.append(f"<h2>{escape(group)}</h2><table><tr><th></th>" + "".join(f"<th>{escape(c)}</th>" for c in cols)
                   + "<th></th></tr>")
        for key, pts in keys.items():
            last = pts[-1]
            out.append(f"<tr><td>{escape(key)}</td>" + "".join(
                f'<td data-extra="{escape(key)}" data-field="{escape(c)}">{_num(last.values.get(c))}</td>'
                for c in cols) + f"<td>{escape(last.note)}</td></tr>")
        out.append("</table>")
    return "".join(out)


def _charts(record: LiveRecord) -> str:
    """Every chart on the race's clock, from its first frame to its newest, so they line up."""
    tasks = {t: pts for t, pts in record.tasks.items() if pts}
    end = max(record.updated - record.started, 1.0)
    charts = [line_chart("Throughput (per second)",
                         [(f"{t} ({pts[-1].unit})", [(p.t, p.rate) for p in pts]) for t, pts in tasks.items()],
                         mean=True, x_end=end)]
    for t, pts in tasks.items():
        charts.append(line_chart(f"{t}: latency (ms, last 10 s)", [
            (k, [(p.t, (p.latency_ms or {}).get(k)) for p in pts]) for k in ("p50", "p90", "p99")], x_end=end))
    charts.append(line_chart("Errors per second", [(t, [(p.t, p.errors_per_s) for p in pts])
                                                   for t, pts in tasks.items()], x_end=end))
    for group, keys in record.extras.items():
        cols = list(dict.fromkeys(c for pts in keys.values() for p in pts for c in p.values))
        for c in cols:
            charts.append(line_chart(f"{group}: {c}", [(k, _points(pts, c)) for k, pts in keys.items()], x_end=end))
    return '<div class="charts">' + "".join(charts) + "</div>"


def _points(pts: list[ExtraPoint], column: str) -> list[tuple[float, float | None]]:
    return [(p.t, p.values.get(column)) for p in pts]


def render_live_page(record: LiveRecord) -> str:
    updated = datetime.fromtimestamp(record.updated).strftime("%H:%M:%S")
    status = (f"running: updated {updated}, this page reloads every second" if record.running
              else f"finished at {updated}: what the live view showed")
    # The data is in the final page only (it is kept beside it as well): dumping an hour of points took most of a
    # rewrite's time, every second.
    data = "" if record.running else json.dumps(record.model_dump(mode="json"), separators=(",", ":")).replace(
        "</", "<\\/")
    refresh = '<meta http-equiv="refresh" content="1">' if record.running else ""
    return (f'<!doctype html><html><head><meta charset="utf-8">{refresh}<title>{escape(record.title)} (live)</title>'
            f'<style>{CSS}</style></head><body><h1>{escape(record.title)}</h1>'
            f'<div class="status" id="status" data-running="{str(record.running).lower()}">{escape(status)}</div>'
            f'{_task_table(record)}{_extra_tables(record)}{_charts(record)}'
            + (f'<script type="application/json" id="live-data">{data}</script>' if data else "") + "</body></html>")


def task_point(t: float, rate: float | None, unit: str, latency: dict[float, float] | None, requests: int,
               errors: int, errors_per_s: float | None) -> TaskPoint:
    return TaskPoint(t=t, rate=rate, unit=unit, requests=requests, errors=errors, errors_per_s=errors_per_s,
                     latency_ms=None if latency is None else {f"p{p:g}": v for p, v in latency.items()})
