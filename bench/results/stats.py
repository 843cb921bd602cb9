"""Statistics over request samples: percentiles, per-second throughput, error rates.

Pure functions over a pandas DataFrame whose columns are the RequestSample fields (see
``samples_frame``; ``TrialStore.samples`` returns the same shape). No I/O.

Choices (documented because they change numbers):
- Percentiles use linear interpolation between closest ranks (numpy ``method="linear"``, Hyndman & Fan
  type 7, the numpy/pandas default). Empty input gives no percentiles rather than NaN.
- Throughput counts successful work only (unlike Rally): all units of a request that succeeded, none of one
  that failed, and the items that did not fail of a bulk with item failures. Failed requests stay in the
  time base (they took the task's time), so a task that is half failures shows half the throughput. A task
  without any successful work has no throughput at all; failures are reported by the error statistics.
- A request completes at ``absolute_time + latency`` (scheduled start + latency) and was being served
  during the ``service_time`` before that. Its units count as done uniformly over that service interval
  (a 3 s bulk of 5,000 docs adds ~1,667 docs to each of three seconds), so requests longer than a bucket
  do not produce artificial empty seconds; units are conserved exactly. Instantaneous requests (service
  time 0) count wholly at their completion. This gives the task's completed work F(t) over time, built
  from all its samples, warmup ones included: a bulk started in the warmup and finished in the measured
  part did part of its work there, and leaving it out made the first measured second read about half the
  cluster's rate (3.0 k docs/s where the index counted 10.5 k).
- Buckets are 1 s (Rally's bucket is 1 s too: ``bucket_interval_secs=1`` in its ``ThroughputCalculator``,
  the only value it is ever called with), aligned to the phase start (the earliest scheduled start of the
  phase's samples), and only whole seconds are buckets: a partial last second ends at a completion, and work
  divided by a span that ends exactly at a completion overstates the rate (20 paced ops/s read 20.8).
  Only a phase shorter than one second is one bucket over its whole span. The per-second series (plots,
  ``throughput``) is F's increase in each bucket: the cluster's rate second by second. Seconds after the
  first client finished the task (``full_load`` false: clients ran out of work one by one, or the time
  period ended and the last requests drained) are kept in the series but not drawn: their lower rate is
  the load ending, not the cluster slowing down.
- Min/median/max are Rally's figure, computed from F: at the end of each whole measured second, the work
  done since the task's first request divided by the time since then (``running_mean``). Rally's
  ``ThroughputCalculator`` does exactly this (its count and interval are not reset when warmup ends), so
  warmup work and time are in every value, and the first measured values are averages over the warmup
  plus a second, not one noisy second. Rally counts a request's work when it *starts*, overstating the
  early values by the work in flight (8 clients x 5,000 docs over 11 s: +3.6 k docs/s); bench counts it as
  it is done. Per-second rates on a real cluster vary far more than this (refreshes, merges, GC), which is
  what the series shows; a Min of per-second rates is one bad second, not what Rally users compare.
- Mean throughput is Rally's too: the mean of the same running means. So Min <= Mean <= Max always holds (a
  measured-part rate beside running means that include a slower warmup read Mean 3,306 above Max 3,086).
- The measured-part rate (``rate``, the row "Measured-part throughput") is the work done during the measured
  part divided by its duration, from F, over the same whole seconds as the buckets: from the first scheduled
  start, the whole seconds up to the last completion (the whole span only when it is shorter than a second).
  The tail of a bulk started in the warmup counts, the part it did before the measured part does not. Counting
  the measured requests' units instead undercounts when requests are long against the phase (bulks of 25 s in
  a 20 s period read a third of the index's rate). Ending the window at the last completion instead is one
  interval short for a paced task (N requests span N - 1 intervals plus one latency: 20 paced ops/s read
  20.16-20.17), the partial last second's overstatement. It differs from the running means when the warmup
  ran at another rate: it leaves the warmup out, they do not.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel

from bench.driver.samples import RequestSample

SAMPLE_COLUMNS: list[str] = list(RequestSample._fields)
SERIES_COLUMNS = ["phase", "second", "time", "duration", "units", "requests", "throughput", "running_mean",
                  "complete", "full_load"]


def samples_frame(samples: Iterable[RequestSample]) -> pd.DataFrame:
    """A DataFrame with one row per sample and the RequestSample fields as columns (typed)."""
    df = pd.DataFrame.from_records(list(samples), columns=SAMPLE_COLUMNS)
    return normalize_frame(df)


def normalize_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Give a samples frame stable dtypes (e.g. SQLite returns 0/1 for booleans)."""
    df = df.copy()
    for col in ("success", "warmup"):
        df[col] = df[col].astype(bool)
    for col in ("absolute_time", "relative_time", "latency", "service_time"):
        df[col] = df[col].astype(float)
    for col in ("client_id", "units", "bytes_sent", "failed_units", "bytes_received", "status"):
        if col in df:
            df[col] = df[col].fillna(0).astype("int64")
    df["error_type"] = df["error_type"].astype(object).where(df["error_type"].notna(), None)
    for col in ("error", "meta"):
        if col in df:
            df[col] = df[col].astype(object).where(df[col].notna(), None)
    return df


