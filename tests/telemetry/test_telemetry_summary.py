"""The telemetry section of the summary, from stored rows: counters as deltas, gauges as median/max, the
driver CPU warning, failure counts, and how the report renders it (table and json)."""

from __future__ import annotations

import json
import uuid

import pandas as pd

from bench.results.report import render_summary
from bench.results.summary import Summary
from bench.telemetry import attach_telemetry
from bench.telemetry.section import MB, summarize_telemetry
from bench.trials.sqlite import TelemetryRow, TrialStore


def _frame(rows: list[TelemetryRow]) -> pd.DataFrame:
    trial = uuid.uuid4().hex
    with TrialStore() as store:
        store.add_telemetry(trial, rows)
        return store.telemetry(trial)


def _node_rows(ts: float, cpu: float, young: float, refresh: float, write_kb: float, heap: float,
               rejected: float) -> list[TelemetryRow]:
    values = {"process.cpu.percent": cpu, "jvm.gc.collectors.young.collection_count": young,
              "jvm.gc.collectors.young.collection_time_in_millis": young * 10,
              "jvm.gc.collectors.old.collection_count": 0, "jvm.gc.collectors.old.collection_time_in_millis": 0,
              "indices.refresh.total": refresh, "indices.refresh.total_time_in_millis": refresh * 100,
              "fs.io_stats.total.write_kilobytes": write_kb, "fs.io_stats.total.read_kilobytes": 0,
              "jvm.mem.heap_used_in_bytes": heap, "thread_pool.write.rejected": rejected,
              "transport.rx_size_in_bytes": ts * 1000, "http.rx_size_in_bytes": ts * 10,
              "transport.tx_size_in_bytes": 0, "http.tx_size_in_bytes": ts}
    rows = [TelemetryRow(ts, "default", "default-0", "node-stats", m, v) for m, v in values.items()]
    return rows + [TelemetryRow(ts, "default", "", "node-stats", "_sample", 1.0, {"nodes": {}})]


def test_node_counters_are_deltas_and_gauges_median_max():
    rows = _node_rows(0, 10, 5, 100, 1000, 100e6, 0) + _node_rows(1, 30, 7, 104, 3048, 300e6, 2) \
        + _node_rows(2, 20, 9, 110, 5096, 200e6, 3)
    rows.append(TelemetryRow(3, "default", "", "node-stats", "_sample", 0.0, {"error": "connection refused"}))
    s = summarize_telemetry(_frame(rows))
    [n] = s.nodes
    assert (n.cpu_median, n.cpu_max) == (20, 30)
    assert (n.gc_young_count, n.gc_young_time_ms, n.gc_old_count) == (4, 40, 0)
    assert (n.refresh_count, n.refresh_time_ms) == (10, 1000)
    assert n.device_write_bytes == 4096 * 1024 and n.device_read_bytes == 0
    assert n.transport_rx_bytes == 2 * 1000 and n.http_rx_bytes == 2 * 10
    assert n.transport_tx_bytes == 0 and n.http_tx_bytes == 2
    assert n.write_rejections == 3 and n.peak_heap_bytes == 300e6
    assert n.merge_count is None  # not sampled: absent, not 0
    [c] = s.devices
    assert (c.device, c.samples, c.failed, c.first_error) == ("node-stats", 4, 1, "connection refused")
    assert any("1 of 4 samples failed" in note and "connection refused" in note for note in s.notes)


def _driver_rows(ts: float, worker_cpu: list[float]) -> list[TelemetryRow]:
    rows = [TelemetryRow(ts, "driver", "main", "host", "process.cpu.percent", 5.0)]
    rows += [TelemetryRow(ts, "driver", f"worker-{i}", "host", "process.cpu.percent", c)
             for i, c in enumerate(worker_cpu)]
    rows.append(TelemetryRow(ts, "driver", "all", "host", "process.cpu.percent", 5.0 + sum(worker_cpu)))
    return rows + [TelemetryRow(ts, "host", "", "host", "_sample", 1.0)]


def test_driver_cpu_and_saturation_warning():
    calm = summarize_telemetry(_frame([r for t in range(5) for r in _driver_rows(t, [40.0, 50.0])]))
    assert calm.driver is not None and calm.driver.workers == 2 and calm.driver.median == 95
    assert calm.driver.worker_median == {"worker-0": 40, "worker-1": 50}
    assert not any("bottleneck" in n for n in calm.notes)
    busy = summarize_telemetry(_frame([r for t in range(5) for r in _driver_rows(t, [95.0, 50.0])]))
    [note] = [n for n in busy.notes if "bottleneck" in n]
    assert "worker-0: 95%" in note and "worker-1" not in note


def test_ccr_lag_percentiles_and_exceptions():
    rows = []
    for t, (lag, secs, failed) in enumerate([(0, 0.0, 1), (100, 1.0, 1), (300, 2.5, 3), (0, 0.0, 4)]):
        for m, v in (("lag_ops", lag), ("lag_seconds", secs), ("failed_read_requests", failed),
                     ("failed_write_requests", 0), ("read_exceptions", 1 if t == 2 else 0)):
            rows.append(TelemetryRow(t, "follower", "logs", "ccr-stats", m, v))
        rows.append(TelemetryRow(t, "follower", "logs[0]", "ccr-stats", "lag_ops", lag))  # shard rows: ignored
        rows.append(TelemetryRow(t, "follower", "", "ccr-stats", "_sample", 1.0))
    rows.append(TelemetryRow(4, "follower", "logs", "ccr-stats", "missing", 1.0))
    rows.append(TelemetryRow(4, "follower", "", "ccr-stats", "_error", 1.0, {"error": "follower logs is absent"}))
    s = summarize_telemetry(_frame(rows))
    [f] = s.followers
    assert (f.index, f.lag_ops_median, f.lag_ops_max, f.lag_s_max) == ("logs", 50, 300, 2.5)
    assert 290 < f.lag_ops_p99 <= 300
    assert (f.failed_read_requests, f.read_exceptions, f.missing_samples) == (3, 1, 1)
    [c] = s.devices
    assert c.errors == 1 and "absent" in (c.first_error or "")


