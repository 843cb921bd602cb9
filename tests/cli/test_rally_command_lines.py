"""Rally users' command lines, unchanged, against the session's real Elasticsearch: the most-copied race
(--pipeline=benchmark-only --track=geonames) on a local git repository of the real rally-tracks tree, task
filters, the stored track source, list races with Rally's filters, delete race."""

from __future__ import annotations

import json
import urllib.request

import pytest

from bench.cli import main
from bench.trials.sqlite import TrialStore
from tests.support.track_repo import geonames_test_corpus, make_repository, point_bench_at

pytestmark = pytest.mark.usefixtures("real_track_trees")

INCLUDED = ["delete-index", "create-index", "check-cluster-health", "index-append", "default"]


def test_rallys_race_command_runs_geonames_from_the_repository(tmp_path, bench_home, es_target, capsys):
    origin = make_repository(tmp_path / "rally-tracks")
    point_bench_at(bench_home, origin)
    corpus_dir = tmp_path / "corpora"
    geonames_test_corpus(corpus_dir)
    race_id = "5d4f9d2c-0c8e-4f3a-9d57-5b0a3c1e7f21"
    code = main(["--quiet", "race", "--pipeline=benchmark-only", "--track=geonames", f"--target-hosts={es_target}",
                 "--test-mode", f"--corpus-dir={corpus_dir}", f"--include-tasks={','.join(INCLUDED)}",
                 f"--race-id={race_id}", "--user-tags=intention:rally-cli", "--on-error=abort"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Track from repository default (file://" in out
    with TrialStore() as store:
        trial = store.get_trial(race_id)  # Rally's UUID spelling finds the trial
        samples = store.samples(trial.id)
    assert trial.id == race_id.replace("-", "") and trial.status == "complete"
    assert trial.pipeline == "benchmark-only" and trial.user_tags == {"intention": "rally-cli"}
    assert trial.track == "geonames" and trial.challenge == "append-no-conflicts"
    assert trial.track_source["kind"] == "repository" and trial.track_source["branch"] == "master"
    assert set(samples["task"]) == set(INCLUDED)  # only the included tasks ran
    assert samples["success"].all()
    assert samples[samples["task"] == "index-append"]["units"].sum() == 1000
    # the included tasks hold no refresh: make every indexed document visible before counting them
    urllib.request.urlopen(urllib.request.Request(f"http://{es_target}/geonames/_refresh", method="POST")).close()
    with urllib.request.urlopen(f"http://{es_target}/geonames/_count") as r:
        assert json.load(r)["count"] == 1000

    # Rally's list races filters and json format; the same trial under 'trials'
    assert main(["list", "races", "--track=geonames", "--user-tags=intention:rally-cli", "--format=json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["race-id"] for r in listed] == [trial.id] and listed[0]["track-source"]["branch"] == "master"
    assert main(["list", "races", "--track=nginx", "--format=json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["list", "races", "--from-date=20000101", "--to-date=20000102", "--format=json"]) == 0
    assert json.loads(capsys.readouterr().out) == []

    # Rally's delete race
    assert main(["delete", "race", f"--id={race_id}", "--dry-run"]) == 0
    assert "would delete trial" in capsys.readouterr().out
    assert main(["delete", "race", f"--id={race_id[:8]}"]) == 0
    assert "deleted trial" in capsys.readouterr().out
    with TrialStore() as store:
        assert store.list_trials() == []


def test_exclude_tasks_and_a_filter_matching_nothing(tmp_path, bench_home, es_target, capsys):
    origin = make_repository(tmp_path / "rally-tracks")
    point_bench_at(bench_home, origin)
    code = main(["--quiet", "race", "--pipeline=benchmark-only", "--track=geonames", f"--target-hosts={es_target}",
                 "--test-mode", "--include-tasks=index-apend"])
    err = capsys.readouterr().err
    assert code == 2 and "--include-tasks: index-apend match(es) no task of challenge 'append-no-conflicts'" in err
    # everything but the bulk and the merges, by operation type and by name
    code = main(["--quiet", "race", "--pipeline=benchmark-only", "--track=geonames", f"--target-hosts={es_target}",
                 "--test-mode", "--challenge=append-no-conflicts-index-only",
                 "--exclude-tasks=type:bulk,type:force-merge,wait-until-merges-finish"])
    out = capsys.readouterr().out
    assert code == 0, out
    with TrialStore() as store:
        trial = store.list_trials()[0]
        tasks = set(store.samples(trial.id)["task"])
    assert "index-append" not in tasks and "check-cluster-health" in tasks and "create-index" in tasks
