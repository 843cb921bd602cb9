"""Thresholds as pure functions: k6's syntax read from the flag and from a track's map, limits in the metric's
unit, verdicts from a summary (``dropped`` from the arrival-rate counts), and a threshold bench cannot evaluate
is an error, never a pass."""

from __future__ import annotations

import pandas as pd
import pytest

from bench.results.exit_status import EXIT_OK, EXIT_THRESHOLD, EXIT_UNMEASURED, run_exit_code
from bench.results.stats import ThroughputStats
from bench.results.summary import Summary, TaskSummary
from bench.results.threshold_spec import parse_cli, parse_k6_map
from bench.results.thresholds import evaluate, min_requests, section, understand
from bench.util.errors import ConfigError


def _task(name: str = "q", requests: int = 200, **kw) -> TaskSummary:
    return TaskSummary(task=name, operation_type="search", unit="ops", requests=requests,
                       throughput=ThroughputStats(min=90, mean=100, median=100, max=110, unit="ops/s"),
                       latency={50.0: 4.0, 90.0: 8.0, 99.0: 20.0, 100.0: 30.0},
                       service_time={50.0: 3.0, 90.0: 6.0, 99.0: 15.0, 100.0: 25.0}, **kw)


def _judge(text: str, summary: Summary, samples: pd.DataFrame | None = None):
    return evaluate([understand(parse_cli(text), [t.task for t in summary.tasks])], summary, samples)


@pytest.mark.parametrize("text, metric, op, limit, unit", [
    ("q:p99_latency<800ms", "p99_latency", "<", 800.0, "ms"),
    ("q:p(95)<500", "p95_latency", "<", 500.0, "ms"),  # k6's bare p(N): ms
    ("q:p(99.9)_service_time<=1.5s", "p99.9_service_time", "<=", 1500.0, "ms"),
    ("q:max_latency<2m", "p100_latency", "<", 120_000.0, "ms"),
    ("q:error_rate<0.1%", "error_rate", "<", 0.001, "%"),
    ("q:error_rate<0.001", "error_rate", "<", 0.001, "%"),
    ("*:dropped<1%", "dropped", "<", 0.01, "%"),
    ("q:mean_throughput>=50", "mean_throughput", ">=", 50.0, ""),
])
def test_expressions_are_read_in_the_metrics_unit(text: str, metric: str, op: str, limit: float, unit: str) -> None:
    t = understand(parse_cli(text), ["q"])
    assert (t.metric, t.op, t.unit) == (metric, op, unit) and t.limit == pytest.approx(limit)


def test_k6_map_with_abort_on_fail_and_delay() -> None:
    specs = parse_k6_map({"q": ["p(99)<800ms", {"threshold": "error_rate<1%", "abortOnFail": True,
                                                 "delayAbortEval": "10s"}]}, "track.json")
    assert [(s.text, s.abort_on_fail, s.delay_abort_eval_s) for s in specs] == [
        ("q:p(99)<800ms", False, 0.0), ("q:error_rate<1%", True, 10.0)]
    assert parse_cli("q:p(95)<5,abort-on-fail,delay-abort-eval=500ms").delay_abort_eval_s == 0.5
    with pytest.raises(ConfigError, match=r"track.json thresholds\['q'\]\[0\]: unknown key\(s\) abort"):
        parse_k6_map({"q": [{"threshold": "p(99)<1", "abort": True}]}, "track.json")


def test_verdicts_pass_fail_and_the_measured_value() -> None:
    s = Summary(tasks=[_task()])
    [r] = _judge("q:p99_latency<800ms", s)
    assert (r.result, r.value, r.unit) == ("passed", 20.0, "ms")
    [r] = _judge("q:p99_latency<10ms", s)
    assert r.result == "failed" and r.line == "q:p99_latency<10ms: failed, measured 20 ms"
    [r] = _judge("q:median_throughput>200", s)
    assert (r.result, r.value, r.unit) == ("failed", 100.0, "ops/s")


def test_a_percentile_the_summary_does_not_list_comes_from_the_samples_and_needs_enough_of_them() -> None:
    df = pd.DataFrame({"task": "q", "warmup": False, "latency": [i / 1000.0 for i in range(1, 201)],
                       "service_time": 0.001})
    [r] = _judge("q:p(95)<200", Summary(tasks=[_task()]), df)
    assert r.result == "passed" and r.value == pytest.approx(190.05)  # linear, as the summary's percentiles
    [r] = _judge("q:p(99.9)<100", Summary(tasks=[_task()]), df)
    assert r.result == "error" and "measured 200 requests; p(99.9) needs at least 1,000" in r.reason
    assert (min_requests(50), min_requests(90), min_requests(99), min_requests(100)) == (2, 10, 100, 1)


def test_dropped_is_the_share_of_scheduled_iterations_and_zero_without_a_schedule() -> None:
    [r] = _judge("*:dropped<1%", Summary(tasks=[_task(dropped_iterations=30, scheduled_iterations=1000)]))
    assert (r.result, r.value) == ("failed", 0.03)
    [r] = _judge("*:dropped<1%", Summary(tasks=[_task()]))
    assert (r.result, r.value) == ("passed", 0.0)


def test_what_cannot_be_evaluated_is_an_error_and_exits_unmeasured_never_0() -> None:
    dead = _task("dead", requests=10, failed_requests=10, error_rate=1.0).model_copy(
        update={"throughput": None, "latency": {}, "service_time": {}})
    s = Summary(tasks=[_task(), dead])
    results = evaluate([understand(parse_cli("dead:p50_latency<1s"), ["q", "dead"])], s, None)
    assert [r.result for r in results] == ["error"] and "every request failed" in results[0].reason
    judged = Summary(tasks=[_task()], sections={"thresholds": section(results, None)})
    code, line = run_exit_code(judged, None)
    assert code == EXIT_UNMEASURED and line is not None and "not evaluated" in line
    passed = Summary(tasks=[_task()], sections={"thresholds": section(_judge("q:p99_latency<1s", s), None)})
    assert run_exit_code(passed, None) == (EXIT_OK, None)
    failed = Summary(tasks=[_task()], sections={"thresholds": section(_judge("q:p99_latency<1ms", s), None)})
    assert run_exit_code(failed, None)[0] == EXIT_THRESHOLD
