"""Plots for reports (plotly): throughput over time per task, latency percentiles per task, and per-node
CPU, disk IO, network and CCR lag over time -- every trial of every side overlaid, one colour per side.

Figures are built from the stored samples and telemetry (DataFrames in ``PlotTrial``); a metric absent
from every trial gives no figure. Counters (disk, network bytes) are shown as rates between samples. Every
y axis starts at zero, so a change of a fraction of a percent cannot look like a jump. A series with no points
or only zeros (the transport network of a single-node cluster) is left out, and a figure with no series left
is not drawn: the ``notes`` list passed in gets one line saying which and why.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from bench.results.sections import section_kinds
from bench.results.stats import throughput_series
from bench.results.summary import Summary, percentile_label
from bench.util.errors import ConfigError
from bench.util.extras import missing_line, require

if TYPE_CHECKING:
    import plotly.graph_objects as go

def graph_objects() -> Any:
    """plotly's ``graph_objects``, or one line naming ``pip install 'bench[plots]'`` (an optional extra)."""
    return require("plotly.graph_objects", "plots", "plots and HTML reports")


PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
DASHES = ["solid", "dash", "dot", "dashdot", "longdash"]


@dataclass
class PlotTrial:
    side: str  # label of the side (baseline / candidate)
    side_index: int
    trial_id: str
    samples: pd.DataFrame
    telemetry: pd.DataFrame
    summary: Summary | None
    repetition: int = 0  # index within its side (line dash)

    @property
    def name(self) -> str:
        return f"{self.side} · {self.trial_id[:8]}"


@dataclass
class Plot:
    key: str  # file-name-safe id, e.g. "throughput-index-append"
    title: str
    figure: go.Figure | None
    # A figure that is its own self-contained HTML (e.g. a flame graph) instead of a plotly figure: shown in HTML
    # reports as it is, never exported as a PNG.
    html: str = ""


def _layout(fig: go.Figure, title: str, x: str, y: str) -> go.Figure:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, template="plotly_white", height=380,
                      margin={"l": 60, "r": 20, "t": 50, "b": 50}, legend={"orientation": "h", "y": -0.25})
    fig.update_yaxes(rangemode="tozero")
    return fig


def _note(notes: list[str] | None, title: str, reasons: dict[str, list[str]], drawn: bool) -> None:
    """One line per figure: the series left out, grouped by reason; or that the figure was not drawn."""
    if notes is None or not reasons:
        return
    if drawn:
        notes.append(f"{title}: left out " + "; ".join(f"{', '.join(names)} ({why})" for why, names in reasons.items()))
    else:
        notes.append(f"{title}: not drawn, every series left out: "
                     + "; ".join(f"{len(names)} {why}" for why, names in reasons.items()))


def _line(t: PlotTrial) -> dict[str, object]:
    """One colour per side, one dash per trial within the side; legend entries grouped by side."""
    color = PALETTE[t.side_index % len(PALETTE)]
    return {"line": {"color": color, "dash": DASHES[t.repetition % len(DASHES)]}, "legendgroup": t.side, "name": t.name}


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in text).strip("-") or "x"


def _tasks(trials: list[PlotTrial]) -> list[str]:
    """Tasks with a course to plot: a throughput, and more than one request in some trial (a one-off step such
    as create-index has neither a course over time nor percentiles)."""
    seen: dict[str, None] = {}
    for t in trials:
        if t.summary is not None:
            for ts in t.summary.tasks:
                if ts.throughput is not None and ts.requests > 1:
                    seen.setdefault(ts.task)
    return list(seen)


