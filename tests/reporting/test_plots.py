"""Plots with honest axes: y from zero; series with nothing to show left out, and the report told which and why."""

from __future__ import annotations

import pandas as pd

from bench.reporting.plots import PlotTrial, all_plots, telemetry_plots


def _telemetry(rows: list[tuple[str, str, str, float, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"device": "node-stats", "cluster": c, "node": n, "metric": m, "timestamp": t, "value": v}
                         for c, n, m, t, v in rows])


def _trial(i: int, telemetry: pd.DataFrame) -> PlotTrial:
    return PlotTrial(side="base", side_index=0, trial_id=f"{i:032x}", samples=pd.DataFrame(), telemetry=telemetry,
                     summary=None, repetition=i)


def test_zero_series_are_left_out_with_a_note_and_axes_start_at_zero():
    cpu, rx = "process.cpu.percent", "transport.rx_size_in_bytes"
    rows = [("default", "default-0", cpu, float(t), 20.0 + (t % 2) * 0.4) for t in range(10)]
    rows += [("default", "default-0", rx, float(t), 0.0) for t in range(10)]  # one node: no transport traffic
    rows += [("default", "default-0", "fs.io_stats.total.write_kilobytes", 0.0, 5.0)]  # one sample: no rate
    notes: list[str] = []
    plots = {p.key: p for p in all_plots([_trial(0, _telemetry(rows))], notes)}
    # CPU wobbling between 20 and 20.4 % is drawn on an axis from 0, not zoomed into 20…20.4.
    assert set(plots) == {"cpu"}
    assert plots["cpu"].figure.layout.yaxis.rangemode == "tozero"
    assert len(plots["cpu"].figure.data) == 1
    assert any(n.startswith("Network received per node (transport): not drawn") and "1 all zero: a node alone in its cluster sends nothing over transport" in n for n in notes), notes
    assert any(n.startswith("Disk writes per node: not drawn") and "1 with no data points" in n for n in notes)


def test_a_zero_series_beside_a_drawn_one_is_named():
    rx = "transport.rx_size_in_bytes"
    rows = [("default", "default-0", rx, float(t), 1e6 * t) for t in range(5)]
    rows += [("default", "default-1", rx, float(t), 0.0) for t in range(5)]
    notes: list[str] = []
    [plot] = [p for p in telemetry_plots([_trial(0, _telemetry(rows))], notes) if p.key == "net-rx"]
    assert [t.name for t in plot.figure.data] == ["base · 00000000 · default/default-0"]
    # Two nodes: the zeros of one are not explained away as a lone node's.
    assert notes == ["Network received per node (transport): left out base · 00000000 · default/default-1 "
                     "(all zero)"]
