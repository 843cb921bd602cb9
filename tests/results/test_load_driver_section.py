"""The "load-driver" summary section: a trial's stored per-node rows of a Ray load driver become report rows;
a trial driven by local workers has no such section."""

from __future__ import annotations

import time
from pathlib import Path

from bench.driver.samples import RequestSample, TelemetryRow
from bench.ray.section import SECTION, load_driver_rows
from bench.results.report import render_summary
from bench.trials.sqlite import TrialInfo, TrialStore, new_trial_id, utcnow
from bench.trials.summary import summarize_stored

NODES = ("Ray node 10.0.0.5 (aaaaaaaa)", "Ray node 10.0.0.6 (bbbbbbbb)")


def _trial(store: TrialStore, rows: list[TelemetryRow]) -> str:
    tid = new_trial_id()
    store.create_trial(TrialInfo(id=tid, track="t", challenge="c", start_time=utcnow()))
    store.add_samples(tid, [RequestSample("load", "load", "bulk", 0, 1000.0 + i, float(i), 0.02, 0.015, 500, "docs",
                                          1000, True, None, False, 0, 100, 200) for i in range(20)])
    store.add_telemetry(tid, rows)
    return tid


def test_each_ray_node_is_a_set_of_report_rows(tmp_path: Path) -> None:
    now = time.time()
    rows = [TelemetryRow(now, "driver", NODES[0], "load-driver", "workers", 2.0),
            TelemetryRow(now, "driver", NODES[0], "load-driver", "clock_offset_ms", 0.0),
            TelemetryRow(now, "driver", NODES[0], "load-driver", "cpu_cores_per_worker", 0.93),
            TelemetryRow(now, "driver", NODES[1], "load-driver", "workers", 1.0),
            TelemetryRow(now, "driver", NODES[1], "load-driver", "clock_offset_ms", -1.25),
            TelemetryRow(now, "driver", NODES[1], "load-driver", "cpu_cores_per_worker", 0.41),
            TelemetryRow(now, "driver", NODES[1], "load-driver", "corpus_prepare_s", 3.5)]
    with TrialStore(tmp_path / "bench.db") as store:
        summary = summarize_stored(store, _trial(store, rows))
        plain = summarize_stored(store, _trial(store, []))
    assert summary is not None and plain is not None
    assert SECTION not in plain.sections  # local workers: nothing to list
    section = summary.section(SECTION)
    assert section
    got = {(r.metric, r.task): r.value for r in load_driver_rows(section)}
    # One node per machine: the rows name the machine (a node's id changes with every `ray start`).
    a, b = "Ray node 10.0.0.5", "Ray node 10.0.0.6"
    assert got[("Load-driver workers", a)] == 2 and got[("Load-driver workers", b)] == 1
    assert got[("Driver CPU per worker (Ray node, 100% = 1 core)", a)] == 93.0
    assert got[("Load-driver clock offset", b)] == -1.25
    assert got[("Load-driver corpus preparation", b)] == 3.5
    assert ("Load-driver corpus preparation", a) not in got  # not measured there: absent, not zero
    text = render_summary(summary, "markdown")
    assert "Load-driver corpus preparation" in text and b in text


def test_two_nodes_of_one_machine_keep_their_ids() -> None:
    section = {"nodes": [{"node": "Ray node 127.0.0.1 (aaaaaaaa)", "workers": 1},
                         {"node": "Ray node 127.0.0.1 (bbbbbbbb)", "workers": 1}]}
    assert sorted(r.task for r in load_driver_rows(section)) == ["Ray node 127.0.0.1 (aaaaaaaa)",
                                                                 "Ray node 127.0.0.1 (bbbbbbbb)"]