def throughput_plots(trials: list[PlotTrial], notes: list[str] | None = None) -> list[Plot]:
    go = graph_objects()
    plots = []
    for task in _tasks(trials):
        fig, unit, longest = go.Figure(), "", 0
        reasons: dict[str, list[str]] = {}
        for t in trials:
            if t.samples.empty or not (t.samples["task"] == task).any():
                continue
            ts = t.summary.task(task) if t.summary is not None else None
            if ts is not None and ts.throughput is None:
                # every request of the task failed in this trial: no course of zeros to draw
                reasons.setdefault("every request failed", []).append(t.name)
                continue
            s = throughput_series(t.samples, task)
            # The seconds after the first client finished show the load ending, not the cluster (see bench.results.stats).
            s = s[(s["phase"] == "measurement") & s["full_load"].astype(bool)]
            if s.empty:
                reasons.setdefault("no whole second of measured work with every client busy", []).append(t.name)
                continue
            longest = max(longest, len(s))
            unit = f"{t.samples.loc[t.samples['task'] == task, 'unit'].iloc[0]}/s"
            fig.add_trace(go.Scatter(x=s["second"], y=s["throughput"], mode="lines+markers", **_line(t)))
        if fig.data and longest >= 2:  # a one-request task (create-index) has no course over time
            _note(notes, f"Throughput over time: {task}", reasons, drawn=True)
            plots.append(Plot(f"throughput-{_safe(task)}", f"Throughput over time: {task}",
                              _layout(fig, f"Throughput over time: {task} (per second, while every client "
                                      "was working)", "seconds since the measured part started", unit)))
    return plots


def latency_plots(trials: list[PlotTrial], notes: list[str] | None = None) -> list[Plot]:
    go = graph_objects()
    plots = []
    for task in _tasks(trials):
        fig = go.Figure()
        for t in trials:
            ts = t.summary.task(task) if t.summary else None
            if ts is None or len(ts.latency) < 2:  # one request: nothing to plot
                continue
            pcts = sorted(ts.latency)
            fig.add_trace(go.Scatter(x=[percentile_label(p) for p in pcts], y=[ts.latency[p] for p in pcts],
                                     mode="lines+markers", **_line(t)))
        if fig.data:
            plots.append(Plot(f"latency-{_safe(task)}", f"Latency percentiles: {task}",
                              _layout(fig, f"Latency percentiles: {task}", "percentile", "latency (ms)")))
    return plots


# (key, title, y label, candidate series: (device, metric, scale, as_rate)); the first present series is used.
_TELEMETRY: list[tuple[str, str, str, list[tuple[str, str, float, bool]]]] = [
    ("cpu", "CPU per node", "CPU %", [("node-stats", "process.cpu.percent", 1.0, False),
                                      ("host", "process.cpu.percent", 1.0, False)]),
    ("disk-write", "Disk writes per node", "MB/s", [("node-stats", "fs.io_stats.total.write_kilobytes", 1 / 1024, True),
                                                    ("host", "process.write_bytes", 1 / 1024 ** 2, True)]),
    ("disk-read", "Disk reads per node", "MB/s", [("node-stats", "fs.io_stats.total.read_kilobytes", 1 / 1024, True),
                                                  ("host", "process.read_bytes", 1 / 1024 ** 2, True)]),
    ("net-rx", "Network received per node (transport)", "MB/s",
     [("node-stats", "transport.rx_size_in_bytes", 1 / 1024 ** 2, True)]),
    ("net-tx", "Network sent per node (transport)", "MB/s",
     [("node-stats", "transport.tx_size_in_bytes", 1 / 1024 ** 2, True)]),
    ("ccr-lag-ops", "CCR lag per follower index", "operations", [("ccr-stats", "lag_ops", 1.0, False)]),
    ("ccr-lag-s", "CCR lag time per follower index", "seconds", [("ccr-stats", "lag_seconds", 1.0, False)]),
]


def _series(df: pd.DataFrame, device: str, metric: str, scale: float,
            as_rate: bool) -> tuple[list[tuple[str, pd.DataFrame]], list[str]]:
    """(cluster/node, t/y frame) per node, and the nodes with samples but no point to draw (a counter sampled
    once has no rate)."""
    sel = df[(df["device"] == device) & (df["metric"] == metric) & (df["node"] != "")]
    if device == "host":
        sel = sel[~sel["cluster"].isin(["host", "driver"])]
    out, empty = [], []
    for (cluster, node), g in sel.groupby(["cluster", "node"], sort=True):
        g = g.sort_values("timestamp")
        x, y = g["timestamp"].to_numpy(float), g["value"].to_numpy(float) * scale
        if as_rate:
            dt = x[1:] - x[:-1]
            ok = dt > 0
            y = ((y[1:] - y[:-1])[ok] / dt[ok]).clip(min=0)
            x = x[1:][ok]
        if len(x):
            out.append((f"{cluster}/{node}", pd.DataFrame({"t": x, "y": y})))
        else:
            empty.append(f"{cluster}/{node}")
    return out, empty


