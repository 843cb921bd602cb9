"""When each request of a client is due. Pure: no clock, no I/O.

A throttled client gets a target rate of ``ops_per_second / clients``; its n-th request is due at
``start + offset_n``. Latency is measured from that due time, so when the cluster cannot keep up the
queueing delay shows up as latency > service time (coordinated omission is made visible, not hidden).
"""

from __future__ import annotations

import random
from collections.abc import Iterator


def due_offsets(rate_per_client: float | None, kind: str | None = "deterministic", *,
                seed: int = 0) -> Iterator[float | None]:
    """Offsets in seconds from the task start at which requests are due; ``None`` = unthrottled."""
    if rate_per_client is None:
        while True:
            yield None
    interval = 1.0 / rate_per_client
    if kind in (None, "deterministic"):
        n = 0
        while True:
            yield n * interval
            n += 1
    elif kind == "poisson":
        rnd = random.Random(seed)
        t = 0.0
        while True:
            yield t
            t += rnd.expovariate(rate_per_client)
    else:
        raise ValueError(f"unknown schedule '{kind}': use deterministic or poisson")
