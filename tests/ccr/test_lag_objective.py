"""The ccr-lag step objective's spec and verdict, pure: an unknown or too sparsely read lag fails a step, never
passes it; the budget and the cool-down's catch-up decide the rest."""

from __future__ import annotations

import pytest

from bench import extensions
from bench.api import StepWindow
from bench.ccr.ccr_extension import setup as ccr_setup
from bench.ccr.lag_objective import LagObjective, Reading, parse_lag_objective
from bench.redline.objective import parse_redline
from bench.util.errors import ConfigError

W = StepWindow(started=100.0, measured_from=101.0, ended=105.0)  # 4 s measured


def _readings(values: list[float | None], why: str = "") -> list[Reading]:
    return [Reading(t=101.0 + i * 0.5, lag_s=v, why=why if v is None else "") for i, v in enumerate(values)]


def test_the_redline_spec_takes_ccr_lag_instead_of_or_besides_latency() -> None:
    extensions.register("ccr", ccr_setup)
    spec = parse_redline("task:index-append,ccr-lag:p99:5s")
    assert spec.latency_ms is None and spec.objectives == {"ccr-lag": "p99:5s"}
    assert spec.objective == "errors ≤ 0 %, follower time lag p99 ≤ 5 s and caught up within the cool-down"
    both = parse_redline("task:t,p99:1s,ccr-lag:p95:500ms,cooldown:3s")
    assert both.latency_ms == 1000 and both.cooldown_s == 3 and "p95 ≤ 0.5 s" in both.objective
    for text, message in (("task:t,ccr-lag:p99", "--redline: ccr-lag:p99: 'p99' is not pNN:DURATION"),
                          ("task:t,ccr-lag:5s", "(e.g. ccr-lag:p99:5s)"),
                          ("task:t", "--redline: needs p99:500ms or ccr-lag:p99:5s")):
        with pytest.raises(ConfigError) as e:
            parse_redline(text)
        assert message in str(e.value), str(e.value)


def test_a_lag_within_budget_read_every_half_second_and_caught_up_meets_it() -> None:
    o = parse_lag_objective("p99:1s")
    v = o.verdict(_readings([0.1, 0.2, 0.3, 0.2, 0.4, 0.3, 0.2, 0.3, 0.1]), W, 1.0, 0.3, 0)
    assert v.met and v.why == "met" and v.figures["catch-up s"] == 0.3
    assert v.figures["lag p99 s"] == pytest.approx(0.4, abs=0.01) and v.figures["readings"] == 9


@pytest.mark.parametrize(("values", "caught", "behind", "miss", "why"), [
    ([0.1, None, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1], 0.2, 0, "lag unknown", "lag unknown in 1 of 8 readings: paused"),
    ([0.1, 0.1, 0.1], 0.2, 0, "lag unknown", "lag unknown: 3 readings in 4.0 s measured (needs one a second)"),
    ([0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0], 0.5, 0, "lag", "follower time lag p99 3.9"),
    ([0.1] * 8, None, 120, "catch-up", "did not catch up within the 1 s cool-down (120 operations behind"),
    ([0.1] * 8, None, None, "lag unknown", "catch-up unknown"),
])
def test_an_unknown_sparse_or_too_high_lag_or_no_catch_up_fails_the_step_with_its_reason(
        values: list[float | None], caught: float | None, behind: int | None, miss: str, why: str) -> None:
    o: LagObjective = parse_lag_objective("p99:1s")
    v = o.verdict(_readings(values, "paused"), W, 1.0, caught, behind)
    assert not v.met and v.miss == miss and why in v.why, v.why