def telemetry_plots(trials: list[PlotTrial], notes: list[str] | None = None) -> list[Plot]:
    go = graph_objects()
    plots = []
    for key, title, ylabel, candidates in _TELEMETRY:
        fig = go.Figure()
        reasons: dict[str, list[str]] = {}
        for t in trials:
            if t.telemetry.empty:
                continue
            start = float(t.telemetry["timestamp"].min())
            for device, metric, scale, rate in candidates:
                series, empty = _series(t.telemetry, device, metric, scale, rate)
                if not series and not empty:
                    continue  # this trial has not sampled the metric this way: try the next source
                for node in empty:
                    reasons.setdefault("with no data points", []).append(f"{t.name} · {node}")
                per_cluster = Counter(name.split("/")[0] for name in [*(n for n, _ in series), *empty])
                for node, s in series:
                    if not s["y"].abs().gt(0).any():
                        alone = per_cluster[node.split("/")[0]] == 1
                        why = _ZERO[key] if alone and key in _ZERO else "all zero"
                        reasons.setdefault(why, []).append(f"{t.name} · {node}")
                        continue
                    style = _line(t)
                    style["name"] = f"{t.name} · {node}"
                    fig.add_trace(go.Scatter(x=s["t"] - start, y=s["y"], mode="lines", **style))
                break
        _note(notes, title, reasons, drawn=bool(fig.data))
        if fig.data:
            plots.append(Plot(key, title, _layout(fig, title, "seconds since race start", ylabel)))
    return plots


# Why a series of zeros is no news, where the reason is known: the node is alone in its cluster.
_ZERO = {"net-rx": "all zero: a node alone in its cluster sends nothing over transport",
         "net-tx": "all zero: a node alone in its cluster sends nothing over transport"}


def all_plots(trials: list[PlotTrial], notes: list[str] | None = None) -> list[Plot]:
    """Every figure the trials have data for; ``notes`` gets a line per figure that left series out."""
    # Sections' own figures (``register_section(plots=...)``), after the core's.
    extra = [p for kind in section_kinds() if kind.plots is not None for p in kind.plots(trials, notes)]
    return [*throughput_plots(trials, notes), *latency_plots(trials, notes), *telemetry_plots(trials, notes), *extra]


def plotly_js() -> str:
    """plotly.js itself, to inline in a self-contained HTML file."""
    return str(require("plotly.offline", "plots", "HTML reports").get_plotlyjs())


def figure_div(plot: Plot) -> str:
    if plot.figure is None:
        return plot.html
    return plot.figure.to_html(full_html=False, include_plotlyjs=False, div_id=f"plot-{plot.key}",
                               config={"displaylogo": False, "responsive": True})


def export_pngs(plots: list[Plot], folder: Path) -> list[Path]:
    """One PNG per plot (kaleido drives a headless Chromium: Debian's ``chromium`` package here)."""
    pio = require("plotly.io", "plots", "--plots-dir (PNG export)")
    folder = Path(folder).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"--plots-dir {folder}: cannot create it: {e.strerror or e}") from e
    plots = [p for p in plots if p.figure is not None]
    paths = [folder / f"{p.key}.png" for p in plots]
    if not plots:
        return []
    try:
        import kaleido  # type: ignore[import-untyped]  # noqa: F401 - plotly's PNG engine; ships no types
    except ImportError:
        raise ConfigError(missing_line("--plots-dir (PNG export)", "kaleido", "plots")) from None
    try:
        pio.write_images([p.figure for p in plots], paths, width=1000, height=420)
    except Exception as e:
        raise ConfigError(f"--plots-dir: PNG export failed ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}): "
                          "it needs Chromium (Debian: apt-get install chromium)") from e
    return paths
