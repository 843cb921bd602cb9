"""Pass/fail thresholds (k6's, for bench's tasks): what a threshold says, how it is read from the command line, a
track or an experiment, and how it is judged against a race's measurements. Pure: specs and figures in, verdicts
out; the race wires them (``bench.race.thresholds``).

A threshold is ``SCOPE:METRIC OP LIMIT``. SCOPE is a task of the challenge, ``*`` (every reported task) or a scope
an extension registers (``register_threshold_metric``; the core names none). A task's metrics:

- ``pN_latency`` / ``pN_service_time`` (k6's ``p(N)`` too; a bare ``p(N)`` is latency, counted from the due time as
  bench reports it), ``median_latency``, ``max_latency`` and the same for service time: ms unless a unit is given;
- ``min_throughput``, ``mean_throughput``, ``median_throughput``, ``max_throughput``: in the task's unit per second;
- ``error_rate`` and ``dropped``: shares of requests (``1%`` or ``0.01``).

A threshold bench cannot evaluate (too few requests for its percentile, every request failed, a scope that measured
nothing) is an error, never a pass.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel

from bench.results.summary import Summary, TaskSummary
from bench.results.threshold_spec import TIME_MS, ThresholdSpec
from bench.util.errors import ConfigError

SECTION = "thresholds"  # its name among a summary's sections
EVERY_TASK = "*"
Verdict = Literal["passed", "failed", "error"]


@dataclass(frozen=True)
class ExtensionMetric:
    """A metric an extension lets thresholds name as ``SCOPE:NAME``: its unit and how to read it from a summary
    (value, or None and why it was not measured)."""

    scope: str
    name: str
    unit: str  # "s", "ms", "%" (a share), or a plain unit
    read: Callable[[Summary], tuple[float | None, str]]
    help: str = ""


_EXTENSION_METRICS: dict[tuple[str, str], ExtensionMetric] = {}


def register_threshold_metric(scope: str, name: str, *, unit: str,
                              read: Callable[[Summary], tuple[float | None, str]], help: str = "") -> None:
    """Let thresholds name ``scope:name`` (e.g. an extension's ``ccr:lag_p99``); ``read`` gives the measured value
    in ``unit`` from the race's summary, or None and one line saying why nothing was measured."""
    _EXTENSION_METRICS[(scope, name)] = ExtensionMetric(scope, name, unit, read, help)


def extension_metrics() -> list[ExtensionMetric]:
    from bench import extensions

    extensions.load()
    return sorted(_EXTENSION_METRICS.values(), key=lambda m: (m.scope, m.name))


@dataclass(frozen=True)
class Threshold:
    """A threshold understood: the metric it reads and its limit in the metric's unit."""

    spec: ThresholdSpec
    metric: str  # canonical: "p99_latency", "error_rate", or an extension metric's name
    kind: str  # latency, service_time, throughput, error_rate, dropped, extension
    percentile: float | None  # for latency and service time
    op: str
    limit: float
    unit: str  # of limit and of the measured value: "ms", "%", "s", "" (the task's throughput unit)

    def holds(self, value: float) -> bool:
        return _OPS[self.op](value, self.limit)


_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b, "===": lambda a, b: a == b, "!=": lambda a, b: a != b}
_EXPR = re.compile(r"^\s*(?P<metric>[A-Za-z_][\w.()]*?)\s*(?P<op>===|==|!=|<=|>=|<|>)\s*"
                   r"(?P<value>[-+]?(?:\d+(?:\.\d*)?|\.\d+))\s*(?P<unit>[A-Za-zµ%/]*)\s*$")
_PCT = re.compile(r"^p\(?(?P<p>\d+(?:\.\d+)?)\)?(?:_(?P<what>latency|service_time))?$")
THROUGHPUT = ("min_throughput", "mean_throughput", "median_throughput", "max_throughput")
TASK_METRICS = ("pN_latency", "pN_service_time", "p(N)", "median_latency", "max_latency", "median_service_time",
                "max_service_time", *THROUGHPUT, "error_rate", "dropped")


