"""``ccr:lag_*`` thresholds: registered by the CCR extension through bench.api (the core names no CCR), read from the
CCR section's followers (the slowest one), an error when no lag was measured. On the real OpenSearch pair a lag
threshold rides along the catch-up race of tests/ccr/test_ccr_live.py (a race of its own cost 46 s)."""

from __future__ import annotations

from bench.results.summary import Summary
from bench.results.threshold_spec import parse_cli
from bench.results.thresholds import evaluate, understand


def _judge(text: str, summary: Summary):
    [r] = evaluate([understand(parse_cli(text), ["index"])], summary, None)
    return r


def test_lag_thresholds_read_the_slowest_follower_and_refuse_to_pass_without_a_lag() -> None:
    ccr = {"followers": [{"cluster": "f1", "index": "a", "lag_s_p99": 0.5, "lag_ops_max": 10},
                         {"cluster": "f2", "index": "a", "lag_s_p99": 7.25, "lag_ops_max": 3},
                         {"cluster": "f3", "index": "b", "lag_s_p99": None}]}
    s = Summary(sections={"ccr": ccr})
    r = _judge("ccr:lag_p99<5s", s)
    assert (r.result, r.value, r.unit, r.task) == ("failed", 7.25, "s", "ccr")
    assert _judge("ccr:lag_p99<10000ms", s).result == "passed"  # units convert to the metric's (s)
    assert _judge("ccr:lag_ops_max<=10", s).result == "passed"
    unknown = _judge("ccr:lag_p99<5s", Summary(sections={"ccr": {"followers": [{"cluster": "f", "index": "a"}]}}))
    assert unknown.result == "error" and "no follower lag was measured" in unknown.reason
    assert _judge("ccr:lag_p99<5s", Summary()).result == "error"  # a race without CCR
