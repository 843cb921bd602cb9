"""A warmup that fits the run: a corpus-bounded bulk task never loses its whole measured part to its warmup."""

from __future__ import annotations

import pytest

from bench.cli import main
from bench.driver.warmup import corpus_requests, warmup_notes
from bench.track.loader import find_track, load_track
from bench.trials.sqlite import TrialStore
from bench.util.errors import TrackError
from tests.race.test_race import only_trial, race, write_track

NGINX_CORPUS = [{"name": "logs", "documents": [{"source-file": "logs.json", "document-count": 1000,
                                                  "target-index": "logs", "generator": {"name": "nginx"}}]}]


def _bulk_track(tmp_path, **task):
    return write_track(tmp_path / "t", [
        {"operation": {"operation-type": "delete-index"}},
        {"operation": {"operation-type": "create-index"}},
        {"operation": {"name": "bulk", "operation-type": "bulk", "bulk-size": 100}, **task},
    ], indices=[{"name": "logs"}], corpora=NGINX_CORPUS)


def _nginx(params: dict) -> tuple:
    track = load_track(find_track("nginx", None), params)
    return track, track.challenge("index-only")


def test_small_corpus_with_a_time_warmup_is_said_up_front_and_capped_at_half():
    track, challenge = _nginx({"doc_count": 200_000})  # 8 clients x 25,000 docs = 5 bulks of 5,000 each
    task = next(t for t in challenge.tasks() if t.operation.operation_type == "bulk")
    assert corpus_requests(track, task) == [5] * 8
    [note] = warmup_notes(track, challenge)
    assert note == ("Task 'index-append': warmup 10 s or 2 of each client's 5 bulk requests, whichever ends first "
                    "(the corpus ends this task; at least half of it is measured).")


def test_one_bulk_per_client_means_no_warmup_and_says_so():
    track, challenge = _nginx({"doc_count": 20_000})
    [note] = warmup_notes(track, challenge)
    assert "each client sends 1 bulk request(s), so there is no warmup" in note and "10 s" in note


def test_a_task_without_warmup_or_not_corpus_bounded_gets_no_note():
    assert warmup_notes(*_nginx({"doc_count": 20_000, "warmup_time_period": 0})) == []
    track = load_track(find_track("nginx", None), {})
    assert warmup_notes(track, track.challenge("loadgen-bulk")) == []  # a Loadgen template: time-bounded


def test_warmup_iterations_that_swallow_the_corpus_are_an_error_before_the_race(tmp_path, capsys):
    root = _bulk_track(tmp_path, **{"clients": 2, "warmup-iterations": 5})  # 500 docs per client = 5 bulks
    track = load_track(root, {})
    with pytest.raises(TrackError, match="warmup-iterations 5 but its corpus gives each client only 5 bulk"):
        warmup_notes(track, track.challenge(None))
    # Through the command line: one line, non-zero exit, no trial and no cluster (the target does not exist).
    assert race(f"--track-path={root}", "--target-hosts=127.0.0.1:1") != 0
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "task 'bulk'" in err and "nothing measured" in err
    with TrialStore() as store:
        assert store.list_trials() == []


def test_warmup_iterations_of_a_corpus_bounded_task_are_warmup(tmp_path, es_target):
    # No 'iterations': the corpus ends the task, and its first 3 requests per client are warmup (Rally's
    # iteration-based schedule).
    root = _bulk_track(tmp_path, **{"clients": 2, "warmup-iterations": 3})
    assert race(f"--track-path={root}", f"--target-hosts={es_target}") == 0
    with TrialStore() as store:
        trial = only_trial(store)
        df = store.samples(trial.id)
        summary = store.summary(trial.id)
    bulk = df[df["task"] == "bulk"]
    assert len(bulk) == 10 and bulk.groupby("client_id")["warmup"].sum().tolist() == [3, 3]
    assert summary.task("bulk").throughput is not None and summary.task("bulk").warmup_requests == 6


def test_a_time_warmup_longer_than_the_corpus_still_measures_half_of_it(tmp_path, es_target, capsys):
    # 20,000 documents in bulks of 1,000 from 2 clients: 10 requests each, all sent well within a 60 s warmup
    # (the default 10 s too, on an idle machine). The warmup ends after 5 requests per client, and the race says
    # so before it starts.
    assert race("--track=nginx", "--challenge=index-only", f"--target-hosts={es_target}",
                "--track-params=doc_count:20000,bulk_size:1000,bulk_indexing_clients:2,warmup_time_period:60") == 0
    out = capsys.readouterr().out
    assert "Warmup: Task 'index-append': warmup 60 s or 5 of each client's 10 bulk requests" in out
    assert out.index("Warmup:") < out.index("Cluster ")  # up front, before the load starts
    with TrialStore() as store:
        trial = only_trial(store)
        df = store.samples(trial.id)
        summary = store.summary(trial.id)
    bulk = df[df["task"] == "index-append"]
    assert bulk["units"].sum() == 20_000
    assert bulk.groupby("client_id")["warmup"].sum().tolist() == [5, 5]
    task = summary.task("index-append")
    assert task.throughput is not None and task.requests == 10 and task.units == 10_000
    assert not any("only warmup samples" in n for n in summary.notes)


def test_test_mode_races_have_no_warmup_note(tmp_path, es_target, capsys):
    assert main(["--quiet", "race", "--track=nginx", "--challenge=index-only", "--test-mode",
                 f"--target-hosts={es_target}"]) == 0
    assert "Warmup:" not in capsys.readouterr().out
