"""A race's thresholds: gathered from ``--threshold``, the track and its challenge and checked before anything
starts; watched while the race runs for those with abort-on-fail (a ``StepListener``: the coordinator ends the race
when one fails, keeping what was measured); judged at the end into the summary's ``thresholds`` section."""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np
import pandas as pd

from bench.driver.coordinator import StepListener
from bench.driver.samples import RequestSample
from bench.race.options import RaceOptions
from bench.results import thresholds as th
from bench.results.summary import Summary
from bench.track.formats import format_at
from bench.track.model import Challenge, Track
from bench.util.errors import ConfigError

# What a watch can judge from samples as they come; the rest is known only once a task has ended.
LIVE_KINDS = ("latency", "service_time", "error_rate")
EVAL_EVERY_S = 0.5  # how often the running figures are judged (percentiles over all samples so far)
STATUS = "aborted-by-threshold"  # the stored status of a race a threshold stopped


def race_thresholds(opts: RaceOptions, track: Track, challenge: Challenge) -> list[th.Threshold]:
    """Every threshold of the race, understood against the challenge's tasks; a wrong one is one line."""
    from bench.results.threshold_spec import specs_of

    file = format_at(track.root).spec_file if track.root.is_dir() else "track.json"
    specs = [*opts.thresholds, *specs_of(track.thresholds or None, f"{track.root.name}/{file}"),
             *specs_of(challenge.thresholds or None, f"{track.root.name}/{file} challenge '{challenge.name}'")]
    tasks = [t.name for t in challenge.tasks()]
    out = [th.understand(s, tasks) for s in specs]
    for t in out:
        if t.spec.abort_on_fail and t.kind not in LIVE_KINDS:
            raise ConfigError(f"{t.spec.origin} {t.spec.text!r}: abort-on-fail needs a metric known while the race "
                              f"runs (latency, service time, error rate); {t.metric} is known only at the end: drop "
                              f"abort-on-fail")
    return out


class _Running:
    """One task's measured samples so far."""

    def __init__(self) -> None:
        self.latency: list[float] = []
        self.service_time: list[float] = []
        self.failed = 0
        self.first_seen = time.monotonic()


class ThresholdWatch(StepListener):
    """Judges the abort-on-fail thresholds on the samples so far; ``stop()`` then says why the race must end."""

    def __init__(self, thresholds: list[th.Threshold]) -> None:
        self.all = thresholds
        self.live = [t for t in thresholds if t.spec.abort_on_fail]
        self.tasks: dict[str, _Running] = defaultdict(_Running)
        self.reason: str | None = None
        self.stopped_by: str | None = None  # the threshold's text
        self._last = 0.0

    def samples(self, batch: list[RequestSample]) -> None:
        if not self.live or self.reason is not None:
            return
        for s in batch:
            if s.warmup:
                continue
            run = self.tasks[s.task]
            run.latency.append(s.latency)
            run.service_time.append(s.service_time)
            run.failed += (not s.success) or s.failed_units > 0
        now = time.monotonic()
        if now - self._last >= EVAL_EVERY_S:
            self._last = now
            self._judge(now)

    def step_ended(self) -> None:
        if self.live and self.reason is None:
            self._judge(time.monotonic())  # the last batches of a short step

    def stop(self) -> str | None:
        return self.reason

    def _judge(self, now: float) -> None:
        for t in self.live:
            names = list(self.tasks) if t.spec.scope == th.EVERY_TASK else [t.spec.scope]
            for name in names:
                run = self.tasks.get(name)
                if run is None or not run.latency or now - run.first_seen < t.spec.delay_abort_eval_s:
                    continue
                value = _value(t, run)
                if value is not None and not t.holds(value):
                    self.stopped_by = t.spec.text
                    self.reason = (f"{t.spec.text} failed on task '{name}': "
                                   f"{th.format_measured(value, t.unit)} after {len(run.latency):,} measured "
                                   f"requests (abort-on-fail)")
                    return


def _value(t: th.Threshold, run: _Running) -> float | None:
    n = len(run.latency)
    if t.kind == "error_rate":
        return run.failed / n
    assert t.percentile is not None
    if n < th.min_requests(t.percentile):
        return None  # too few requests for this percentile to mean anything yet
    values = run.latency if t.kind == "latency" else run.service_time
    return float(np.percentile(np.asarray(values) * 1000.0, t.percentile, method="linear"))


def judge(summary: Summary | None, thresholds: list[th.Threshold], samples: pd.DataFrame,
          watch: ThresholdWatch | None) -> Summary | None:
    """The summary with the thresholds' verdicts (section and notes); as it was when the race had none."""
    if not thresholds or summary is None:  # nothing measured at all: that is the run's verdict (exit_status)
        return summary
    aborted = watch.reason if watch is not None else None
    ran = set(samples["task"]) if not samples.empty else set()
    results = th.evaluate(thresholds, summary, samples, watch.stopped_by if watch else None, ran)
    return summary.with_section(th.SECTION, th.section(results, aborted), notes=th.notes(results, aborted))
