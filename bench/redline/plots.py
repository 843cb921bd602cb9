"""The redline curve in HTML reports: achieved against target throughput, and latency against target, one line
per trial (its steps in target order), the sustained maximum marked."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.redline.section import SECTION, RedlineSection, answer_steps
from bench.reporting.plots import DASHES, PALETTE, Plot, PlotTrial, graph_objects

if TYPE_CHECKING:
    import plotly.graph_objects as go


def _sections(trials: list[PlotTrial]) -> list[tuple[PlotTrial, RedlineSection]]:
    return [(t, RedlineSection.model_validate(t.summary.sections[SECTION])) for t in trials
            if t.summary is not None and t.summary.sections.get(SECTION)]


def _figure(title: str, y: str) -> go.Figure:
    fig = graph_objects().Figure()
    fig.update_layout(title=title, xaxis_title="target (requests/s)", yaxis_title=y, template="plotly_white",
                      height=380, margin={"l": 60, "r": 20, "t": 50, "b": 50},
                      legend={"orientation": "h", "y": -0.25})
    fig.update_xaxes(rangemode="tozero")
    fig.update_yaxes(rangemode="tozero")
    return fig


def redline_plots(trials: list[PlotTrial], notes: list[str] | None = None) -> list[Plot]:
    found = _sections(trials)
    if not found:
        return []
    go = graph_objects()
    tp = _figure("Redline: achieved throughput by target", "achieved (requests/s)")
    lat = _figure("Redline: latency by target", "ms")
    top = max(st.target for _, s in found for st in s.steps)
    tp.add_trace(go.Scatter(x=[0, top], y=[0, top], mode="lines", name="achieved = target",
                            line={"color": "#999", "dash": "dot"}))
    for t, s in found:
        steps = sorted(s.steps, key=lambda st: st.target)
        color = PALETTE[t.side_index % len(PALETTE)]
        dash = DASHES[t.repetition % len(DASHES)]
        x = [st.target for st in steps]
        text = ["met" if st.met else f"missed: {st.miss}" for st in steps]
        symbols = ["circle" if st.met else "x" for st in steps]
        tp.add_trace(go.Scatter(x=x, y=[st.achieved for st in steps], mode="lines+markers", text=text,
                                name=f"{t.name} · {s.task}", line={"color": color, "dash": dash},
                                marker={"symbol": symbols, "size": 9}, legendgroup=t.side))
        for p, style in (("50", "dot"), ("99", dash)):
            lat.add_trace(go.Scatter(x=x, y=[st.latency_ms.get(p) for st in steps], mode="lines+markers",
                                     text=text, name=f"{t.name} · p{p} latency", marker={"symbol": symbols},
                                     line={"color": color, "dash": style}, legendgroup=t.side))
        lat.add_trace(go.Scatter(x=x, y=[st.service_time_ms.get("99") for st in steps], mode="lines",
                                 name=f"{t.name} · p99 service time", line={"color": color, "dash": "longdashdot",
                                                                             "width": 1}, legendgroup=t.side))
        if s.sustained is not None:
            tp.add_vline(x=s.sustained, line={"color": color, "dash": "dash", "width": 1})
    first = found[0][1]
    if first.latency_ms is not None:
        lat.add_hline(y=first.latency_ms, line={"color": "#d62728", "dash": "dash", "width": 1},
                      annotation_text=f"objective p{first.percentile:g} ≤ {first.latency_ms:g} ms")
    return [Plot("redline-throughput", "Redline: achieved throughput by target", tp),
            Plot("redline-latency", "Redline: latency by target", lat), *_objective_curves(found)]


def _objective_curves(found: list[tuple[PlotTrial, RedlineSection]]) -> list[Plot]:
    """Per step objective with a curve: its value over time in the sustained and the first failing step of every
    trial (unknown readings are gaps)."""
    go = graph_objects()
    plots: list[Plot] = []
    keys = dict.fromkeys(o.key for _, s in found for st in answer_steps(s) for o in st.objectives if o.curve)
    for key in keys:
        label = ""
        fig = graph_objects().Figure()
        for t, s in found:
            color = PALETTE[t.side_index % len(PALETTE)]
            for st, dash in zip(answer_steps(s), ("solid", "dot"), strict=False):
                for o in st.objectives:
                    if o.key != key or not o.curve:
                        continue
                    label = o.curve_label
                    fig.add_trace(go.Scatter(
                        x=[p.t for p in o.curve], y=[p.value for p in o.curve], mode="lines+markers",
                        name=f"{t.name} · step {st.step}: {st.throughput:,.0f} {st.unit}/s "
                             f"({'met' if st.met else 'missed'})",
                        text=[p.phase for p in o.curve], line={"color": color, "dash": dash}, legendgroup=t.side))
        fig.update_layout(title=f"Redline: {label} over each answer step ({key})", xaxis_title="s since the step "
                          "started", yaxis_title=label, template="plotly_white", height=380,
                          margin={"l": 60, "r": 20, "t": 50, "b": 50}, legend={"orientation": "h", "y": -0.25})
        fig.update_yaxes(rangemode="tozero")
        plots.append(Plot(f"redline-{key}", f"Redline: {label} over time ({key})", fig))
    return plots
