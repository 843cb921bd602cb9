"""Redline races for real: against the null sink with a known service time (so the knee is known in advance)
and against a real local Elasticsearch; bad options fail before anything starts."""

from __future__ import annotations

import json

import pytest

from bench import extensions
from bench.redline.redline_extension import setup as redline_setup
from bench.redline.section import SECTION, RedlineSection
from bench.trials.sqlite import TrialStore
from benchmarks.nullsink import running
from tests.race.test_race import only_trial, race, write_track

CLIENTS = 4
DELAY = 0.04  # s: every answer of the sink waits this long, so CLIENTS clients cannot exceed CLIENTS / DELAY


@pytest.fixture(autouse=True)
def _redline_extension():
    extensions.register("redline", redline_setup)  # not installed as an entry point in every checkout


@pytest.fixture(scope="module")
def slow_sink():
    with running(delay=DELAY) as sink:
        yield sink


def _track(tmp_path, clients: int = CLIENTS):
    tmp_path.mkdir(parents=True, exist_ok=True)
    data = tmp_path / "docs.json"
    data.write_text("".join(json.dumps({"n": i}) + "\n" for i in range(2000)))
    return write_track(
        tmp_path / "t",
        [{"operation": {"name": "load", "operation-type": "bulk", "bulk-size": 10, "corpora": "c"},
          "clients": clients}],
        indices=[{"name": "knee"}],
        corpora=[{"name": "c", "documents": [{"source-file": str(data), "document-count": 2000,
                                              "target-index": "knee"}]}])


def _section() -> tuple[RedlineSection, object]:
    with TrialStore() as store:
        trial = only_trial(store)
        summary = store.summary(trial.id)
        samples = store.samples(trial.id)
    assert summary is not None
    return RedlineSection.model_validate(summary.sections[SECTION]), samples


def test_redline_finds_the_known_knee_of_the_null_sink_within_the_tolerance(tmp_path, slow_sink, sustained_load):
    knee = CLIENTS / DELAY  # 100 requests/s: above it requests queue and latency grows without bound
    track = _track(tmp_path)
    assert race(f"--track-path={track}", f"--target-hosts={slow_sink}",
                "--redline=task:load,p99:200ms,errors:0%,warmup:2s,measure:3s,start:30,steps:12") == 0
    s, samples = _section()
    assert s.converged, s.reason
    assert s.sustained is not None and s.lowest_failing is not None and (s.lowest_failing - s.sustained) / s.sustained <= 0.05
    # Never more than the sink can answer; within the tolerance of it (the driver's and sink's own few ms per
    # request put the real knee a little below C/d).
    assert 0.9 * knee <= s.sustained <= 1.01 * knee, [(st.target, st.met, st.why) for st in s.steps]
    best = s.best()
    assert best is not None and best.errors == 0
    assert best.achieved == pytest.approx(best.target, rel=0.05) and best.throughput == pytest.approx(
        10 * best.achieved, rel=0.001)
    assert best.service_time_ms["50"] == pytest.approx(DELAY * 1000, abs=15)
    # Every step is stored under its own name, warmup flagged, and matches the step's figures.
    assert [st.step for st in s.steps] == list(range(1, len(s.steps) + 1))
    for st in s.steps:
        mine = samples[samples["task"] == st.task]
        assert (~mine["warmup"]).sum() == st.requests and mine["warmup"].any()
    # Steps above the knee failed on latency (or were stopped when it ran away), never silently passed.
    assert all(not st.met for st in s.steps if st.target > 1.01 * knee)
    assert any(st.target > knee and st.latency_ms["99"] > 200 for st in s.steps)


def test_bad_redline_options_fail_in_one_line_before_anything_starts(tmp_path, capsys, slow_sink):
    track = _track(tmp_path)
    for option, message in (("--redline=task:load", "--redline: needs p99:500ms"),
                            ("--redline=task:nope,p99:1s", "--redline: task 'nope' is not in challenge")):
        assert race(f"--track-path={track}", f"--target-hosts={slow_sink}", option) != 0
        err = capsys.readouterr().err.strip()
        assert message in err and "Traceback" not in err and len(err.splitlines()) == 1, err
    with TrialStore() as store:
        assert store.list_trials() == []


