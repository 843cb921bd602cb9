"""OpenSearch Benchmark's ramp-down-time-period: clients stop one after another after the time period, as OSB's
TimePeriodBased loop control stops them (client i of n at (i + 1) / n of the ramp-down), and OSB's load-time rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main
from bench.track.loader import load_track
from bench.track.model import Operation, Task
from bench.trials.sqlite import TrialStore
from bench.util.errors import TrackError


def _workload(root: Path, task: dict) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "workload.json").write_text(json.dumps({
        "version": 2, "description": "ramp-down", "indices": [], "corpora": [],
        "test_procedures": [{"name": "p", "default": True, "schedule": [task]}]}))
    return root


NAP = {"name": "nap", "operation-type": "sleep", "duration": 0.05}


def test_stop_delays_follow_osb():
    # OSB: base = warmup + time-period + ramp-down; client i stops ramp-down * (n - 1 - i) / n before it.
    t = Task(name="t", operation=Operation(name="o", operation_type="sleep"), clients=4, time_period=10,
             ramp_down_time_period=2)
    assert [t.stop_delay(i) for i in range(4)] == [0.5, 1.0, 1.5, 2.0]
    assert Task(name="t", operation=Operation(name="o", operation_type="sleep"), time_period=1).stop_delay(0) == 0


@pytest.mark.parametrize("task, message", [
    ({"ramp-down-time-period": 1, "iterations": 3}, "cannot be mixed with iterations"),
    ({"ramp-down-time-period": 1}, "needs a time-period"),
    ({"ramp-down-time-period": 5, "time-period": 2}, r"time-period \(2 s\) must be at least the ramp-down"),
])
def test_bad_ramp_down_is_refused_at_load(tmp_path, task, message):
    root = _workload(tmp_path / "w", {"operation": NAP, **task})
    with pytest.raises(TrackError, match=message):
        load_track(root, {}, offline=True)


def test_clients_stop_one_after_another(tmp_path, es_target):
    root = _workload(tmp_path / "w", {"operation": NAP, "clients": 4, "time-period": 2,
                                      "ramp-down-time-period": 2})
    assert main(["--quiet", "race", f"--workload-path={root}", f"--target-hosts={es_target}"]) == 0
    with TrialStore() as store:
        trial = store.list_trials()[0]
        df = store.samples(trial.id)
    first, last = df["absolute_time"].min(), df.groupby("client_id")["absolute_time"].max().sort_index()
    # Client i's last request starts before 2 s + 2 s * (i + 1) / 4 and less than one request (0.05 s) earlier.
    ends = (last - first).to_numpy()
    assert abs(ends - [2.5, 3.0, 3.5, 4.0]).max() < 0.12, ends
    assert not df["warmup"].any()  # OSB measures the ramp-down
