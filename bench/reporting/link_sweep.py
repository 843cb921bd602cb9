"""The link sweep: variants that differ in the link between their clusters (e.g. a 0, 50, 100, 200 ms round trip
between follower and leader), with the follower's lag, its catch-up time after indexing and the leader's indexing
throughput against the link's round trip, in one table and one plot (pure: loading is ``link_sweep_load``).

The round trip of a row is what the variant's topology configured (0: no link), beside what bench measured on the
link before each race; a variant whose races failed says so and has no values, never a partial mean."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from bench.reporting.plots import Plot, graph_objects
from bench.reporting.study import TableView

THROUGHPUT = "Median Throughput (indexing)"
LAG_P99 = "99th percentile CCR lag time"
CATCH_UP = "100th percentile CCR catch-up time (CCR catch-up)"


class LinkSweepTrial(BaseModel):
    trial_id: str
    rtt_ms: float  # configured (0: no link)
    link: str  # the link as configured, or "no link"
    measured_rtt_ms: float | None = None  # what the link added, as bench measured it before the race
    throughput: tuple[float, str] | None = None
    lag_p99: tuple[float, str] | None = None  # the slowest follower index's
    catch_up: tuple[float, str] | None = None
    problem: str | None = None  # why this trial has no values (failed race, no summary)


class LinkSweepRow(BaseModel):
    variant: str
    trials: list[LinkSweepTrial]

    @property
    def measured(self) -> list[LinkSweepTrial]:
        return [t for t in self.trials if t.problem is None]


class LinkSweepTable(BaseModel):
    experiment: str
    run_id: str
    rows: list[LinkSweepRow]


def _seconds(v: tuple[float, str] | None) -> tuple[float, str] | None:
    """Times in seconds, so lag and catch-up share the plot's axis."""
    return (v[0] / 1000.0, "s") if v is not None and v[1] == "ms" else v


def trial_values(values: dict[str, tuple[float, str]]) -> dict[str, tuple[float, str] | None]:
    """A trial's study values (bench.reporting.study.trial_study_values) -> throughput, the largest lag p99 of its
    follower indices, catch-up (times in seconds)."""
    lags = [v for k, v in values.items() if k.startswith(f"{LAG_P99} [")]
    return {"throughput": values.get(THROUGHPUT), "lag_p99": _seconds(max(lags, key=lambda v: v[0])) if lags else None,
            "catch_up": _seconds(values.get(CATCH_UP))}


def _mean(values: list[tuple[float, str] | None]) -> tuple[float, str] | None:
    """The mean when every trial has the value (in one unit); None when any lacks it."""
    if not values or any(v is None for v in values) or len({v[1] for v in values if v}) != 1:
        return None
    return sum(v[0] for v in values if v) / len(values), values[0][1] if values[0] else ""


def _cell(value: tuple[float, str] | None) -> str:
    return "–" if value is None else f"{value[0]:,.2f} {value[1]}".strip()


def row_values(row: LinkSweepRow) -> dict[str, Any]:
    ok = row.measured
    rtts = [t.measured_rtt_ms for t in ok if t.measured_rtt_ms is not None]
    return {"rtt_ms": row.trials[0].rtt_ms if row.trials else None,
            "measured_rtt_ms": sum(rtts) / len(rtts) if rtts and len(rtts) == len(ok) else None,
            "throughput": _mean([t.throughput for t in ok]), "lag_p99": _mean([t.lag_p99 for t in ok]),
            "catch_up": _mean([t.catch_up for t in ok])}


def link_sweep_view(table: LinkSweepTable) -> TableView:
    rows = []
    for r in sorted(table.rows, key=lambda r: (r.trials[0].rtt_ms if r.trials else float("inf"))):
        v = row_values(r)
        problems = [f"{t.trial_id[:8]}: {t.problem}" for t in r.trials if t.problem]
        rows.append([r.variant, r.trials[0].link if r.trials else "–",
                     f"{v['rtt_ms']:g} ms" if v["rtt_ms"] is not None else "–",
                     f"{v['measured_rtt_ms']:.1f} ms" if v["measured_rtt_ms"] is not None else "–",
                     _cell(v["throughput"]), _cell(v["lag_p99"]), _cell(v["catch_up"]),
                     f"{len(r.measured)} of {len(r.trials)}" + (f" ({'; '.join(problems)})" if problems else "")])
    return TableView(
        title=f"Link sweep: {table.experiment}, run {table.run_id}",
        headers=["Variant", "Link", "RTT (configured)", "RTT added (bench measured)", "Leader throughput (median)",
                 "Follower lag p99", "Catch-up after indexing", "Trials measured"],
        rows=rows,
        notes=["RTT added: bench's median round trip on the leader's transport port through the link minus its median "
               "without it, probed in turn before each race (mean over the variant's trials). Lag p99: the slowest follower index's "
               "(ccr-stats telemetry); catch-up: wait-for-followers-to-sync after indexing stopped. A value is "
               "shown only when every measured trial of the variant has it."])


def link_sweep_plot(table: LinkSweepTable) -> Plot | None:
    """Lag p99 and catch-up (seconds, left axis) and leader throughput (right axis) against the configured RTT."""
    points = sorted((v["rtt_ms"], v) for r in table.rows if (v := row_values(r))["rtt_ms"] is not None)
    if not points:
        return None
    go = graph_objects()
    fig = go.Figure()
    xs = [x for x, _ in points]
    for key, name in (("lag_p99", "follower lag p99"), ("catch_up", "catch-up after indexing")):
        ys = [v[key][0] if v[key] else None for _, v in points]
        unit = next((v[key][1] for _, v in points if v[key]), "s")
        fig.add_trace(go.Scatter(x=xs, y=ys, name=f"{name} ({unit})", mode="lines+markers"))
    tp = [v["throughput"][0] if v["throughput"] else None for _, v in points]
    unit = next((v["throughput"][1] for _, v in points if v["throughput"]), "")
    fig.add_trace(go.Scatter(x=xs, y=tp, name=f"leader throughput ({unit})", mode="lines+markers", yaxis="y2",
                             line={"dash": "dot"}))
    title = f"Link sweep: {table.experiment}"
    fig.update_layout(title=title, xaxis_title="round trip follower->leader (ms, configured)",
                      yaxis={"title": "seconds", "rangemode": "tozero"},
                      yaxis2={"title": unit, "overlaying": "y", "side": "right", "rangemode": "tozero"},
                      template="plotly_white", height=380, margin={"l": 60, "r": 60, "t": 50, "b": 50},
                      legend={"orientation": "h", "y": -0.25})
    return Plot(key="link-sweep", title=title, figure=fig)
