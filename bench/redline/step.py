"""One redline step: the task at a fixed target throughput (open model: requests are due on a schedule, latency
counts from the due time), a warmup and a measured period; whether it met the objective; when to stop it early."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pydantic import BaseModel

from bench.api import ObjectiveResult
from bench.driver.samples import RequestSample
from bench.redline.objective import RedlineSpec
from bench.results.stats import normalize_frame, request_failed
from bench.track.arrival import CONSTANT
from bench.track.model import Task


class StepResult(BaseModel):
    step: int  # 1-based
    task: str  # the step's own task name, under which its samples are stored
    target: float  # requests/s
    achieved: float  # successful requests/s over the measured period
    throughput: float  # successful work/s in the task's unit (docs/s for a bulk)
    unit: str
    requests: int  # measured requests
    errors: int  # measured failed requests
    error_rate: float
    latency_ms: dict[str, float]  # "50", "99" (and the objective's percentile) -> ms, from the due time
    service_time_ms: dict[str, float]
    duration_s: float  # measured: first due time to last completion
    stopped_early: str | None = None  # why the step was stopped before its end (latency ran away)
    met: bool
    why: str  # the first criterion it failed, or "met"
    miss: str = ""  # that criterion in a word: "stopped", "latency", "errors", "throughput" ("" when met)
    objectives: list[ObjectiveResult] = []  # the registered step objectives' verdicts (e.g. replication lag)


def step_name(task: str, step: int) -> str:
    return f"{task} [redline step {step}]"


def step_task(task: Task, target: float, step: int, spec: RedlineSpec) -> Task:
    """The task as one open-model step: paced at ``target`` requests/s over all its clients, warmup and measured
    periods by time, a bulk looped over its corpus so it never runs out before the period ends.

    The clients are phased evenly (client i starts i / target s after the first, Rally's ramp-up), so requests
    are due every 1 / target s rather than in bursts of one per client; the warmup is at least that ramp-up, so
    every client runs before the measured period starts."""
    params = dict(task.operation.params)
    if task.operation.operation_type == "bulk":
        params["looped"] = True
    if task.arrival is not None:  # an arrival-rate task stays one: each step at the step's rate, no ramp needed
        arrival = task.arrival.model_copy(update={"kind": CONSTANT, "rate": target, "stages": [], "start_rate": 0.0})
        return Task.model_validate({**task.model_dump(by_alias=False), **{
            "name": step_name(task.name, step), "schedule": CONSTANT, "arrival": arrival,
            "warmup_time_period": spec.warmup_s, "time_period": spec.measure_s,
            "operation": task.operation.model_copy(update={"params": params})}})
    ramp = task.clients / target
    return Task.model_validate({**task.model_dump(by_alias=False), **{
        "name": step_name(task.name, step), "target_throughput": target, "throughput_unit": "ops/s",
        "target_interval": None, "warmup_time_period": max(spec.warmup_s, ramp), "time_period": spec.measure_s,
        "warmup_iterations": None, "iterations": None, "ramp_up_time_period": ramp,
        "operation": task.operation.model_copy(update={"params": params})}})


def lowest_target(spec: RedlineSpec, clients: int) -> float:
    """Below one request per client per step the clients cannot be phased within a step of sensible length."""
    return clients / (spec.warmup_s + spec.measure_s)


def _pct(values: np.ndarray, p: float) -> float:
    return float(np.percentile(values, p)) * 1000.0 if len(values) else math.nan


def _key(p: float) -> str:
    return f"{p:g}"


def evaluate_step(spec: RedlineSpec, step: int, task: str, target: float, samples: pd.DataFrame,
                  stopped_early: str | None = None) -> StepResult:
    """A step's figures from its samples (warmup left out) and whether they meet the objective: the percentile
    of latency at most the objective, the error rate at most the allowed one, the task kept up with its target
    (successful requests/s at least (1 - tolerance) x target: requests that were due but never sent, because
    the clients were still waiting for earlier answers when the period ended, are not throughput), and the step
    ran to its end."""
    df = samples[~samples["warmup"].astype(bool)] if not samples.empty else samples
    pcts = sorted({50.0, 99.0, spec.percentile})
    unit = str(samples["unit"].iloc[0]) if not samples.empty else "ops"
    if df.empty:
        return StepResult(step=step, task=task, target=target, achieved=0.0, throughput=0.0, unit=unit,
                          requests=0, errors=0, error_rate=0.0, latency_ms={}, service_time_ms={}, duration_s=0.0,
                          stopped_early=stopped_early, met=False, why=stopped_early or "no measured request",
                          miss="stopped" if stopped_early else "throughput")
    failed = request_failed(df)
    ok = df[~failed]
    start = float(df["absolute_time"].min())
    end = float((df["absolute_time"] + df["latency"]).max())
    duration = max(end - start, 1e-9)
    achieved = len(ok) / duration
    # As in the summary: a bulk with item failures adds the documents that did not fail.
    answered = df[df["success"].astype(bool)]
    throughput = float((answered["units"] - answered["failed_units"]).sum()) / duration
    latency = df["latency"].to_numpy(dtype=float)
    service = df["service_time"].to_numpy(dtype=float)
    lat = {_key(p): _pct(latency, p) for p in pcts}
    svc = {_key(p): _pct(service, p) for p in pcts}
    errors = int(failed.sum())
    error_rate = errors / len(df)
    checks = [
        (stopped_early is None, "stopped", f"stopped early: {stopped_early}"),
        (spec.latency_ms is None or lat[_key(spec.percentile)] <= spec.latency_ms, "latency",
         f"p{spec.percentile:g} latency {lat[_key(spec.percentile)]:,.1f} ms > {spec.latency_ms or 0:,.6g} ms"),
        (error_rate <= spec.max_error_rate, "errors",
         f"error rate {error_rate * 100:.3g} % > {spec.max_error_rate * 100:.3g} %"),
        (achieved >= (1 - spec.tolerance) * target, "throughput",
         f"achieved {achieved:,.4g} requests/s < {(1 - spec.tolerance) * 100:g} % of the target"),
    ]
    miss, why = next(((word, msg) for good, word, msg in checks if not good), ("", "met"))
    return StepResult(step=step, task=task, target=target, achieved=achieved, throughput=throughput, unit=unit,
                      requests=len(df), errors=errors, error_rate=error_rate, latency_ms=lat, service_time_ms=svc,
                      duration_s=duration, stopped_early=stopped_early, met=not miss, why=why, miss=miss)


def with_objectives(result: StepResult, verdicts: list[ObjectiveResult]) -> StepResult:
    """The step judged by its step objectives too: it meets the whole objective only when it met its own and
    every one of theirs; the first criterion it failed is named (its own first)."""
    failed = next((v for v in verdicts if not v.met), None)
    if result.met and failed is not None:
        return result.model_copy(update={"objectives": verdicts, "met": False, "why": failed.why,
                                         "miss": failed.miss or failed.key})
    return result.model_copy(update={"objectives": verdicts})


def samples_frame(samples: list[RequestSample]) -> pd.DataFrame:
    """A step's samples as the store gives them back."""
    return normalize_frame(pd.DataFrame(samples, columns=list(RequestSample._fields)))


class RunawayWatch:
    """Ends a step early once it cannot meet the objective any more, so a target far above the redline does not
    spend its whole period queueing: a latency above ``runaway`` x the objective, or more measured requests
    over the objective (or failed) than the objective's percentile (error rate) allows of every request the
    step can hold."""

    def __init__(self, spec: RedlineSpec, task: str, target: float, clients: int) -> None:
        self.spec = spec
        self.task = task
        # The most measured requests the step can hold: its schedule, plus one per client for the edges.
        self.most = target * spec.measure_s + clients
        self.over = 0
        self.failed = 0
        self.reason: str | None = None

    def see(self, batch: list[RequestSample]) -> bool:
        """Take a batch of samples; True once the step should stop (``reason`` says why)."""
        if self.spec.latency_ms is None:
            return self._errors_only(batch)
        limit_ms = self.spec.latency_ms
        for s in batch:
            if s.task != self.task:
                continue
            ms = s.latency * 1000.0
            if ms > self.spec.runaway * limit_ms:
                self.reason = (f"a latency of {ms:,.0f} ms is over {self.spec.runaway:g} x the objective "
                               f"({limit_ms:,.6g} ms)")
                return True
            if s.warmup:
                continue
            self.over += ms > limit_ms
            self.failed += (not s.success) or s.failed_units > 0
        # +1: the interpolated percentile of N values is surely over the objective only past this many.
        if self.over > (1 - self.spec.percentile / 100.0) * self.most + 1:
            self.reason = (f"{self.over} measured requests over {limit_ms:,.6g} ms: the p{self.spec.percentile:g} "
                           "cannot meet the objective any more")
        elif self.failed > self.spec.max_error_rate * self.most:
            self.reason = f"{self.failed} measured requests failed: the error rate cannot meet the objective any more"
        return self.reason is not None

    def _errors_only(self, batch: list[RequestSample]) -> bool:
        """Without a latency objective only the error rate can end a step early."""
        self.failed += sum((not s.success) or s.failed_units > 0 for s in batch if s.task == self.task
                           and not s.warmup)
        if self.failed > self.spec.max_error_rate * self.most:
            self.reason = f"{self.failed} measured requests failed: the error rate cannot meet the objective any more"
        return self.reason is not None