def percentiles_for_sample_size(n: int) -> list[float]:
    """Rally's rule: only report percentiles the sample size can support."""
    if n <= 0:
        return []
    if n == 1:
        return [100.0]
    if n < 10:
        return [50.0, 100.0]
    if n < 100:
        return [50.0, 90.0, 100.0]
    if n < 1000:
        return [50.0, 90.0, 99.0, 100.0]
    if n < 10000:
        return [50.0, 90.0, 99.0, 99.9, 100.0]
    return [50.0, 90.0, 99.0, 99.9, 99.99, 100.0]


def percentiles(values: Sequence[float] | np.ndarray | pd.Series,
                pcts: Sequence[float]) -> dict[float, float]:
    """Percentiles by linear interpolation (numpy ``method="linear"``); NaNs are ignored; empty -> {}."""
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    if arr.size == 0 or not pcts:
        return {}
    for p in pcts:
        if not 0.0 <= float(p) <= 100.0:
            raise ValueError(f"percentile {p} is outside [0, 100]")
    result = np.percentile(arr, [float(p) for p in pcts], method="linear")
    return {float(p): float(v) for p, v in zip(pcts, result)}


def cumulative_work(units: np.ndarray, served_from: np.ndarray, done: np.ndarray,
                    at: np.ndarray) -> np.ndarray:
    """The work completed by each time in ``at``: F(t) = sum over requests of the share of their units done by t,
    each request's units spread uniformly over its service interval [served_from, done] (an instantaneous
    request counts wholly at its completion, from just after it: a completion exactly at t is not in F(t)).

    F is piecewise linear with slope changes +r_i at served_from_i and -r_i at done_i (r_i = units_i / width_i),
    so F(t) = t*S(t) - T(t) with S, T prefix sums over the sorted breakpoints: O(N log N), no loop over requests.
    """
    at = np.asarray(at, dtype=float)
    served_from = np.minimum(served_from, done)
    width = done - served_from
    spread = width > 1e-9
    out = np.zeros(at.shape, dtype=float)
    if (~spread).any():
        steps_t = np.sort(done[~spread])
        steps_u = np.concatenate([[0.0], np.cumsum(units[~spread][np.argsort(done[~spread], kind="stable")])])
        # A completion exactly at t is not yet done at t: it belongs to the bucket [t, t + 1).
        out += steps_u[np.searchsorted(steps_t, at, side="left")]
    if spread.any():
        rate = units[spread] / width[spread]
        times = np.concatenate([served_from[spread], done[spread]])
        deltas = np.concatenate([rate, -rate])
        order = np.argsort(times, kind="stable")
        times, deltas = times[order], deltas[order]
        s_cum = np.concatenate([[0.0], np.cumsum(deltas)])
        t_cum = np.concatenate([[0.0], np.cumsum(deltas * times)])
        pos = np.searchsorted(times, at, side="right")
        out += at * s_cum[pos] - t_cum[pos]
    return out


