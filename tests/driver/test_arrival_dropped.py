"""Arrival-rate tasks against a null sink of known capacity (clients / its answer delay): above it, the iterations
that found no client free are dropped and counted, as many as the schedule had beyond the capacity; below it,
none is; every report format shows the counts, and a ``*:dropped<1%`` threshold judges them (fails above, holds
below)."""

from __future__ import annotations

import json

import pytest

from bench.cli import main
from bench.results.exit_status import EXIT_OK, EXIT_THRESHOLD
from bench.results.report import FORMATS, render_summary
from bench.results.thresholds import results_of
from bench.trials.sqlite import TrialStore
from bench.trials.summary import stored_summary
from benchmarks.nullsink import running
from tests.race.test_race import only_trial, race, write_track

DELAY = 0.05  # s the sink waits before each answer
CLIENTS = 4
CAPACITY = CLIENTS / DELAY  # 80 iterations/s at most
SECONDS = 3.0  # measured; after 1 s of warmup


@pytest.fixture(scope="module")
def slow_sink():
    with running(delay=DELAY) as url:
        yield url


def _race(tmp_path, sink: str, rate: float, workers: int = 1, rc: int = EXIT_OK):
    track = write_track(tmp_path / "t", [{
        "operation": {"name": "q", "operation-type": "search", "index": "logs", "body": {"query": {"match_all": {}}}},
        "schedule": "constant-arrival-rate", "rate": rate, "pre-allocated-clients": CLIENTS,
        "warmup-time-period": 1, "time-period": SECONDS}], indices=[{"name": "logs"}])
    assert race(f"--track-path={track}", f"--target-hosts={sink}", f"--worker-processes={workers}",
                "--threshold=*:dropped<1%") == rc
    with TrialStore() as store:
        trial = only_trial(store)
        summary = stored_summary(store, trial.id)
        df = store.samples(trial.id)
    assert summary is not None
    return trial.id, summary, df[~df["warmup"].astype(bool)]


def test_a_rate_above_the_sinks_capacity_drops_what_the_clients_could_not_send(tmp_path, slow_sink):
    rate = 4 * CAPACITY  # 320/s: a client is free again every 50 ms, an iteration is due every ~3 ms
    trial_id, summary, measured = _race(tmp_path, slow_sink, rate, rc=EXIT_THRESHOLD)
    ts = summary.tasks[0]
    assert ts.scheduled_iterations == pytest.approx(rate * SECONDS, abs=2)
    expected = ts.scheduled_iterations - CAPACITY * SECONDS
    assert ts.dropped_iterations == pytest.approx(expected, rel=0.05), (ts.dropped_iterations, expected)
    # every measured iteration was either sent (a sample) or dropped, never both, never lost
    assert len(measured) + ts.dropped_iterations == ts.scheduled_iterations
    assert measured["success"].all()
    [verdict] = results_of(summary)
    assert verdict.result == "failed" and verdict.value == pytest.approx(ts.dropped_iterations
                                                                        / ts.scheduled_iterations), verdict
    note = next(n for n in summary.notes if "dropped" in n)
    assert note.startswith(f"Task 'q' dropped {ts.dropped_iterations:,} of its {ts.scheduled_iterations:,} "
                           "scheduled iterations")
    for fmt in FORMATS:
        text = render_summary(summary, fmt)  # type: ignore[arg-type]
        assert "dropped iterations" in text or '"dropped_iterations"' in text, fmt
    rows = json.loads(render_summary(summary, "json"))["rows"]
    assert {r["metric"]: r["value"] for r in rows if r["task"] == "q"}["dropped iterations"] == ts.dropped_iterations
    html = tmp_path / "report.html"
    assert main(["report", trial_id, "--format=html", f"--output={html}"]) == 0
    page = html.read_text()
    assert "dropped iterations" in page and f"dropped {ts.dropped_iterations:,} of its" in page


def test_a_rate_below_the_capacity_drops_nothing_and_goes_out_on_time(tmp_path, slow_sink):
    rate = CAPACITY / 2
    # two workers: their shares interleave into the task's even schedule
    _, summary, measured = _race(tmp_path, slow_sink, rate, workers=2)
    ts = summary.tasks[0]
    assert ts.scheduled_iterations == pytest.approx(rate * SECONDS, abs=2)
    assert ts.dropped_iterations == 0 and len(measured) == ts.scheduled_iterations
    assert [(v.result, v.value) for v in results_of(summary)] == [("passed", 0.0)]
    assert not any("dropped" in n for n in summary.notes)
    # evenly spaced due times, 25 ms apart: not a burst of every client at once (each worker process derives wall
    # times from its own clock reading, a few µs apart)
    due = measured["absolute_time"].sort_values().diff().dropna()
    assert due.to_numpy() == pytest.approx(1 / rate, abs=1e-5)
