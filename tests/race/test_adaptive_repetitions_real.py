"""Adaptive repetitions against a known effect: two null sinks (benchmarks/nullsink.py) that answer every bulk after
40 ms and 50 ms, so the slowed variant indexes ~20 % slower (1 client: throughput ∝ 1 / service time). Rounds of
real races go on until the study's main row is resolved, and stop then, saying so; with a target out of reach, the
time budget ends them instead, also across an interrupted run and its --resume."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench.cli import main
from bench.compare.stats import diff_ci
from bench.race.experiment import load_experiment, run_experiment
from bench.race.race import run_race
from bench.trials.sqlite import TrialStore
from bench.util.errors import RaceInterrupted
from benchmarks.nullsink import running

FAST_S, SLOW_S = 0.040, 0.050


@pytest.fixture(scope="module")
def sinks():
    with running(delay=FAST_S) as fast, running(delay=SLOW_S) as slow:
        yield fast, slow


def _experiment(tmp_path: Path, sinks: tuple[str, str], repetitions: str, docs: int = 3000) -> Path:
    track = tmp_path / "track"
    track.mkdir()
    (track / "docs.json").write_text("".join(json.dumps({"n": i}) + "\n" for i in range(docs)))
    (track / "track.json").write_text(json.dumps({
        "version": 2, "description": "a known effect", "indices": [{"name": "known"}],
        "corpora": [{"name": "c", "documents": [{"source-file": "docs.json", "document-count": docs,
                                                 "target-index": "known"}]}],
        "schedule": [{"operation": {"name": "bulk", "operation-type": "bulk", "bulk-size": 50}, "clients": 1,
                      "warmup-time-period": 0}]}))
    f = tmp_path / "known-effect.yml"
    f.write_text(f"""
name: known-effect
baseline: fast
repetitions: {repetitions}
race: {{track-path: "{track}"}}
variants:
  fast: {{target-hosts: "{sinks[0]}"}}
  slow: {{target-hosts: "{sinks[1]}"}}
study: {{}}
""")
    return f


def _medians() -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"fast": [], "slow": []}
    with TrialStore() as store:
        for t in store.list_trials(100):
            assert t.status == "complete"
            out[t.user_tags["variant"]].append(store.summary(t.id).tasks[0].throughput.median)  # type: ignore
    return out


def test_rounds_stop_once_the_known_effect_is_resolved(tmp_path, sinks, capsys):
    f = _experiment(tmp_path, sinks, "{min: 2, max: 8, until: {ci-within: 8%}}")
    report = tmp_path / "study.md"
    assert main(["--quiet", "experiment", str(f), f"--report-file={report}"]) == 0
    out = capsys.readouterr().out
    ended = re.search(r"Repetitions ended after (\d+) repetitions per variant: (.*)", out)
    assert ended is not None and ended.group(2).startswith("resolved, every 95 % CI of Δ within ±8 %"), out
    rounds = int(ended.group(1))
    assert 2 <= rounds < 8
    # every round before the last was not resolved, and said so (the first: no spread within a variant yet)
    assert out.count("Not resolved after") == rounds - 1
    assert "Not resolved after 1 repetition per variant (target ±8 %: the spread is not known yet)" in out
    medians = _medians()
    assert [len(v) for v in medians.values()] == [rounds, rounds]
    # What the study resolved is the effect the sinks were set to: -20 % (service times 40 vs 50 ms, plus the
    # driver's own time per bulk, ~0.5 ms on an idle machine and more on a busy one, which shrinks the effect:
    # -17 % with 10 ms), with a CI that excludes 0 and is within the target.
    base = sum(medians["fast"]) / rounds
    ci = diff_ci(medians["fast"], medians["slow"])
    low, high = 100 * ci.low / base, 100 * ci.high / base
    assert high < 0 and (high - low) / 2 <= 8.0, (low, high)
    assert -24 < 100 * ci.diff / base < -12
    md = report.read_text()
    # the study's heading starts its own line, a blank line before it
    assert re.search(r"\._\n\n## Study: known-effect, run \S+\n", md), md[:300]
    assert "## Study" not in md.split("\n## Study")[0]
    lines = md.splitlines()
    table_end = max(i for i, line in enumerate(lines) if line.startswith("| Median Throughput (indexing) |"))
    after = lines[table_end + 1:table_end + 6]
    assert any(line.startswith(f"Resolution (Median Throughput (indexing); 95 % confidence, 80 % power): with "
                               f"{rounds} repetitions per variant the study could detect differences of ±")
               for line in after), after
    assert any(line.startswith(f"Repetitions ended after {rounds} repetitions per variant: resolved")
               for line in after), after


def test_the_time_budget_ends_rounds_the_target_cannot_and_resume_keeps_counting(tmp_path, sinks, capsys):
    f = _experiment(tmp_path, sinks, "{min: 2, max: 8, until: {ci-within: 0.01%}, time-budget: 1s}",
                    docs=1000)
    calls = []

    def interrupted_at_the_third(opts):
        if len(calls) == 2:
            raise RaceInterrupted("Ctrl-C")
        calls.append(opts.user_tags["repetition"])
        return run_race(opts)

    with TrialStore() as store, pytest.raises(RaceInterrupted):
        run_experiment(load_experiment(f), store=store, run_race=interrupted_at_the_third, say=lambda s: None)
    capsys.readouterr()
    report = tmp_path / "study.html"
    assert main(["--quiet", "experiment", str(f), "--resume", "--report-format=html",
                 f"--report-file={report}"]) == 0
    out = capsys.readouterr().out
    assert out.count("done before, skipped") == 2
    assert "up to 16 races planned, 2 run now, 2 done before, 0 failed" in out
    assert "Not resolved after 1 repetition per variant" in out
    assert re.search(r"Repetitions ended after 2 repetitions per variant: time budget 1s spent \(\d+s used and a "
                     r"round takes about \d+s: another would overrun it\) before every 95 % CI of Δ was within "
                     r"±0.01 % \(slow: -\d", out), out
    assert "[5/16]" not in out  # no third round
    assert [len(v) for v in _medians().values()] == [2, 2]
    html = report.read_text()
    assert '<p class="resolution">Repetitions ended after 2 repetitions per variant: time budget' in html
    assert '<p class="resolution">Resolution (Median Throughput (indexing); 95 % confidence, 80 % power): with 2 ' \
           'repetitions per variant' in html