class _Work:
    """The task's completed successful work over time, over all its samples (warmup and measurement), so a
    phase's buckets also count the part of a request from the other phase that was served inside them."""

    def __init__(self, df: pd.DataFrame) -> None:
        done = (df["absolute_time"] + df["latency"]).to_numpy(dtype=float)
        self.origin = float(df["absolute_time"].min()) if len(df) else 0.0
        # Relative to the task start: epoch seconds squared lose precision in the prefix sums.
        self.done = done - self.origin
        self.served_from = self.done - df["service_time"].to_numpy(dtype=float)
        self.units = successful_units(df).to_numpy(dtype=float)
        # Load starts ending when the first client is done with the task (its share used up, or the time period
        # over and its last request answered): later seconds have fewer clients working.
        ends = pd.Series(done, index=df.index).groupby(df["client_id"].to_numpy()).max()
        self.first_client_done = float(ends.min()) if len(ends) else 0.0

    def at(self, t: np.ndarray) -> np.ndarray:
        return cumulative_work(self.units, self.served_from, self.done, np.asarray(t, dtype=float) - self.origin)

    def completions(self, edges: np.ndarray) -> np.ndarray:
        """Requests completing in each [edges[k], edges[k+1]) (the last interval closed)."""
        d = np.sort(self.done + self.origin)
        counts = np.searchsorted(d, edges, side="left")
        counts[-1] = np.searchsorted(d, edges[-1], side="right")
        return np.diff(counts)


def _phase_series(work: _Work, phase_df: pd.DataFrame, phase: str) -> pd.DataFrame:
    if phase_df.empty:
        return pd.DataFrame(columns=SERIES_COLUMNS)
    start = float(phase_df["absolute_time"].min())
    end = float((phase_df["absolute_time"] + phase_df["latency"]).max())
    span = max(end - start, 0.0)
    full = math.floor(span + 1e-9)
    if full >= 1:
        # Whole seconds only: a partial last second ends at a completion, which overstates its rate.
        edges = start + np.arange(full + 1, dtype=float)
        durations = np.ones(full)
    else:
        # A phase shorter than a second is one bucket over its whole span, its last completion included.
        edges = np.array([start, end + 1e-9])
        durations = np.array([span])
    cum = work.at(edges)
    units = np.diff(cum)
    # Rally's figure: the mean since the task's first request, at each bucket's end edge.
    elapsed = edges[1:] - work.origin
    with np.errstate(divide="ignore", invalid="ignore"):
        tput = np.where(durations > 0, units / np.where(durations > 0, durations, 1.0), np.nan)
        running = np.where(elapsed > 0, cum[1:] / np.where(elapsed > 0, elapsed, 1.0), np.nan)
    return pd.DataFrame({
        "phase": phase,
        "second": edges[:-1] - start,
        "time": edges[:-1],
        "duration": durations,
        "units": units,
        "requests": work.completions(edges).astype("int64"),
        "throughput": tput,
        "running_mean": running,
        "complete": durations >= 1.0 - 1e-9,
        "full_load": edges[1:] <= work.first_client_done + 1e-9,
    })


def throughput_series(samples_df: pd.DataFrame, task: str) -> pd.DataFrame:
    """Per-second throughput of one task, warmup and measurement phases separately (see module doc).

    Columns: phase ("warmup" | "measurement"), second (bucket start, seconds since the phase start),
    time (bucket start, epoch seconds), duration (1 s; less only for a phase shorter than a second, then one
    bucket), units completed in the bucket (work of requests served across its edges shared out), requests
    completing in it, throughput (units / duration), running_mean (the task's work since its first request
    divided by the time since then, at the bucket's end: Rally's figure), complete (a full second),
    full_load (the bucket ended before the first client finished the task: every client was still working).
    Seconds in which nothing completed are present with zero throughput.
    """
    df = samples_df[samples_df["task"] == task]
    if df.empty:
        return pd.DataFrame(columns=SERIES_COLUMNS)
    return _series(_Work(df), df)


def _series(work: _Work, df: pd.DataFrame) -> pd.DataFrame:
    warm = df["warmup"].astype(bool)
    parts = [_phase_series(work, df[warm], "warmup"), _phase_series(work, df[~warm], "measurement")]
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=SERIES_COLUMNS)
    return pd.concat(parts, ignore_index=True)


class ThroughputStats(BaseModel):
    min: float
    mean: float
    median: float
    max: float
    unit: str  # e.g. "docs/s"
    # How min/mean/median/max were computed: THROUGHPUT_RULE (see module doc). "running-mean" had the
    # measured-part rate as its mean; trials stored before that carry no value and were the per-second rates.
    rule: str = "per-second"
    rate: float | None = None  # the measured part's work / its whole seconds (see module doc)


THROUGHPUT_RULE = "rally-running-mean"


def measured_duration(samples_df: pd.DataFrame) -> float:
    """Seconds from the earliest scheduled start to the last completion of the given samples."""
    if samples_df.empty:
        return 0.0
    start = float(samples_df["absolute_time"].min())
    end = float((samples_df["absolute_time"] + samples_df["latency"]).max())
    return max(end - start, 0.0)


