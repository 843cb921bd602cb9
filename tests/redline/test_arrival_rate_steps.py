"""A redline of an arrival-rate task steps its rate; no task is ever both an arrival rate and a closed-loop
target (the worker would run one and ignore the other)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bench.redline.objective import RedlineSpec
from bench.redline.step import step_task
from bench.track.arrival import ArrivalRate, Stage
from bench.track.model import Task

OP = {"name": "q", "operation-type": "search"}


def _ramping() -> Task:
    arrival = ArrivalRate(kind="ramping-arrival-rate", stages=[Stage(target=50, duration=10)],
                          pre_allocated_clients=4, max_clients=8, distribution="poisson")
    return Task(name="q", operation=OP, clients=8, schedule="ramping-arrival-rate", arrival=arrival)


def test_a_redline_step_of_an_arrival_rate_task_runs_it_at_the_steps_constant_rate():
    step = step_task(_ramping(), 400.0, 3, RedlineSpec(task="q", latency_ms=10, warmup_s=2, measure_s=5))
    assert step.arrival is not None and step.schedule == "constant-arrival-rate"
    assert (step.arrival.rate, step.arrival.max_clients, step.arrival.distribution) == (400.0, 8, "poisson")
    assert step.arrival.duration(step.warmup_time_period or 0, step.time_period) == 7.0
    assert step.target_throughput is None and step.ramp_up_time_period is None


def test_a_task_with_an_arrival_rate_and_a_target_throughput_is_refused():
    with pytest.raises(ValidationError, match="cannot run with target-throughput"):
        Task.model_validate({**_ramping().model_dump(by_alias=False), "target_throughput": 10.0})
