"""The lag over time, window by window (bench/telemetry/over_time.py): pure, against numpy on the same values."""

from __future__ import annotations

import numpy as np
import pytest

from bench.telemetry.over_time import HOUR, basis, windows


def test_a_short_run_gets_ten_intervals_with_numpys_percentiles() -> None:
    t0 = 1_700_000_000.0
    known = [(t0 + i, float(i % 17)) for i in range(0, 600)]  # 10 minutes, one sample a second
    unknown = [t0 + 30.5, t0 + 31.5]  # e.g. a paused follower: in the first interval (0-60 s)
    ws = windows(known, unknown)
    assert len(ws) == 10 and basis(ws) == "per interval of 0:01:00"
    assert [w.samples for w in ws] == [60] * 10 and [w.unknown for w in ws] == [2] + [0] * 9
    second = [v for t, v in known if 59.9 <= t - t0 < 119.8]
    assert ws[1].p90 == pytest.approx(float(np.percentile(second, 90)))
    assert ws[1].p99 == pytest.approx(float(np.percentile(second, 99)))
    assert ws[1].max == max(second) and ws[1].start_s == pytest.approx(59.9)
    assert ws[-1].end_s == pytest.approx(599.0)


def test_two_hours_or_more_get_one_window_per_hour() -> None:
    known = [(float(t), 1.0 + t / HOUR) for t in range(0, int(2.5 * HOUR), 5)]
    ws = windows(known)
    assert [(w.start_s, w.end_s) for w in ws] == [(0, HOUR), (HOUR, 2 * HOUR), (2 * HOUR, 2.5 * HOUR - 5)]
    assert basis(ws) == "per hour"
    assert ws[2].max == pytest.approx(1.0 + (2.5 * HOUR - 5) / HOUR)  # the lag grew: the last hour shows it
    assert ws[0].p50 < ws[1].p50 < ws[2].p50
    # Just under two hours: still ten intervals.
    assert len(windows([(0.0, 1.0), (2 * HOUR - 1, 1.0)])) == 10


def test_a_window_without_a_known_lag_has_no_number() -> None:
    ws = windows([(0.0, 3.0), (100.0, 4.0)], unknown=[45.0])
    assert ws[4].samples == 0 and ws[4].unknown == 1 and ws[4].p99 is None and ws[4].max is None
    assert ws[2].samples == 0 and ws[2].unknown == 0 and ws[2].p50 is None  # no sample at all: telemetry stopped
    assert windows([]) == []
    [one] = windows([(5.0, 2.0)])
    assert (one.samples, one.p50, one.max) == (1, 2.0, 2.0)