def throughput_stats(samples_df: pd.DataFrame, task: str) -> ThroughputStats | None:
    """min/mean/median/max of the task's running mean at each whole second of its measurement phase (see module
    doc), Rally's four figures; rate = the work done in the measured part's whole seconds (from its first
    scheduled start) / their duration. Pass the task's warmup samples too: the running mean starts at the
    task's first request, as Rally's does. None when the task has no measurement samples or no successful
    work."""
    df = samples_df[samples_df["task"] == task]
    measured = df[~df["warmup"].astype(bool)]
    if measured.empty:
        return None
    unit = f"{measured['unit'].iloc[0]}/s"
    total_units = float(successful_units(measured).sum())
    if total_units <= 0:
        return None  # nothing succeeded: a throughput of failures would be a made-up number
    duration = measured_duration(measured)
    if duration <= 0:
        return None  # every request completed the instant it was scheduled: no time base
    work = _Work(df)
    series = _series(work, df)
    values = series.loc[series["phase"] == "measurement", "running_mean"].to_numpy(dtype=float)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None
    start = float(measured["absolute_time"].min())
    window = float(math.floor(duration + 1e-9)) or duration  # whole seconds, as the buckets (see module doc)
    done = work.at(np.array([start, start + window + (0.0 if window < duration else 1e-9)]))
    return ThroughputStats(min=float(values.min()), mean=float(values.mean()), median=float(np.median(values)),
                           max=float(values.max()), unit=unit, rule=THROUGHPUT_RULE,
                           rate=float(done[1] - done[0]) / window)


class ErrorStats(BaseModel):
    requests: int
    failed_requests: int
    error_rate: float  # failed_requests / requests, 0..1
    units: int
    failed_units: int  # e.g. bulk items that failed, plus all units of requests that failed outright
    unit_error_rate: float  # failed_units / units, 0..1
    # Failed requests per error type ("http-429", "timeout", ...; "item-errors": a bulk answered 200 whose
    # items failed). Lets a reader tell the cluster's answers from failures on bench's side.
    by_type: dict[str, int] = {}
    # Failed requests that got no HTTP answer at all (connection, timeout, client exception): bench-side
    # or network failures, as opposed to the cluster answering with an error.
    unanswered: int = 0


def successful_units(samples_df: pd.DataFrame) -> pd.Series:
    """The work each request got done: all units of a success, none of a failed request, and for a request
    whose failed items were counted (a bulk with item failures) the items that did not fail."""
    units = samples_df["units"]
    failed_units = samples_df["failed_units"]
    counted = failed_units > 0
    partial = (units - failed_units).clip(lower=0)
    return units.where(samples_df["success"].astype(bool) & ~counted, partial.where(counted, 0))


def request_failed(samples_df: pd.DataFrame) -> pd.Series:
    """A request failed if it got an error (HTTP/transport) or, for bulk, if any of its items failed."""
    return ~samples_df["success"].astype(bool) | (samples_df["failed_units"] > 0)


def error_stats(samples_df: pd.DataFrame) -> ErrorStats:
    """Error counts of the given samples (callers choose the task and phase)."""
    n = len(samples_df)
    failed = request_failed(samples_df)
    n_failed = int(failed.sum())
    units = int(samples_df["units"].sum())
    # The runner counts failed items where it knows them (a bulk with some failed documents); a request
    # that failed without such a count failed all its units.
    ok = samples_df["success"].astype(bool)
    counted = samples_df["failed_units"] > 0
    failed_units = int(samples_df.loc[counted, "failed_units"].sum()
                       + samples_df.loc[~ok & ~counted, "units"].sum())
    types = samples_df.loc[failed, "error_type"].fillna("item-errors")
    by_type = {str(k): int(v) for k, v in types.value_counts().sort_index().items()}
    status = samples_df["status"] if "status" in samples_df else pd.Series(0, index=samples_df.index)
    unanswered = int((~ok & (status == 0)).sum())
    return ErrorStats(requests=n, failed_requests=n_failed, error_rate=(n_failed / n) if n else 0.0,
                      units=units, failed_units=failed_units,
                      unit_error_rate=(failed_units / units) if units else 0.0,
                      by_type=by_type, unanswered=unanswered)
