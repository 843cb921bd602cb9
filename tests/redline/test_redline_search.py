"""The redline's pure parts: the objective option, the search over a known knee, a step's verdict."""

from __future__ import annotations

import pandas as pd
import pytest

from bench.driver.samples import RequestSample
from bench.redline.objective import parse_redline
from bench.redline.search import Outcome, bracket, decide
from bench.redline.step import RunawayWatch, evaluate_step
from bench.util.errors import ConfigError


def _search(knee: float, start: float, **keys: str) -> tuple[list[float], object]:
    spec = parse_redline(",".join(["task:t", "p99:100ms", *(f"{k}:{v}" for k, v in keys.items())]))
    outcomes: list[Outcome] = []
    d = decide(spec, outcomes, start)
    while d.next_target is not None:
        outcomes.append(Outcome(target=d.next_target, passed=d.next_target <= knee))
        d = decide(spec, outcomes, start)
    return [o.target for o in outcomes], d


@pytest.mark.parametrize("knee,start", [(100.0, 30.0), (100.0, 1000.0), (7.3, 1.0), (5000.0, 8.0)])
def test_search_brackets_a_known_knee_within_the_tolerance(knee, start):
    targets, d = _search(knee, start)
    assert d.converged and d.passed is not None and d.failed is not None
    assert d.passed <= knee < d.failed
    assert (d.failed - d.passed) / d.passed <= 0.05
    assert len(targets) <= 20
    # Only a failed first step runs twice.
    repeated = [t for t in set(targets) if targets.count(t) > 1]
    assert repeated == ([start] if start > knee else [])


def test_a_first_step_that_fails_cold_runs_again_and_the_search_goes_on_up():
    spec = parse_redline("task:t,p99:100ms")
    outcomes = [Outcome(target=10.0, passed=False)]
    d = decide(spec, outcomes, 10.0)
    assert d.next_target == 10.0
    outcomes.append(Outcome(target=10.0, passed=True))  # warm now
    d = decide(spec, outcomes, 10.0)
    assert d.next_target == 20.0 and d.passed == 10.0 and d.failed is None


def test_search_ends_at_the_step_limit_and_at_the_allowed_maximum_without_claiming_convergence():
    targets, d = _search(100.0, 1.0, steps="4")
    assert targets == [1.0, 2.0, 4.0, 8.0] and not d.converged and d.passed == 8.0 and d.failed is None
    assert "step limit" in d.reason
    targets, d = _search(1e9, 10.0, max="50")
    assert targets == [10.0, 20.0, 40.0, 50.0] and d.passed == 50.0 and not d.converged
    targets, d = _search(0.0, 1.0)
    assert d.passed is None and "no target" in d.reason and targets[:3] == [1.0, 1.0, 0.5]


def test_a_noisy_pass_above_a_failure_does_not_raise_the_redline():
    assert bracket([Outcome(target=50, passed=True), Outcome(target=100, passed=False),
                    Outcome(target=150, passed=True)]) == (50, 100)


@pytest.mark.parametrize("text,message", [
    ("task:x", "needs p99:500ms"),
    ("p99:5ms", "needs task:index-append"),
    ("task:x,p99:soon", "p99:soon is not a duration"),
    ("task:x,p99:5ms,errors:lots", "errors:lots is not a percentage"),
    ("task:x,p99:5ms,speed:1", "unknown key 'speed'"),
    ("task:x,p99:5ms,tolerance:0%", "tolerance"),
    ("task:x,p99:5ms,start:10,max:5", "start 10 is above max 5"),
])
def test_bad_objectives_are_one_line_naming_the_option(text, message):
    with pytest.raises(ConfigError, match="--redline") as e:
        parse_redline(text)
    assert message in str(e.value) and "\n" not in str(e.value)


def _sample(due: float, latency: float, *, warmup: bool = False, success: bool = True) -> RequestSample:
    return RequestSample("s", "op", "bulk", 0, due, 0.0, latency, min(latency, 0.01), 10, "docs", 100, success,
                         None if success else "http-500", warmup)


def _frame(samples: list[RequestSample]) -> pd.DataFrame:
    from bench.redline.step import samples_frame

    return samples_frame(samples)


def test_a_step_meets_the_objective_only_with_latency_errors_and_throughput_all_in_bounds():
    spec = parse_redline("task:t,p99:100ms,errors:1%,measure:10s")
    on_time = [_sample(i * 0.1, 0.02) for i in range(100)]  # 10 requests/s for 10 s, 20 ms each
    r = evaluate_step(spec, 1, "s", 10.0, _frame([_sample(-1, 5.0, warmup=True), *on_time]))
    assert r.met and r.requests == 100 and r.achieved == pytest.approx(10.0, rel=0.01)
    assert r.throughput == pytest.approx(100.0, rel=0.01) and r.latency_ms["99"] == pytest.approx(20.0)
    # The same samples do not keep up with twice the target.
    assert not evaluate_step(spec, 1, "s", 20.0, _frame(on_time)).met
    # Two slow answers in a hundred: p99 is over 100 ms.
    slow = on_time[:98] + [_sample(9.8, 0.5), _sample(9.9, 0.5)]
    r = evaluate_step(spec, 1, "s", 10.0, _frame(slow))
    assert not r.met and r.why.startswith("p99 latency")
    # Two failures in a hundred: 2 % > 1 %, and failed requests are not throughput.
    failing = on_time[:98] + [_sample(9.8, 0.02, success=False), _sample(9.9, 0.02, success=False)]
    r = evaluate_step(spec, 1, "s", 10.0, _frame(failing))
    assert not r.met and r.errors == 2 and r.why.startswith("error rate")
    assert r.throughput == pytest.approx(98 * 10 / (9.9 + 0.02), rel=0.001)


def test_runaway_watch_stops_a_step_once_it_cannot_pass():
    spec = parse_redline("task:t,p99:100ms,measure:10s,runaway:10")
    # At most 101 measured requests: with 3 over 100 ms their p99 is surely over it. Warmup does not count.
    w = RunawayWatch(spec, "s", 10.0, 1)
    assert not w.see([_sample(0, 0.5), _sample(0.1, 0.5), _sample(0.2, 0.9, warmup=True)])
    assert w.see([_sample(0.3, 0.5)]) and "p99" in (w.reason or "")
    w = RunawayWatch(spec, "s", 10.0, 1)
    assert w.see([_sample(0.0, 1.5, warmup=True)]) and "over 10 x" in (w.reason or "")


@pytest.mark.parametrize("name", ["ccr-redline.yml", "ccr-redline-opensearch.yml"])
def test_the_ccr_redline_experiments_run_the_redline_on_the_bulk_task_of_both_variants(name):
    from pathlib import Path

    from bench.race.experiment import load_experiment, plan, race_options
    from bench.race.race import load_race_track

    exp = load_experiment(Path(__file__).parents[2] / "experiments" / name)
    races = plan(exp, "run")
    assert {r.variant for r in races} == {"baseline", "ccr"}
    for r in races:
        opts = race_options(exp, r, run_id="run")
        spec = parse_redline(opts.redline or "")
        _, challenge, _ = load_race_track(opts)
        # The CCR challenge names its bulk step like the baseline's, so both redlines are one compare row.
        assert spec.task in [s.name for s in challenge.schedule]