def understand(spec: ThresholdSpec, tasks: list[str]) -> Threshold:
    """The threshold's metric and limit, checked against the challenge's ``tasks`` and the registered scopes; a
    wrong one is a ConfigError naming where it was written."""
    where = f"{spec.origin} {spec.text!r}"
    m = _EXPR.match(spec.expression)
    if m is None:
        raise ConfigError(f"{where}: not METRIC OP LIMIT; write e.g. p99_latency<800ms, p(95)<500, error_rate<1%")
    name, op, number, unit = m.group("metric"), m.group("op"), float(m.group("value")), m.group("unit")
    if spec.scope == EVERY_TASK or spec.scope in tasks:
        return _task_threshold(spec, where, name, op, number, unit)
    ext = {(e.scope, e.name): e for e in extension_metrics()}
    if (spec.scope, name) in ext:
        e = ext[(spec.scope, name)]
        return Threshold(spec, name, "extension", None, op, _limit(number, unit, e.unit, where), e.unit)
    scopes = sorted({s for s, _ in ext})
    if spec.scope in scopes:
        names = ", ".join(n for s, n in sorted(ext) if s == spec.scope)
        raise ConfigError(f"{where}: scope '{spec.scope}' has no metric {name!r}; its metrics: {names}")
    raise ConfigError(f"{where}: '{spec.scope}' is no task of the challenge (tasks: {', '.join(tasks) or 'none'}) "
                      f"nor a metric scope ({', '.join(scopes) or 'none registered'}); * means every task")


def _task_threshold(spec: ThresholdSpec, where: str, name: str, op: str, number: float, unit: str) -> Threshold:
    aliases = {"median_latency": "p50_latency", "max_latency": "p100_latency", "med": "p50",
               "median_service_time": "p50_service_time", "max_service_time": "p100_service_time"}
    name = aliases.get(name, name)
    if (pm := _PCT.match(name)) is not None:
        p = float(pm.group("p"))
        if not 0 < p <= 100:
            raise ConfigError(f"{where}: percentile {p:g} is outside (0, 100]")
        kind = pm.group("what") or "latency"
        return Threshold(spec, f"p{p:g}_{kind}", kind, p, op, _limit(number, unit, "ms", where), "ms")
    if name in THROUGHPUT:
        if unit and not unit.endswith("/s"):
            raise ConfigError(f"{where}: a throughput limit is a number in the task's unit per second, not {unit!r}")
        return Threshold(spec, name, "throughput", None, op, number, "")
    if name in ("error_rate", "dropped"):
        return Threshold(spec, name, name, None, op, _limit(number, unit, "%", where), "%")
    raise ConfigError(f"{where}: unknown metric {name!r}; a task's metrics: {', '.join(TASK_METRICS)}")


def _limit(number: float, unit: str, base: str, where: str) -> float:
    """The limit in ``base``: ms/s for times (a bare number is already in ``base``), a share for "%" metrics."""
    if base == "%":
        if unit not in ("", "%"):
            raise ConfigError(f"{where}: a rate is a share (0.01) or a percentage (1%), not {unit!r}")
        share = number / 100.0 if unit == "%" else number
        if not 0.0 <= share <= 1.0:
            raise ConfigError(f"{where}: a rate is between 0 and 1 (0 % and 100 %)")
        return share
    if base in ("ms", "s") and unit:
        if unit not in TIME_MS:
            raise ConfigError(f"{where}: unknown time unit {unit!r}; use us, ms, s or m")
        return number * TIME_MS[unit] / TIME_MS[base]
    if unit and unit != base:
        raise ConfigError(f"{where}: the limit's unit is {base or 'none'}, not {unit!r}")
    return number


class ThresholdResult(BaseModel):
    threshold: str  # as written, SCOPE:EXPRESSION
    task: str  # the task (a * threshold has one result per task) or the extension's scope
    metric: str
    op: str
    limit: float
    unit: str
    value: float | None = None  # measured, in ``unit``
    result: Verdict
    reason: str = ""  # an error's: why it could not be evaluated
    abort_on_fail: bool = False
    aborted: bool = False  # this threshold stopped the race
    origin: str = "--threshold"

    @property
    def line(self) -> str:
        """One line: the threshold, its verdict and what was measured."""
        head = f"{self.threshold}" + (f" ({self.task})" if self.task != self.threshold.rpartition(":")[0] else "")
        if self.result == "error":
            return f"{head}: not evaluated: {self.reason}"
        return f"{head}: {self.result}, measured {format_measured(self.value, self.unit)}" + (
            " (stopped the race: abort-on-fail)" if self.aborted else "")


def format_measured(value: float | None, unit: str) -> str:
    if value is None:
        return "nothing"
    if unit == "%":
        return f"{value * 100:.4g} %"
    return f"{value:,.6g}{' ' + unit if unit else ''}"


def min_requests(p: float) -> int:
    """Requests a percentile needs to mean anything: Rally's rule (p99 from 100, p99.9 from 1,000), any p100."""
    return 1 if p >= 100 else math.ceil(100.0 / (100.0 - p) - 1e-9)