def test_redline_against_a_real_elasticsearch_stores_every_step_and_a_sustained_rate_it_met(tmp_path, es_target):
    # A real cluster's knee is not known in advance: bounded to 6 short steps, the search must report a
    # sustained target that a stored step met in full, and nothing above a failed one.
    data = tmp_path / "docs.json"
    data.write_text("".join(json.dumps({"n": i, "msg": f"line {i}"}) + "\n" for i in range(5000)))
    track = write_track(
        tmp_path / "t",
        [{"operation": {"name": "drop", "operation-type": "delete-index"}},
         {"operation": {"name": "make", "operation-type": "create-index"}},
         {"operation": {"name": "load", "operation-type": "bulk", "bulk-size": 200, "corpora": "c"}, "clients": 2}],
        indices=[{"name": "redline-es"}],
        corpora=[{"name": "c", "documents": [{"source-file": str(data), "document-count": 5000,
                                              "target-index": "redline-es"}]}])
    assert race(f"--track-path={track}", f"--target-hosts={es_target}",
                "--redline=task:load,p99:500ms,errors:0%,warmup:1s,measure:2s,start:4,steps:6") == 0
    s, samples = _section()
    assert 1 <= len(s.steps) <= 6 and s.task == "load"
    assert set(samples["task"]) == {"drop", "make", *(st.task for st in s.steps)}
    best = s.best()
    assert best is not None, [(st.target, st.why) for st in s.steps]
    assert best.met and best.errors == 0 and best.latency_ms["99"] <= 500
    assert best.achieved >= 0.95 * best.target
    mine = samples[(samples["task"] == best.task) & ~samples["warmup"]]
    assert best.requests == len(mine) and mine["success"].all()
    assert best.throughput == pytest.approx(mine["units"].sum() / best.duration_s, rel=1e-6)
    assert all(st.target < s.lowest_failing for st in s.steps if st.met) if s.lowest_failing else True
    with TrialStore() as store:
        summary = store.summary(only_trial(store).id)
    # The steps are in the redline section, not one task row each; the other tasks keep theirs.
    assert summary is not None and [t.task for t in summary.tasks] == ["drop", "make"]
    assert any(r.metric.startswith("Redline sustained throughput") and r.unit == "docs/s" for r in summary.rows())


def test_two_redlines_compare_side_by_side_and_report_their_curves(tmp_path, slow_sink, sustained_load, capsys):
    from bench.cli import main

    ids = []
    for clients in (4, 2):  # half the clients: half the knee (C / d)
        track = _track(tmp_path / f"c{clients}", clients)
        assert race(f"--track-path={track}", f"--target-hosts={slow_sink}", f"--user-tag=clients:{clients}",
                    "--redline=task:load,p99:200ms,warmup:1s,measure:2s,start:25,steps:3,tolerance:50%") == 0
        with TrialStore() as store:
            ids.append(store.list_trials()[0].id)
    capsys.readouterr()
    assert main(["compare", ids[0], ids[1]]) == 0
    out = capsys.readouterr().out
    metric = "Redline sustained throughput (p99 latency ≤ 200 ms, errors ≤ 0 %)"
    assert metric in out
    with TrialStore() as store:
        values = [RedlineSection.model_validate(store.summary(i).sections[SECTION]).best() for i in ids]
    assert all(values) and values[1].throughput < values[0].throughput
    assert f"{metric} of load from" in " ".join(out.split()), out
    html = tmp_path / "r.html"
    assert main(["report", "--compare", ids[0], ids[1], "--format", "html", "--output", str(html)]) == 0
    text = html.read_text()
    assert "Redline curve" in text and "plot-redline-throughput" in text and "plot-redline-latency" in text
    md = tmp_path / "r.md"
    assert main(["report", ids[1], "--output", str(md)]) == 0
    assert "Redline curve" in md.read_text() and "| 1 | 25 |" in md.read_text()
