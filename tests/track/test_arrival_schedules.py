"""The track loader reads arrival-rate schedules and refuses bad ones in one line naming the file, the task and the
field; a closed-loop task keeps Rally's schedule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main
from bench.driver.schedule import register_scheduler
from bench.track.info import schedule_rows
from bench.track.loader import load_track
from bench.util.errors import ConfigError, TrackError

SEARCH = {"name": "q", "operation-type": "search", "index": "logs", "body": {"query": {"match_all": {}}}}


def _track(root: Path, **task: object) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "track.json").write_text(json.dumps({"version": 2, "description": "d", "indices": [{"name": "logs"}],
                                                 "schedule": [{"operation": SEARCH, **task}]}))
    return root


def _task(root: Path, **task: object):
    return load_track(_track(root, **task), {}).challenges[0].tasks()[0]


def test_a_constant_arrival_rate_task_has_its_rate_per_second_and_max_clients(tmp_path):
    t = _task(tmp_path, schedule="constant-arrival-rate", rate=1200, **{
        "time-unit": "1m", "pre-allocated-clients": 4, "max-clients": 10, "time-period": 30})
    assert t.arrival is not None and t.arrival.rate == 20.0 and t.arrival.distribution == "even"
    assert (t.clients, t.arrival.pre_allocated_clients) == (10, 4)
    assert t.arrival.duration(0.0, t.time_period) == 30.0


def test_a_ramping_task_reads_its_stages_and_a_closed_loop_task_keeps_rallys_schedule(tmp_path):
    t = _task(tmp_path / "r", schedule="ramping-arrival-rate", distribution="poisson", **{
        "start-rate": 10, "pre-allocated-clients": 2,
        "stages": [{"target": 100, "duration": "30s"}, {"target": 0, "duration": 500}]})
    assert t.arrival is not None and t.arrival.distribution == "poisson" and t.clients == 2
    assert t.arrival.segments(0.0, None) == [(30.0, 10.0, 100.0), (500.0, 100.0, 0.0)]
    rally = _task(tmp_path / "c", clients=2, **{"target-throughput": 10, "time-period": 5})
    assert rally.arrival is None and rally.schedule is None
    # bench info: the rate and how long the stages run, not Rally's "1 it" and no target
    ch = load_track(tmp_path / "r", {}).challenges[0]
    assert schedule_rows(ch)[0][5:8] == ["-", "530 s of stages", "up to 100 it/s arriving"]


@pytest.mark.parametrize(("task", "field", "why"), [
    ({"schedule": "constant-arrival-rate", "pre-allocated-clients": 2, "time-period": 5}, "rate", "is required"),
    ({"schedule": "constant-arrival-rate", "rate": -5, "pre-allocated-clients": 2, "time-period": 5}, "rate",
     "must be a positive number, got -5"),
    ({"schedule": "constant-arrival-rate", "rate": 5, "time-period": 5}, "pre-allocated-clients", "is required"),
    ({"schedule": "constant-arrival-rate", "rate": 5, "pre-allocated-clients": 4, "max-clients": 2,
      "time-period": 5}, "max-clients", r"\(2\) must be at least pre-allocated-clients \(4\)"),
    ({"schedule": "constant-arrival-rate", "rate": 5, "pre-allocated-clients": 2}, "time-period", "is required"),
    ({"schedule": "constant-arrival-rate", "rate": 5, "pre-allocated-clients": 2, "time-period": 5,
      "distribution": "bursty"}, "distribution", "must be 'even' or 'poisson', got 'bursty'"),
    ({"schedule": "constant-arrival-rate", "rate": 5, "pre-allocated-clients": 2, "time-period": 5,
      "time-unit": "soon"}, "time-unit", "must be a positive duration"),
    ({"schedule": "constant-arrival-rate", "rate": 5, "pre-allocated-clients": 2, "time-period": 5,
      "target-throughput": 10}, "target-throughput", "does not apply to schedule 'constant-arrival-rate'"),
    ({"schedule": "ramping-arrival-rate", "pre-allocated-clients": 2, "stages": []}, "stages", "must be a non-empty list"),
    ({"schedule": "ramping-arrival-rate", "pre-allocated-clients": 2,
      "stages": [{"target": 5, "duration": "forever"}]}, r"stages\[0\].duration", "must be a positive duration"),
    ({"schedule": "ramping-arrival-rate", "pre-allocated-clients": 2,
      "stages": [{"target": "lots", "duration": 5}]}, r"stages\[0\].target", "must be a non-negative number"),
    ({"schedule": "ramping-arrival-rate", "pre-allocated-clients": 2, "time-period": 5,
      "stages": [{"target": 5, "duration": 5}]}, "time-period", "does not apply to schedule 'ramping-arrival-rate': its stages say how long"),
    ({"schedule": "ramping-arrival-rate", "pre-allocated-clients": 2, "stages": [{"target": 0, "duration": 5}]},
     "stages", "never rise above a rate of 0"),
    ({"clients": 2, "rate": 5, "time-period": 5}, "rate", "applies only to schedule constant-arrival-rate or "
     "ramping-arrival-rate"),
])
def test_a_bad_arrival_rate_parameter_is_one_line_naming_the_task_and_field(tmp_path, task, field, why):
    with pytest.raises(TrackError, match=rf"track\.json: schedule\[0\] \(task 'q'\): {field} {why}") as e:
        _task(tmp_path, **task)
    assert "\n" not in str(e.value)


def test_the_cli_refuses_a_bad_rate_in_one_line_and_a_non_zero_exit(tmp_path, capsys):
    track = _track(tmp_path, schedule="constant-arrival-rate", rate="fast", **{
        "pre-allocated-clients": 2, "time-period": 5})
    assert main(["race", f"--track-path={track}", "--target-hosts=127.0.0.1:1", "--pipeline=benchmark-only"]) != 0
    err = capsys.readouterr().err.strip()
    assert "(task 'q'): rate must be a positive number, got 'fast'" in err and "Traceback" not in err


def test_a_track_cannot_register_a_scheduler_under_an_arrival_rate_name():
    with pytest.raises(ConfigError, match="built into bench"):
        register_scheduler("constant-arrival-rate", lambda task, rate: None)  # type: ignore[arg-type,return-value]


def test_test_mode_keeps_the_rate_and_cuts_the_stages_to_ten_seconds(tmp_path):
    track = _track(tmp_path, schedule="ramping-arrival-rate", **{
        "pre-allocated-clients": 2, "warmup-time-period": 5,
        "stages": [{"target": 100, "duration": "8s"}, {"target": 100, "duration": "1m"}]})
    t = load_track(track, {}, test_mode=True).challenges[0].tasks()[0]
    assert t.arrival is not None and t.warmup_time_period == 0
    assert t.arrival.segments(0.0, None) == [(8.0, 0.0, 100.0), (2.0, 100.0, 100.0)]
