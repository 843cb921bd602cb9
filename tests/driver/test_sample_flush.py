"""A worker's samples go to the coordinator in batches of at most FLUSH_SAMPLES, whatever the request rate: the
transport pickles a batch in one call that holds the GIL, so a batch's size bounds the event loop's stall."""

from __future__ import annotations

import asyncio
import pickle

from bench.driver.messages import Samples
from bench.driver.worker import FLUSH_SAMPLES, _StepClients

ROW = ("t", "op", "search", 0, 1.0, 0.5, 0.002, 0.001, 1, "ops", 10, True, None, False, 0, 20, 200, None, None)


class _Results(list):
    def put(self, msg: object, /) -> None:
        self.append(msg)


def test_samples_are_flushed_every_flush_samples_and_none_is_lost() -> None:
    results = _Results()
    clients = _StepClients(3, None, results, asyncio.Event(), asyncio.Event(), None)  # type: ignore[arg-type]
    n = 2 * FLUSH_SAMPLES + 7
    for i in range(n):
        clients.record((*ROW[:4], float(i), *ROW[5:]))
    assert [len(m.batch) for m in results] == [FLUSH_SAMPLES, FLUSH_SAMPLES]
    clients.flush()
    assert [len(m.batch) for m in results] == [FLUSH_SAMPLES, FLUSH_SAMPLES, 7]
    got = [s for m in results for s in pickle.loads(pickle.dumps(m)).batch]
    assert [s.absolute_time for s in got] == [float(i) for i in range(n)]
    assert all(isinstance(m, Samples) and m.wid == 3 for m in results)
