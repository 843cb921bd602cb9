"""The load driver says when it limited a race itself, without --telemetry=host: 2,000 search clients on one
worker process, whose loop is busy or late, are noted in the race output, the stored trial, the reports and JSON;
a lightly loaded worker says nothing."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from bench.driver.loop_load import DEVICE, LoopLoad, rows
from bench.results.driver_loop import (
    BUSY_CPU_SHARE,
    LATE_MS,
    SECTION,
    STALL_P99_MS,
    busy_notes,
    driver_loop_section,
)
from bench.trials.sqlite import TrialStore
from bench.trials.summary import stored_summary
from benchmarks.nullsink import free_port, start_in_background
from tests.race.test_race import only_trial, race, write_track

pytestmark = pytest.mark.timeout(240)


def _search_track(tmp_path, clients: int, body: dict | None = None, **task: object):
    index = f"saturation-{tmp_path.name.lower()}"
    return write_track(tmp_path / "t", [
        {"operation": {"name": "delete", "operation-type": "delete-index"}},
        {"operation": {"name": "create", "operation-type": "create-index"}},
        {"operation": {"name": "search", "operation-type": "search", "index": index,
                       "body": body or {"query": {"match_all": {}}}}, "clients": clients, **task},
        {"operation": {"name": "clean", "operation-type": "delete-index"}}], indices=[{"name": index}])


@pytest.fixture(scope="module")
def sink():
    port = free_port()
    procs = start_in_background(port, 2)
    yield f"127.0.0.1:{port}"
    for p in procs:
        p.terminate()
        p.join(10)


def test_two_thousand_search_clients_on_one_worker_are_reported_as_driver_saturation(tmp_path, sink, capsys):
    # Each request's body is encoded by the driver (~100 kB of terms) and the sink answers at once: the worker's
    # loop, not the target, sets the pace, whatever else runs on the machine.
    body = {"query": {"terms": {"tag": [f"t{i:06d}" for i in range(10_000)]}}}
    track = _search_track(tmp_path, 2000, body, **{"time-period": 4})
    report = tmp_path / "r.json"
    rc = race(f"--track-path={track}", f"--target-hosts={sink}", "--worker-processes=1", "--report-format=json",
              f"--report-file={report}")
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "Load driver saturated: bench-worker-0 ran 2000 client(s) of 'search'" in out or \
        "Load driver late: bench-worker-0 ran 2000 client(s) of 'search'" in out
    with TrialStore() as store:
        trial = only_trial(store)
        stored = store.summary(trial.id)
        assert stored is not None
        section = stored.section(SECTION)
        assert section["busy"] and section["busy"][0]["clients"] == 2000
        busy = section["busy"][0]
        assert busy["cpu_share"] > BUSY_CPU_SHARE or busy["lag_p50_ms"] > LATE_MS or busy["lag_p99_ms"] > STALL_P99_MS
        # The stored rows themselves, and a summary rebuilt from them, say the same.
        telemetry = store.telemetry(trial.id)
        assert set(telemetry[telemetry["device"] == DEVICE]["metric"]) >= {"cpu_share", "lag_p50_ms"}
        rebuilt = stored_summary(store, trial.id)
    assert rebuilt is not None and sum(n.startswith("Load driver ") for n in rebuilt.notes) == 1
    data = json.loads(report.read_text())
    assert any(n.startswith("Load driver ") for n in data["notes"])
    assert any(r["metric"] == "Driver saturated: loop CPU" for r in data["rows"])
    # bench show prints it too.
    from bench.cli import main

    assert main(["show", trial.id]) == 0
    assert "the load driver's, not the cluster's" in capsys.readouterr().out


def test_one_paced_client_is_not_called_saturated(tmp_path, sink, capsys):
    track = _search_track(tmp_path, 1, **{"time-period": 2, "target-throughput": 20})
    assert race(f"--track-path={track}", f"--target-hosts={sink}") == 0
    out = capsys.readouterr().out
    assert "Load driver " not in out and "behind its schedule" not in out
    with TrialStore() as store:
        summary = store.summary(only_trial(store).id)
    assert summary is not None and summary.section(SECTION)["busy"] == []
    assert summary.section(SECTION)["max_cpu_share"] < BUSY_CPU_SHARE


def _frame(loads: list[tuple[int, int, LoopLoad]]) -> pd.DataFrame:
    out = [r for wid, step, load in loads for r in rows(wid, step, load, now=1.0)]
    return pd.DataFrame([r._asdict() for r in out])


def test_busy_and_late_loops_are_judged_per_worker_step_and_short_steps_not_at_all() -> None:
    busy = LoopLoad(seconds=10, cpu_seconds=9.5, lag_p50_ms=3, lag_p99_ms=9, lag_max_ms=12, clients=64,
                    tasks=("bulk",))
    late = LoopLoad(seconds=10, cpu_seconds=2, lag_p50_ms=120, lag_p99_ms=300, lag_max_ms=400, clients=8,
                    tasks=("search",))
    idle = LoopLoad(seconds=10, cpu_seconds=1, lag_p50_ms=0.2, lag_p99_ms=1, lag_max_ms=2, clients=1,
                    tasks=("search",))
    short = LoopLoad(seconds=0.2, cpu_seconds=0.2, lag_p50_ms=200, lag_p99_ms=200, lag_max_ms=200, clients=1,
                     tasks=("create",))
    section = driver_loop_section(_frame([(0, 0, short), (0, 1, busy), (1, 1, idle), (0, 2, late)]))
    assert section is not None
    assert [(b.worker, b.step) for b in section.busy] == [("bench-worker-0", 1), ("bench-worker-0", 2)]
    assert section.max_cpu_share == pytest.approx(0.95)
    notes = busy_notes(section)
    assert notes[0].startswith("Load driver saturated: bench-worker-0 ran 64 client(s) of 'bulk' with its event "
                               "loop using 95 % of a core")
    assert notes[1].startswith("Load driver late: bench-worker-0 ran 8 client(s) of 'search' and its event loop ran "
                               "120 ms late at the median, 300 ms at p99 while using only 20 % of a core")
    assert driver_loop_section(pd.DataFrame(columns=["device"])) is None


STALLING_RUNNER = '''
import time

calls = [0]


async def stall_the_loop(es, params):
    # every 50th call blocks the worker's event loop for 60 ms, as a CPU-bound runner or a long pause would
    calls[0] += 1
    if calls[0] % 50 == 0:
        time.sleep(0.06)
    return {"weight": 1, "unit": "ops"}


def register(registry):
    registry.register_runner("stall-the-loop", stall_the_loop, async_runner=True)
'''


def test_a_paced_task_the_driver_held_up_says_how_far_behind_schedule_it_fell(tmp_path, sink, capsys):
    track = write_track(tmp_path / "t", [
        {"operation": {"name": "paced", "operation-type": "stall-the-loop"}, "clients": 4, "target-throughput": 200,
         "warmup-time-period": 0.5, "time-period": 4}])
    (track / "track.py").write_text(STALLING_RUNNER)
    assert race(f"--track-path={track}", f"--target-hosts={sink}") == 0
    out = capsys.readouterr().out
    with TrialStore() as store:
        summary = store.summary(only_trial(store).id)
    assert summary is not None
    [task] = summary.tasks
    # requests due while the loop was blocked were sent up to its 60 ms late
    assert 10 < task.schedule_lag[99.0] <= task.schedule_lag[100.0] < 200, task.schedule_lag
    assert "Task 'paced' fell behind its schedule: requests were sent" in out
    assert "Load driver behind schedule: task 'paced' sent requests" in out and "that wait is the load driver's" in out
    rows = {r.metric for r in summary.rows() if r.task == "paced"}
    assert {"99th percentile schedule lag", "100th percentile schedule lag"} <= rows


def test_schedule_lag_is_judged_the_drivers_only_when_its_loop_was_as_late() -> None:
    from bench.results.driver_loop import DriverLoopSection, schedule_notes
    from bench.results.summary import TaskSummary, behind_schedule_note

    late = TaskSummary(task="q", operation_type="search", unit="ops", schedule_lag={50.0: 2, 90.0: 30, 99.0: 80,
                                                                                     100.0: 95},
                       service_time={99.0: 900.0})
    on_time = late.model_copy(update={"schedule_lag": {50.0: 1, 90.0: 2, 99.0: 9, 100.0: 40}})
    assert behind_schedule_note(on_time) is None and schedule_notes(DriverLoopSection(max_lag_p99_ms=70), [on_time]) == []
    assert behind_schedule_note(late) == ("Task 'q' fell behind its schedule: requests were sent 2.0 ms (median), "
                                          "80.0 ms (p99) and up to 95.0 ms after they were due; its latency includes "
                                          "that wait, its service time does not.")
    [driver] = schedule_notes(DriverLoopSection(max_lag_p99_ms=45, max_cpu_share=0.4), [late])
    assert driver.startswith("Load driver behind schedule: task 'q' sent requests 80.0 ms late at p99 and the "
                             "driver's event loop ran 45 ms late at p99 (busiest worker 40 % of a core)")
    [cluster] = schedule_notes(DriverLoopSection(max_lag_p99_ms=3, max_cpu_share=0.1), [late])
    assert cluster.startswith("Task 'q' fell behind its schedule because of the answers, not the load driver (its "
                              "event loop ran 3.0 ms late at p99; service time p99 900.0 ms)")
