"""A gauge over time, window by window: how a long race's follower lag moved, not only its percentiles over the
whole run (a lag that grows hour by hour has a fine median and a p99 that says nothing of when).

Runs of two hours or more get one window per hour (the last one may be shorter); shorter runs ten equal
intervals. Each window says how many samples had a known value and how many did not (a paused or unreadable
follower): its percentiles are over the known ones, and a window without any has none -- never a zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

HOUR = 3600.0
HOURLY_FROM = 2 * HOUR  # runs at least this long get hourly windows
INTERVALS = 10  # windows of a shorter run
PERCENTILES = (50.0, 90.0, 99.0)


class Window(BaseModel):
    """One window, in seconds since the first sample."""

    start_s: float
    end_s: float
    samples: int = 0  # samples with a known value
    unknown: int = 0  # samples in which the value was unknown
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None


def window_width(duration: float) -> float:
    """Seconds per window for a run of ``duration`` seconds (0 for a run of one instant)."""
    return HOUR if duration >= HOURLY_FROM else max(0.0, duration) / INTERVALS


def windows(known: Sequence[tuple[float, float]], unknown: Sequence[float] = ()) -> list[Window]:
    """``known``: (timestamp, value) of the samples with a value; ``unknown``: timestamps of those without.
    Pure; percentiles as numpy's (linear), like the summary's."""
    times = [t for t, _ in known] + list(unknown)
    if not times:
        return []
    t0 = min(times)
    duration = max(times) - t0
    width = window_width(duration)
    n = 1 if width <= 0 else (max(1, math.ceil(duration / width)) if width == HOUR else INTERVALS)

    def slot(t: float) -> int:
        return 0 if width <= 0 else min(int((t - t0) / width), n - 1)

    values: list[list[float]] = [[] for _ in range(n)]
    misses = [0] * n
    for t, v in known:
        values[slot(t)].append(v)
    for t in unknown:
        misses[slot(t)] += 1
    out = []
    for i in range(n):
        w = Window(start_s=i * width, end_s=duration if i == n - 1 else (i + 1) * width,
                   samples=len(values[i]), unknown=misses[i])
        if values[i]:
            a = np.asarray(values[i], dtype=float)
            w.p50, w.p90, w.p99 = (float(np.percentile(a, p)) for p in PERCENTILES)
            w.max = float(a.max())
        out.append(w)
    return out


def basis(ws: Sequence[Window]) -> str:
    """How the windows were cut, for a table's title."""
    if not ws:
        return ""
    width = ws[0].end_s - ws[0].start_s if len(ws) > 1 else ws[0].end_s
    if len(ws) > 1 and ws[1].start_s == HOUR:
        return "per hour"
    return f"per interval of {clock(width)}" if len(ws) > 1 else "one interval"


def clock(seconds: float) -> str:
    """h:mm:ss (whole seconds)."""
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
