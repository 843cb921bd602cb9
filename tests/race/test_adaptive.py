"""Adaptive repetitions (bench/race/adaptive.py), pure: the file's shape, bad input in one line, and when the rounds
end and why."""

from __future__ import annotations

import pytest

from bench.cli import main
from bench.race.adaptive import AdaptiveRepetitions, Spread, decide, seconds_value
from bench.race.experiment import load_experiment, plan

EXP = """
name: adaptive
baseline: a
repetitions: {reps}
race: {{track: nginx, target-hosts: "127.0.0.1:9"}}
variants: {{a: {{}}, b: {{}}}}
"""


def _adaptive(**kw) -> AdaptiveRepetitions:
    return AdaptiveRepetitions.model_validate({"min": 2, "max": 6, "until": {"ci-within": "2%"}, **kw})


def test_the_mapping_plans_max_interleaved_rounds_and_a_count_on_the_command_line_replaces_it(tmp_path, capsys):
    f = tmp_path / "e.yml"
    f.write_text(EXP.format(reps="{min: 3, max: 5, until: {ci-within: 2.5 %}, time-budget: 2h}"))
    exp = load_experiment(f)
    assert exp.adaptive is not None and exp.repetitions == 5
    assert (exp.adaptive.min, exp.adaptive.until.ci_within, exp.adaptive.time_budget) == (3, 2.5, 7200.0)
    assert [r.repetition for r in plan(exp, "x")] == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert main(["experiment", str(f), "--dry-run"]) == 0
    assert ("Repetitions are adaptive: after each round from round 3 on, the run ends once every variant's 95 % CI of "
            "Δ median indexing throughput against the baseline is within ±2.5 %, or once another round would overrun "
            "the time budget of 2h00m; at most 5 rounds") in " ".join(capsys.readouterr().out.split())
    fixed = load_experiment(f, repetitions=2)
    assert fixed.adaptive is None and fixed.repetitions == 2


@pytest.mark.parametrize(("reps", "said"), [
    ("{min: 2, max: 9}", "field 'repetitions.until': Field required"),
    ("{min: 5, max: 3, until: {ci-within: 2%}}", "max 3 is below min 5"),
    ("{max: 3, until: {ci-within: two}}", "field 'repetitions.until.ci-within': Input should be a valid number"),
    ("{max: 3, until: {ci-within: 2%}, time-budget: soon}", "'soon' is not a duration like 45s, 90m, 2h or 1d"),
    ("{min: 1, max: 3, until: {ci-within: 2%}}", "field 'repetitions.min': Input should be greater than or equal to 2"),
])
def test_bad_adaptive_repetitions_are_one_line(tmp_path, capsys, reps, said):
    f = tmp_path / "e.yml"
    f.write_text(EXP.format(reps=reps))
    assert main(["experiment", str(f), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and said in err and str(f) in err and "Traceback" not in err, err


def test_random_order_is_refused_with_rounds_and_adaptive_is_no_key_of_its_own(tmp_path, capsys):
    f = tmp_path / "e.yml"
    f.write_text(EXP.format(reps="{max: 3, until: {ci-within: 2%}}") + "order: random\n")
    assert main(["experiment", str(f), "--dry-run"]) == 2
    assert "set order: interleaved" in capsys.readouterr().err
    f.write_text(EXP.format(reps="4") + "adaptive: {max: 3, until: {ci-within: 2%}}\n")
    assert main(["experiment", str(f), "--dry-run"]) == 2
    assert "'adaptive' is no key of an experiment file: write repetitions: {min: 2" in capsys.readouterr().err


def test_resolved_once_every_ci_is_within_the_target_and_not_before_min():
    tight = [Spread(variant="b", diff_pct=-20.0, low_pct=-21.5, high_pct=-18.6)]
    assert decide(_adaptive(min=3), 2, tight, 10).stop is False  # min not reached
    d = decide(_adaptive(), 2, tight, 10)
    assert d.stop and d.ending == "resolved" and "every 95 % CI of Δ within ±2 %" in d.line
    wide = [*tight, Spread(variant="c", diff_pct=1.0, low_pct=-2.0, high_pct=4.1)]  # half-width 3.05
    go_on = decide(_adaptive(), 2, wide, 10)
    assert not go_on.stop and "Not resolved after 2 repetitions per variant" in go_on.line
    zero = decide(_adaptive(), 2, [Spread(variant="b", diff_pct=0.5, low_pct=-1.0, high_pct=2.0)], 10)
    assert zero.ending == "resolved" and "a CI holds 0" in zero.line
    assert decide(_adaptive(), 2, None, 10).stop is False  # a variant's spread unknown: never resolved


def test_max_and_the_time_budget_end_it_and_say_so():
    wide = [Spread(variant="b", diff_pct=-5.0, low_pct=-15.0, high_pct=5.0)]
    assert decide(_adaptive(), 6, wide, 10).ending == "max repetitions"
    # 3 rounds in 30 min: a 4th (10 min) would end at 40 min, past a 35 min budget; one at 45 min still fits
    assert decide(_adaptive(**{"time-budget": "35m"}), 3, wide, 1800).ending == "time budget"
    assert decide(_adaptive(**{"time-budget": "45m"}), 3, wide, 1800).stop is False
    line = decide(_adaptive(**{"time-budget": "35m"}), 3, wide, 1800).line
    assert "time budget 35m00s spent (30m00s used and a round takes about 10m00s" in line
    assert seconds_value("1.5h") == 5400 and seconds_value(90) == 90