def task_value(t: Threshold, ts: TaskSummary, measured: pd.DataFrame | None) -> tuple[float | None, str]:
    """The task's measured value of ``t`` (None and why when there is none). ``measured``: the task's measured
    (non-warmup) samples, for percentiles the summary does not list."""
    if ts.requests == 0:
        return None, f"task '{ts.task}' measured no request (warmup only)"
    if t.kind == "error_rate":
        return ts.error_rate, ""
    if t.kind == "dropped":
        return (ts.dropped_iterations / ts.scheduled_iterations if ts.scheduled_iterations else 0.0), ""
    if t.kind == "throughput":
        if ts.throughput is None:
            return None, f"task '{ts.task}' has no throughput (every request failed)"
        return float(getattr(ts.throughput, t.metric.removesuffix("_throughput"))), ""
    pcts = ts.latency if t.kind == "latency" else ts.service_time
    assert t.percentile is not None
    if not pcts:
        return None, f"task '{ts.task}' has no {t.kind.replace('_', ' ')} (every request failed)"
    if ts.requests < min_requests(t.percentile):
        return None, (f"task '{ts.task}' measured {ts.requests:,} requests; p({t.percentile:g}) needs at least "
                      f"{min_requests(t.percentile):,}")
    if t.percentile in pcts:
        return pcts[t.percentile], ""
    if measured is None or measured.empty:
        return None, f"task '{ts.task}': p({t.percentile:g}) needs the task's samples"
    values = measured[t.kind].to_numpy(dtype=float) * 1000.0
    return float(np.percentile(values, t.percentile, method="linear")), ""


def evaluate(thresholds: list[Threshold], summary: Summary | None, samples: pd.DataFrame | None,
             aborted_by: str | None = None, ran: set[str] | None = None) -> list[ThresholdResult]:
    """Every threshold judged on the race's summary (and its samples, for percentiles the summary does not list).
    ``aborted_by``: the text of the threshold that stopped the race; ``ran``: the tasks that started (a task the
    race never reached is said so)."""
    out: list[ThresholdResult] = []
    tasks = {t.task: t for t in summary.tasks} if summary is not None else {}
    for t in thresholds:
        if t.kind == "extension":
            ext = _EXTENSION_METRICS[(t.spec.scope, t.metric)]
            value, why = ext.read(summary) if summary is not None else (None, "nothing was measured")
            out.append(_result(t, t.spec.scope, value, why, aborted_by))
            continue
        names = list(tasks) if t.spec.scope == EVERY_TASK else [t.spec.scope]
        if not names:
            out.append(_result(t, t.spec.scope, None, "no task was measured", aborted_by))
        for name in names:
            ts = tasks.get(name)
            if ts is None:
                why = (f"task '{name}' never ran: the race stopped before it" if ran is not None and name not in ran
                       else f"task '{name}' has no summary (include-in-reporting: false, or no sample stored)")
                out.append(_result(t, name, None, why, aborted_by))
                continue
            value, why = task_value(t, ts, _measured(samples, name))
            result = _result(t, name, value, why, aborted_by)
            if t.kind == "throughput" and ts.throughput is not None:
                result.unit = ts.throughput.unit  # the task's: docs/s, ops/s
            out.append(result)
    return out


def _measured(samples: pd.DataFrame | None, task: str) -> pd.DataFrame | None:
    if samples is None or samples.empty:
        return None
    # failed requests count in the percentiles, as in the summary
    return samples[(samples["task"] == task) & ~samples["warmup"].astype(bool)]


def _result(t: Threshold, task: str, value: float | None, why: str, aborted_by: str | None) -> ThresholdResult:
    verdict: Verdict = "error" if value is None else ("passed" if t.holds(value) else "failed")
    return ThresholdResult(threshold=t.spec.text, task=task, metric=t.metric, op=t.op, limit=t.limit, unit=t.unit,
                           value=value, result=verdict, reason=why if value is None else "",
                           abort_on_fail=t.spec.abort_on_fail,
                           aborted=aborted_by == t.spec.text and verdict == "failed", origin=t.spec.origin)


def section(results: list[ThresholdResult], aborted: str | None) -> dict[str, Any]:
    return {"results": [r.model_dump(mode="json") for r in results], "aborted": aborted}


def results_of(summary: Summary | None) -> list[ThresholdResult]:
    """The stored verdicts of a summary (none: the race had no thresholds)."""
    if summary is None:
        return []
    return [ThresholdResult.model_validate(r) for r in summary.section(SECTION).get("results", [])]


def aborted_by(summary: Summary | None) -> str | None:
    """The reason the race was stopped by a threshold (abort-on-fail), or None."""
    return summary.section(SECTION).get("aborted") if summary is not None else None


def notes(results: list[ThresholdResult], aborted: str | None) -> list[str]:
    """The summary's notes: each threshold that failed or could not be evaluated, and the early stop."""
    out = [f"Threshold {r.line}" for r in results if r.result != "passed"]
    if aborted:
        out.append(f"The race was stopped early by a threshold: {aborted}; what it measured until then is stored.")
    return out
