"""The load driver says when it limited a race itself, without --telemetry=host: 2,000 search clients on one
worker process saturate its event loop, and the race output, the stored trial, the reports and JSON say so; a
lightly loaded worker says nothing."""

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
from tests.test_race import only_trial, race, write_track

pytestmark = pytest.mark.timeout(240)


def _search_track(tmp_path, clients: int, **task: object):
    index = f"saturation-{tmp_path.name.lower()}"
    return write_track(tmp_path / "t", [
        {"operation": {"name": "delete", "operation-type": "delete-index"}},
        {"operation": {"name": "create", "operation-type": "create-index"}},
        {"operation": {"name": "search", "operation-type": "search", "index": index,
                       "body": {"query": {"match_all": {}}}}, "clients": clients, **task},
        {"operation": {"name": "clean", "operation-type": "delete-index"}}], indices=[{"name": index}])


def test_two_thousand_search_clients_on_one_worker_are_reported_as_driver_saturation(tmp_path, es_target, capsys):
    track = _search_track(tmp_path, 2000, **{"time-period": 4})
    report = tmp_path / "r.json"
    rc = race(f"--track-path={track}", f"--target-hosts={es_target}", "--worker-processes=1", "--report-format=json",
              f"--report-file={report}")
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "Load driver saturated: bench-worker-0 ran 2000 client(s) of 'search'" in out
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
    assert rebuilt is not None and sum("Load driver saturated" in n for n in rebuilt.notes) == 1
    data = json.loads(report.read_text())
    assert any("Load driver saturated" in n for n in data["notes"])
    assert any(r["metric"] == "Driver saturated: loop CPU" for r in data["rows"])
    # bench show prints it too.
    from bench.cli import main

    assert main(["show", trial.id]) == 0
    assert "Load driver saturated" in capsys.readouterr().out


def test_eight_search_clients_are_not_called_saturated(tmp_path, es_target, capsys):
    track = _search_track(tmp_path, 8, **{"time-period": 3})
    assert race(f"--track-path={track}", f"--target-hosts={es_target}") == 0
    assert "Load driver saturated" not in capsys.readouterr().out
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
    assert "95 % of a core" in notes[0] and "'bulk'" in notes[0] and "64 client(s)" in notes[0]
    assert "120 ms late at the median, 300 ms at p99" in notes[1]
    assert driver_loop_section(pd.DataFrame(columns=["device"])) is None