def test_report_shows_telemetry_section_in_every_format():
    rows = _node_rows(0, 10, 5, 100, 1000, 100e6, 0) + _node_rows(1, 30, 7, 104, 3048, 300e6, 2)
    rows += [r for t in range(2) for r in _driver_rows(t, [90.0])]
    summary = attach_telemetry(Summary(), _frame(rows))
    assert summary is not None and summary.telemetry
    assert any("bottleneck" in n for n in summary.notes)
    table = render_summary(summary, "table")
    assert "Median CPU usage (node-stats)" in table and "default/default-0" in table
    assert "Young GC count" in table and "Peak heap used" in table and "Median driver CPU" in table
    assert "[WARNING] The load driver used more than 80% of a core" in table
    data = json.loads(render_summary(summary, "json"))
    assert {"metric": "Write thread pool rejections", "task": "default/default-0", "value": 2.0, "unit": ""} \
        in data["rows"]
    # a stored summary round-trips (bench show renders it the same)
    assert render_summary(Summary.model_validate_json(summary.model_dump_json()), "table") == table
    assert attach_telemetry(None, _frame([])[0:0]) is None


def _pair_rows(ts: float, node: str, *, process_write: float, http: bool) -> list[TelemetryRow]:
    """A node of a leader/follower pair on one disk: the same device counters, its own process IO."""
    cluster = node.split("-")[0]
    values = {"fs.io_stats.total.write_kilobytes": 1000 * ts, "fs.io_stats.total.read_kilobytes": 10 * ts,
              "transport.rx_size_in_bytes": 500 * ts, "transport.tx_size_in_bytes": 700 * ts}
    if http:
        values |= {"http.rx_size_in_bytes": 9000 * ts, "http.tx_size_in_bytes": 100 * ts}
    rows = [TelemetryRow(ts, cluster, node, "node-stats", m, v) for m, v in values.items()]
    rows += [TelemetryRow(ts, cluster, node, "host", "process.write_bytes", process_write * ts),
             TelemetryRow(ts, cluster, node, "host", "process.read_bytes", 0.0)]
    return rows + [TelemetryRow(ts, cluster, "", "node-stats", "_sample", 1.0, {"nodes": {}}),
                   TelemetryRow(ts, "host", "", "host", "_sample", 1.0)]


def test_disk_io_per_node_process_and_device_wide_and_network_transport_and_http_apart():
    rows = [r for ts in (0, 2) for r in _pair_rows(ts, "leader-0", process_write=3 * MB, http=True)
            + _pair_rows(ts, "follower-0", process_write=MB, http=False)]
    s = summarize_telemetry(_frame(rows))
    leader, follower = s.nodes
    assert (leader.process_write_bytes, follower.process_write_bytes) == (6 * MB, 2 * MB)
    assert leader.device_write_bytes == follower.device_write_bytes == 2000 * 1024  # one disk, both see it all
    assert (leader.transport_rx_bytes, leader.http_rx_bytes, leader.http_tx_bytes) == (1000, 18000, 200)
    assert follower.transport_tx_bytes == 1400 and follower.http_rx_bytes is None  # not counted: absent, not 0
    [note] = [n for n in s.notes if "HTTP" in n]
    assert "follower/follower-0" in note and "leader/leader-0" not in note
    rows = {(r.metric, r.task): r.value for r in attach_telemetry(Summary(), _frame(rows)).rows()}
    assert rows[("Disk write (node processes)", "leader/leader-0")] == 6
    assert rows[("Disk write (node processes)", "follower/follower-0")] == 2
    assert rows[("Disk write (device-wide, all processes)", "follower/follower-0")] == 2000 / 1024
    assert rows[("Network rx (HTTP)", "leader/leader-0")] == 18000 / MB
    assert ("Network rx (HTTP)", "follower/follower-0") not in rows
    assert ("Network rx (transport)", "follower/follower-0") in rows
    assert not any(metric in ("Disk read", "Disk write", "Network rx", "Network tx") for metric, _ in rows)


def test_a_node_without_its_processes_says_why_it_has_no_process_io():
    rows = [r for ts in (0, 1) for r in _pair_rows(ts, "leader-0", process_write=MB, http=True)
            if r.device != "host" or r.metric == "_sample"]
    s = summarize_telemetry(_frame(rows))
    assert s.nodes[0].process_write_bytes is None
    assert any("Disk read/write (node processes) is not reported for leader/leader-0" in n for n in s.notes)


def test_summaries_stored_before_keep_their_disk_and_network_rows():
    old = {"nodes": [{"cluster": "default", "node": "default-0", "disk_write_bytes": 2 * MB, "net_rx_bytes": MB}]}
    rows = {(r.metric, r.task): r.value for r in Summary(sections={"telemetry": old}).rows()}
    assert rows[("Disk write", "default/default-0")] == 2 and rows[("Network rx", "default/default-0")] == 1
