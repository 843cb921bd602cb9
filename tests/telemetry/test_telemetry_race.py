"""Telemetry in real races against real Elasticsearch: samples stored at the requested intervals for the
whole race, the summary's telemetry section, and a node killed mid-race (device errors counted, race stored)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from bench.cli import main
from bench.results.report import render_summary
from bench.trials.sqlite import TrialStore
from tests.faults.test_faults import RaceProcess, jvms_of, long_track, no_jvm_left, race, start_race  # noqa: F401

INTERVAL = 0.5


@pytest.mark.timeout(300)
def test_race_with_node_stats_and_host_samples_at_the_requested_interval(es_target):
    rc = main(["--quiet", "race", "--track=nginx", "--test-mode", "--challenge=index-only",
               f"--target-hosts={es_target}", "--telemetry=node-stats,host",
               f"--telemetry-params=node-stats-sample-interval:{INTERVAL},host-sample-interval:{INTERVAL}"])
    assert rc == 0
    with TrialStore() as store:
        [trial] = store.list_trials()
        tel = store.telemetry(trial.id)
        samples = store.samples(trial.id)
        summary = store.summary(trial.id)
    assert trial.status == "complete" and trial.options["telemetry"] == ["node-stats", "host"]
    race_start = samples["absolute_time"].min()
    race_end = (samples["absolute_time"] + samples["service_time"]).max()
    for device in ("node-stats", "host"):
        marks = tel[(tel["device"] == device) & (tel["metric"] == "_sample")].sort_values("timestamp")
        ts = marks["timestamp"].to_numpy()
        assert len(ts) >= 4 and (marks["value"] == 1).all(), device
        gaps = np.diff(ts[:-1])  # the last one is the sample at the end, taken whenever the race ended
        assert abs(float(np.median(gaps)) - INTERVAL) < 0.15 * INTERVAL, (device, gaps)
        # a fixed cadence: the n-th sample is due n intervals after the first, and is never early
        due = ts[0] + INTERVAL * np.round((ts[:-1] - ts[0]) / INTERVAL)
        assert (ts[:-1] - due > -0.05).all(), (device, ts - ts[0])
        assert ts[0] <= race_start + 1.0 and ts[-1] >= race_end - 0.01, device  # the whole race is covered
    node = tel[(tel["device"] == "node-stats") & (tel["node"] != "")]
    kept = set(node["metric"])
    for metric in ("indices.indexing.index_total", "indices.indexing.index_time_in_millis",
                   "indices.indexing.throttle_time_in_millis", "indices.refresh.total", "indices.flush.total",
                   "indices.merges.total", "indices.segments.count", "indices.translog.operations",
                   "indices.translog.size_in_bytes", "indices.store.size_in_bytes", "indices.docs.count",
                   "thread_pool.write.rejected", "thread_pool.search.queue", "breakers.parent.tripped",
                   "jvm.mem.heap_used_in_bytes", "jvm.mem.heap_max_in_bytes",
                   "jvm.gc.collectors.young.collection_count", "jvm.gc.collectors.old.collection_time_in_millis",
                   "process.cpu.percent", "os.cpu.percent", "os.mem.used_in_bytes",
                   "transport.rx_size_in_bytes", "http.tx_size_in_bytes",
                   "indexing_pressure.memory.total.coordinating_rejections"):
        assert metric in kept, metric
    docs = node[node["metric"] == "indices.indexing.index_total"].sort_values("timestamp")["value"]
    assert docs.iloc[-1] - docs.iloc[0] >= 1000  # test mode indexes 1,000 docs, seen while they arrive
    host = tel[tel["device"] == "host"]
    assert {"cpu.percent", "memory.used_bytes", "disk.write_bytes"} <= set(host["metric"])
    assert {"main", "worker-0", "all"} <= set(host[host["cluster"] == "driver"]["node"])

    t = summary.telemetry
    assert {(d["device"], d["failed"]) for d in t["devices"]} == {("node-stats", 0), ("host", 0)}
    [n] = t["nodes"]
    assert n["peak_heap_bytes"] > 0 and n["cpu_max"] is not None and n["refresh_count"] is not None
    assert t["driver"]["workers"] == 1 and t["driver"]["median"] is not None
    text = render_summary(summary)
    assert "Median CPU usage (node-stats)" in text and "Telemetry samples" in text and "Peak heap used" in text


@pytest.mark.timeout(420)
def test_node_killed_mid_race_counts_device_errors_and_stores_the_race(tmp_path: Path, long_track: Path,  # noqa: F811
                                                                        race: list[RaceProcess]) -> None:  # noqa: F811
    home = tmp_path / "bench-home-telemetry-death"
    r = start_race(race, home, f"--track-path={long_track}", "--car=defaults,512mheap",
                   "--telemetry=node-stats,host", "--telemetry-params=node-stats-sample-interval:0.5")
    trial_id = r.wait_trial()
    r.wait_measuring()
    time.sleep(1.5)  # a few good samples first
    [server] = [p for p in jvms_of(trial_id) if "org.elasticsearch.bootstrap.Elasticsearch" in " ".join(p.cmdline())]
    server.kill()
    rc = r.wait_exit(90)
    assert rc not in (0, 130)
    with TrialStore(home / "bench.db") as store:
        trial = store.get_trial(trial_id)
        tel = store.telemetry(trial_id)
        summary = store.summary(trial_id)
    assert trial.status == "failed" and "died" in (trial.error or "")
    marks = tel[(tel["device"] == "node-stats") & (tel["metric"] == "_sample")]
    assert (marks["value"] == 1).sum() >= 2 and (marks["value"] == 0).sum() >= 1
    failed = marks[marks["value"] == 0]
    assert all(isinstance(raw, dict) and raw.get("error") for raw in failed["raw"])
    # the host device kept sampling (it does not need the node), and the node's process rows were there
    assert (tel[(tel["device"] == "host") & (tel["metric"] == "_sample")]["value"] == 1).sum() >= 2
    assert "default-0" in set(tel[(tel["device"] == "host") & (tel["cluster"] == "default")]["node"])
    assert summary is not None
    counts = {d["device"]: d for d in summary.telemetry["devices"]}
    assert counts["node-stats"]["failed"] >= 1 and counts["node-stats"]["samples"] == len(marks)
    assert any("Telemetry node-stats on default" in n and "failed" in n for n in summary.notes)
    assert "Traceback" not in r.stderr
    no_jvm_left(trial_id)
