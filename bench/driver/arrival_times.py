"""When the iterations of an arrival-rate task are due. Pure: no clock, no I/O.

The rate is piecewise linear (``ArrivalRate.segments``); N(t), the iterations due by time t, is its integral. The
k-th iteration of an even schedule is due when N(t) = k (k = 0, 1, ...: the first at the start); a Poisson
schedule's when N(t) reaches the sum of k exponential gaps of mean 1, which makes a Poisson process of the same
(possibly changing) rate.

A task's clients are dealt out to the workers, each running the share of the rate its clients make up. Even: the
worker takes the iterations k whose ``k % clients`` is one of its client ids, so the due times of every worker
together are the task's even schedule. Poisson: each worker runs an independent process at its share of the rate
(independent Poisson processes add up to one of their summed rates).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Iterator

Segment = tuple[float, float, float]  # seconds, rate at its start /s, rate at its end /s


def times_at(segments: list[Segment], counts: Iterable[float]) -> Iterator[float]:
    """For each of the increasing ``counts``, the time (s from the start) at which N(t) reaches it; ends at the
    first count the segments do not reach."""
    it = iter(segments)
    t0, n0 = 0.0, 0.0  # the current segment's start and N there
    seg = next(it, None)
    for n in counts:
        while seg is not None:
            d, r0, r1 = seg
            n1 = n0 + (r0 + r1) / 2.0 * d
            if n < n1:
                break
            t0, n0, seg = t0 + d, n1, next(it, None)
        if seg is None:
            return
        d, r0, r1 = seg
        m = n - n0
        a = (r1 - r0) / (2.0 * d)
        # a x^2 + r0 x = m, solved in the form that stays exact as a goes to 0
        x = 0.0 if m <= 0 else 2.0 * m / (r0 + math.sqrt(max(0.0, r0 * r0 + 4.0 * a * m)))
        yield t0 + min(x, d)


def _even_counts(clients: int, mine: frozenset[int]) -> Iterator[float]:
    k = 0
    while True:
        if k % clients in mine:
            yield float(k)
        k += 1


def _poisson_counts(share: float, rnd: random.Random) -> Iterator[float]:
    n = rnd.expovariate(share)
    while True:
        yield n
        n += rnd.expovariate(share)


def due_offsets(segments: list[Segment], distribution: str, clients: int, mine: Iterable[int],
                seed: object = 0) -> Iterator[float]:
    """The due times (s from the task's start) of the iterations a worker running client ids ``mine`` of the
    task's ``clients`` sends: evenly spaced or Poisson, as the module says."""
    ids = frozenset(mine)
    if not ids:
        return iter(())
    if distribution == "poisson":
        rnd = random.Random(f"{seed}:{min(ids)}")  # reproducible per worker, independent between workers
        return times_at(segments, _poisson_counts(len(ids) / clients, rnd))
    return times_at(segments, _even_counts(clients, ids))
