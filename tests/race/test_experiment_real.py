"""An experiment of 2 variants x 2 repetitions, end to end against the session cluster: interrupted after two
races, resumed (skipping the completed ones), then compared."""

from __future__ import annotations

import pytest

from bench.cli import main
from bench.race.experiment import load_experiment, run_experiment
from bench.race.race import run_race
from bench.trials.sqlite import TrialStore
from bench.util.errors import RaceInterrupted
from tests.support.compare_trials import es_target_session, write_compare_track  # noqa: F401 - fixture

pytestmark = pytest.mark.cluster


def test_experiment_runs_interleaved_resumes_and_compares(tmp_path, es_target_session, capsys):  # noqa: F811
    track = write_compare_track(tmp_path / "track")
    exp_file = tmp_path / "exp.yml"
    exp_file.write_text(f"""
name: two-by-two
baseline: small-bulk
repetitions: 2
order: interleaved
race:
  track-path: {track}
  target-hosts: "{es_target_session}"
  track-params: {{ingest_percentage: 20}}
variants:
  small-bulk: {{track-params: {{bulk_size: 20}}}}
  big-bulk: {{track-params: {{bulk_size: 200}}}}
""")
    exp = load_experiment(exp_file)
    calls = []

    def interrupted_after_two(opts):
        if len(calls) == 2:
            raise RaceInterrupted("Ctrl-C")
        calls.append((opts.user_tags["variant"], opts.user_tags["repetition"]))
        return run_race(opts)

    with TrialStore() as store, pytest.raises(RaceInterrupted):
        run_experiment(exp, store=store, run_race=interrupted_after_two, say=lambda s: None)
    assert calls == [("small-bulk", "1"), ("big-bulk", "1")]

    capsys.readouterr()
    report = tmp_path / "report.md"
    assert main(["--quiet", "experiment", str(exp_file), "--resume", f"--report-file={report}"]) == 0
    out = capsys.readouterr().out
    assert out.count("done before, skipped") == 2
    assert "4 races planned, 2 run now, 2 done before, 0 failed" in out

    with TrialStore() as store:
        trials = [t for t in store.list_trials(100) if t.user_tags.get("experiment") == "two-by-two"]
    assert len(trials) == 4 and all(t.status == "complete" for t in trials)
    assert len({t.user_tags["experiment-run"] for t in trials}) == 1
    order = [(t.user_tags["variant"], t.user_tags["repetition"]) for t in sorted(trials, key=lambda t: t.start_time)]
    assert order == [("small-bulk", "1"), ("big-bulk", "1"), ("big-bulk", "2"), ("small-bulk", "2")]
    assert {t.track_params.get("bulk_size") for t in trials} == {20, 200}

    md = report.read_text()
    assert "## Comparison" in md and "Baseline small-bulk" in md and "Candidate big-bulk" in md
    assert "| Mean Throughput | index |" in md
    assert "at least 3 per side are needed to judge significance" in md  # 2 vs 2: honest about it
