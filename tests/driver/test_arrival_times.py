"""The due times of arrival-rate schedules: even spacing, a Poisson process's mean rate, ramping stages, and the
worker shares adding up to the task's schedule."""

from __future__ import annotations

import numpy as np
import pytest

from bench.driver.arrival_times import due_offsets, times_at
from bench.track.arrival import ArrivalRate, Stage


def _constant(rate: float, seconds: float) -> list[tuple[float, float, float]]:
    return ArrivalRate(kind="constant-arrival-rate", rate=rate, pre_allocated_clients=1,
                       max_clients=1).segments(0.0, seconds)


def test_an_even_schedule_is_due_every_one_over_the_rate_from_the_start():
    t = np.array(list(due_offsets(_constant(1000.0, 2.0), "even", 1, [0])))
    assert len(t) == 2000 and t[0] == 0.0 and t[-1] < 2.0
    assert np.diff(t) == pytest.approx(np.full(1999, 0.001))


def test_the_workers_shares_of_an_even_schedule_interleave_into_the_tasks():
    segs = _constant(20_000.0, 1.0)
    # clients 0..63 dealt round-robin to two workers, as the coordinator does
    shares = [list(due_offsets(segs, "even", 64, range(w, 64, 2))) for w in (0, 1)]
    together = np.sort(np.concatenate(shares))
    assert len(together) == 20_000
    assert np.diff(together) == pytest.approx(np.full(19_999, 1 / 20_000))
    # each worker's own due times are evenly spaced too: not all due at one instant
    assert np.diff(shares[0]) == pytest.approx(np.full(9_999, 2 / 20_000))


def test_a_poisson_schedule_has_the_rate_on_average_and_exponential_gaps():
    t = np.array(list(due_offsets(_constant(2000.0, 10.0), "poisson", 4, [0, 1, 2, 3], seed="q")))
    assert len(t) == pytest.approx(20_000, rel=0.03)
    gaps = np.diff(t)
    assert gaps.mean() == pytest.approx(1 / 2000, rel=0.03)
    assert gaps.std() == pytest.approx(gaps.mean(), rel=0.05)  # exponential: std = mean; even spacing: 0
    # two workers' halves are independent processes at half the rate each
    half = np.array(list(due_offsets(_constant(2000.0, 10.0), "poisson", 4, [0, 2], seed="q")))
    other = np.array(list(due_offsets(_constant(2000.0, 10.0), "poisson", 4, [1, 3], seed="q")))
    assert len(half) == pytest.approx(10_000, rel=0.04) and len(other) == pytest.approx(10_000, rel=0.04)
    assert not np.array_equal(half[:100], other[:100])


def test_ramping_stages_move_the_rate_linearly_and_hold_it():
    ramp = ArrivalRate(kind="ramping-arrival-rate", start_rate=0.0, pre_allocated_clients=1, max_clients=1,
                       stages=[Stage(target=1000.0, duration=2.0), Stage(target=1000.0, duration=1.0),
                               Stage(target=0.0, duration=1.0)])
    t = np.array(list(due_offsets(ramp.segments(0.0, None), "even", 1, [0])))
    # iterations: 1000 (ramp up, half of 2 s at 1000/s) + 1000 (hold) + 500 (ramp down)
    assert len(t) == 2500
    assert t[0] == 0.0 and t[-1] < 4.0
    # in the ramp, N(t) = 250 t^2: the k-th is due at sqrt(k / 250)
    assert t[:1000] == pytest.approx(np.sqrt(np.arange(1000) / 250.0))
    counts, _ = np.histogram(t, bins=[0, 1, 2, 3, 4])
    assert list(counts) == [250, 750, 1000, 500]


def test_a_stage_at_rate_zero_sends_nothing_and_the_schedule_ends_with_the_last_stage():
    assert list(times_at([(5.0, 0.0, 0.0), (1.0, 10.0, 10.0)], iter([0.0, 5.0, 10.0]))) == [5.0, 5.5]
