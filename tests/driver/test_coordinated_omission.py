"""Coordinated omission, proven on a server that freezes: the null sink holds every answer due in the first second
of each ten seconds of the epoch clock until that second ends (wrk2's demonstration), under a paced schedule.

What a driver that does not omit must report: latency is measured from when a request was due, so a request due
at phase x of a stall (0 <= x < 1 s) has latency 1 - x; requests are due uniformly in time, so a tenth of them
fall in stalls and P(latency > y) = (1 - y) / 10 for y in [0, 1): p95 = 0.5 s, p99 = 0.9 s, p99.9 = 0.99 s, and
the median is the sink's ~0. Service time (sent to answered) shows the stall only for the requests in flight
when it began, one per client per stall; the requests a client could not send during the stall are sent when it
ends, late, and answered at once: their wait is latency, not service time.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.results.summary import summarize
from bench.trials.sqlite import TrialStore
from benchmarks.nullsink import free_port, stalled_wait, start_in_background
from tests.race.test_race import only_trial, race, write_track

STALL, PERIOD = 1.0, 10.0
CLIENTS, RATE = 10, 200  # 20 requests/s per client: one due every 50 ms


def test_stalled_wait_holds_answers_until_the_stall_ends():
    assert stalled_wait(1000.25, 0.0, STALL, PERIOD) == pytest.approx(0.75)  # in a stall: until its end
    assert stalled_wait(1005.0, 0.0, STALL, PERIOD) == 0.0
    assert stalled_wait(1009.95, 0.1, STALL, PERIOD) == pytest.approx(0.1 + 0.95)  # the delay lands in one


@pytest.fixture
def stalling_sink():
    port = free_port()
    procs = start_in_background(port, stall=(STALL, PERIOD))
    yield f"127.0.0.1:{port}"
    for p in procs:
        p.terminate()
        p.join(10)


def _expected_latency(due: np.ndarray) -> np.ndarray:
    phase = np.mod(due, PERIOD)
    return np.where(phase < STALL, STALL - phase, 0.0)


def test_a_freezing_server_shows_in_latency_as_the_analytic_distribution_and_in_service_time_only_in_flight(
        tmp_path, stalling_sink, sustained_load):
    track = write_track(tmp_path / "t", [
        {"operation": {"name": "q", "operation-type": "search", "index": "logs", "body": {"query": {"match_all": {}}}},
         # ramp-up spreads the clients' due times 5 ms apart; 20 s hold exactly two seconds of stall
         "clients": CLIENTS, "target-throughput": RATE, "ramp-up-time-period": 0.05, "warmup-time-period": 1,
         "time-period": 20}], indices=[{"name": "logs"}])
    assert race(f"--track-path={track}", f"--target-hosts={stalling_sink}") == 0
    with TrialStore() as store:
        df = store.samples(only_trial(store).id)
        notes = store.summary(only_trial(store).id).notes  # type: ignore[union-attr]
    # the requests due in a stall waited for the answer before them: the cluster's doing, and said so
    assert any(n.startswith("Task 'q' fell behind its schedule because of the answers, not the load driver")
               for n in notes), notes
    assert not any(n.startswith("Load driver") for n in notes), notes
    df = df[~df["warmup"].astype(bool)].reset_index(drop=True)
    assert df["success"].all() and len(df) == pytest.approx(RATE * 20, rel=0.02)
    due = df["absolute_time"].to_numpy()
    latency = df["latency"].to_numpy()
    service = df["service_time"].to_numpy()
    expected = _expected_latency(due)
    in_stall = expected > 0
    assert in_stall.mean() == pytest.approx(STALL / PERIOD, abs=0.01)

    # Every request: answered no earlier than its stall ends, and not much later (the driver's own delay).
    late = latency - expected
    assert (late > -0.01).all(), np.sort(late)[:5]
    assert np.median(late) < 0.02 and np.quantile(late, 0.98) < 0.1, np.quantile(late, [0.5, 0.9, 0.98, 1])

    # The percentiles bench reports are the analytic ones.
    ts = summarize(df).tasks[0]
    assert ts.latency[50.0] < 50  # ms
    # (each request is checked against its own analytic latency above; the p99 of one 20 s run's requests
    # also moves with where their due times fall in the stalls: 855 ms was seen on a loaded run)
    assert ts.latency[99.0] == pytest.approx(900, abs=60)
    assert ts.latency[99.9] == pytest.approx(990, abs=30)
    assert float(np.percentile(latency, 95)) == pytest.approx(0.5, abs=0.04)

    # Service time: the stall only for the requests in flight when it began, one per client and stall, each
    # sent when due (so it waited the rest of the stall); every other request answered at once.
    long = service > 0.2
    window = np.floor((due + 0.1) / PERIOD)  # a request due just before a stall may reach the sink inside it
    held = sorted(zip(df.loc[long, "client_id"], window[long]))
    assert len(held) == len(set(held)), "a client had two requests in flight in one stall"
    touched = set(zip(df.loc[in_stall, "client_id"], window[in_stall]))
    assert touched <= set(held) and len(held) - len(touched) <= CLIENTS, (len(held), len(touched))
    assert np.abs(service[long & in_stall] - expected[long & in_stall]).max() < 0.1
    assert np.quantile(service[~long], 0.99) < 0.05
    assert ts.service_time[50.0] < 50 and ts.service_time[99.0] < 100  # ms: 20 of 4,000 requests held
