"""The live view's numbers per task: latency percentiles from the window's histograms against the exact ones, and
throughput/errors per second counted by when the samples completed, over settled seconds only."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.driver.live_window import TaskWindow, histogram, histogram_percentiles


def test_histogram_percentiles_are_within_one_percent_of_the_exact_nearest_rank_ones():
    rng = np.random.default_rng(7)
    # latencies over five decades: 50 µs .. 5 s, long-tailed
    lat = np.exp(rng.normal(np.log(0.004), 1.6, 200_000)).clip(5e-5, 5.0)
    got = histogram_percentiles(histogram(lat), (50.0, 90.0, 99.0, 99.9))
    for p, v in got.items():
        exact = float(np.percentile(lat, p, method="inverted_cdf"))
        assert v == pytest.approx(exact, rel=0.01), (p, v, exact)
    # a single value is itself (to the bin), not 0 and not the bin's edge far away
    assert histogram_percentiles(histogram([0.0123]))[99.0] == pytest.approx(0.0123, rel=0.01)


def test_the_window_counts_by_completion_time_and_only_settled_seconds():
    now = 1_000_000.7
    w = TaskWindow(started=now - 20)
    # 100 answers in each of the last 12 seconds, 10 of them failed, 50 docs each
    for sec in range(12):
        t0 = math.floor(now) - sec
        for i in range(100):
            w.add(t0 + i / 100, 0.010 + 0.0001 * i, i % 10 != 0, "docs", 50)
    v = w.view("bulk", now, planned=None, done=False)
    # the two settled seconds before floor(now) - 1: 200 requests, 10,000 docs, 20 errors over 2 s
    assert v.requests_per_s == pytest.approx(100) and v.rates == {"docs": pytest.approx(5000)}
    assert v.errors_per_s == pytest.approx(10) and v.errors == 120 and v.requests == 1200
    # the percentiles over the last 10 s: latencies 10.0 .. 19.9 ms, uniformly
    assert v.window_samples == 1000
    assert v.latency_ms is not None
    assert v.latency_ms[50.0] == pytest.approx(14.9, rel=0.01) and v.latency_ms[99.0] == pytest.approx(19.8, rel=0.01)


def test_no_answer_in_the_window_is_no_percentile_and_a_young_task_is_not_diluted():
    now = 2_000_000.5
    w = TaskWindow(started=now - 30)
    w.add(now - 25, 0.5, True, "ops", 1)  # long ago: out of every window
    v = w.view("q", now, planned=30, done=False)
    assert v.latency_ms is None and v.window_samples == 0 and v.requests_per_s == 0 and v.requests == 1
    # a task that began 1.5 s before the settled end: its rate is over the 1.5 s it ran, not over 2 s
    young = TaskWindow(started=math.floor(now) - 1 - 1.5)
    for i in range(150):
        young.add(young.started + i / 100, 0.001, True, "ops", 1)
    assert young.view("q", now, None, False).requests_per_s == pytest.approx(100)


def test_before_a_settled_second_the_rate_is_unknown_not_zero():
    now = 3_000_000.5
    w = TaskWindow(started=now - 0.4)
    w.add(now - 0.1, 0.01, True, "ops", 1)
    v = w.view("q", now, None, False)
    assert v.requests_per_s is None and v.errors_per_s is None and v.rates == {}
    assert v.latency_ms is not None and v.requests == 1  # what is known is shown


def test_a_done_task_counts_up_to_now_as_all_its_samples_are_in():
    now = 4_000_000.5
    w = TaskWindow(started=now - 10)
    w.add(now - 0.2, 0.01, True, "ops", 1)  # the last answer, in the second that is not settled yet
    assert w.view("sync", now, None, done=False).requests_per_s == 0
    assert w.view("sync", now, None, done=True).requests_per_s == pytest.approx(1 / 1.5)
