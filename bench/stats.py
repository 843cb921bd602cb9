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
  during the ``service_time`` before that. Its units are attributed to the per-second buckets uniformly
  over that service interval (a 3 s bulk of 5,000 docs adds ~1,667 docs to each of three seconds), so
  requests longer than a bucket do not produce artificial empty seconds; units are conserved exactly.
  Instantaneous requests (service time 0) count wholly in the second they complete. Per-second buckets are
  aligned to the phase start (the earliest scheduled start of that phase), so the first bucket is always a
  full second. The last one usually is not: it ends at the last completion, and work divided by a span
  that ends exactly at a completion overstates the rate (a schedule paced at 20 ops/s puts 20 requests
  in the 0.96 s from its last bucket's start to its last completion: 20.8 ops/s). So a partial last
  bucket is left out of the series (its work still counts in the mean); only a phase shorter than one
  bucket is a single bucket over its whole span (throughput = its mean). Min/median/max come from that
  series. Rally (``ThroughputCalculator`` in esrally/driver/driver.py) also uses 1 s buckets
  (``bucket_interval_secs=1``, the only value it is ever called with) but reports the running mean
  since the task start at each bucket edge, which smooths the min/max away; bench reports each second.
- Mean throughput is total units / measured duration (phase start to last completion), not the mean of the
  buckets: the two differ when the last bucket is partial or clients ramp up.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel

from bench.samples import RequestSample

SAMPLE_COLUMNS: list[str] = list(RequestSample._fields)
SERIES_COLUMNS = ["phase", "second", "time", "duration", "units", "requests", "throughput", "complete"]


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


def _spread_units(units: np.ndarray, a: np.ndarray, b: np.ndarray, end_bucket: np.ndarray,
                  n_buckets: int) -> np.ndarray:
    """Units per bucket [k, k+1) when each request's units are spread uniformly over [a_i, b_i].

    The cumulative work F(t) is piecewise linear with slope changes +r_i at a_i and -r_i at b_i
    (r_i = units_i / (b_i - a_i)), so F at the bucket edges is t*S(t) - T(t) with S, T prefix sums over
    the sorted breakpoints: O(N log N), no loop over requests.
    """
    a = np.clip(a, 0.0, None)
    width = b - a
    spread = width > 1e-9
    out = np.bincount(end_bucket[~spread], weights=units[~spread], minlength=n_buckets).astype(float)
    if spread.any():
        rate = units[spread] / width[spread]
        times = np.concatenate([a[spread], b[spread]])
        deltas = np.concatenate([rate, -rate])
        order = np.argsort(times, kind="stable")
        times, deltas = times[order], deltas[order]
        s_cum = np.concatenate([[0.0], np.cumsum(deltas)])
        t_cum = np.concatenate([[0.0], np.cumsum(deltas * times)])
        edges = np.arange(n_buckets + 1, dtype=float)
        edges[-1] = max(edges[-1], float(b[spread].max()))  # the last bucket takes everything up to the end
        pos = np.searchsorted(times, edges, side="right")
        cum = edges * s_cum[pos] - t_cum[pos]
        out += np.diff(cum)
    return out


def _phase_series(df: pd.DataFrame, phase: str) -> pd.DataFrame:
    if df.empty:
        return pd.DataFrame(columns=SERIES_COLUMNS)
    start = float(df["absolute_time"].min())
    done = (df["absolute_time"] + df["latency"]).to_numpy(dtype=float)
    end = float(done.max())
    span = max(end - start, 0.0)
    # Buckets [start+k, start+k+1); a completion exactly at the end belongs to the last bucket.
    n_buckets = max(1, math.ceil(span)) if span > 0 else 1
    idx = np.minimum(np.floor(done - start).astype(int), n_buckets - 1)
    idx = np.maximum(idx, 0)
    reqs = np.bincount(idx, minlength=n_buckets)
    units = _spread_units(df["units"].to_numpy(dtype=float), done - df["service_time"].to_numpy(dtype=float) - start,
                          done - start, idx, n_buckets)
    seconds = np.arange(n_buckets, dtype=float)
    durations = np.minimum(1.0, span - seconds) if span > 0 else np.array([0.0])
    complete = durations >= 1.0 - 1e-9
    if n_buckets > 1 and not complete[-1]:
        # A partial last bucket ends at a completion: its rate is biased upwards (see module doc).
        seconds, durations, complete = seconds[:-1], durations[:-1], complete[:-1]
        units, reqs = units[:-1], reqs[:-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        tput = np.where(durations > 0, units / np.where(durations > 0, durations, 1.0), np.nan)
    return pd.DataFrame({
        "phase": phase,
        "second": seconds,
        "time": start + seconds,
        "duration": durations,
        "units": units,
        "requests": reqs.astype("int64"),
        "throughput": tput,
        "complete": complete,
    })


def throughput_series(samples_df: pd.DataFrame, task: str) -> pd.DataFrame:
    """Per-second throughput of one task, warmup and measurement phases separately.

    Columns: phase ("warmup" | "measurement"), second (bucket start, seconds since the phase start),
    time (bucket start, epoch seconds), duration (bucket length in seconds; < 1 only for a phase shorter than
    a second), units and requests completed in the bucket, throughput (units / duration), complete (full
    second). A partial last bucket is left out (see module doc).
    Seconds in which nothing completed are present with zero throughput.
    """
    df = samples_df[samples_df["task"] == task]
    df = df.assign(units=successful_units(df))
    parts = [_phase_series(df[df["warmup"].astype(bool)], "warmup"),
             _phase_series(df[~df["warmup"].astype(bool)], "measurement")]
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


def measured_duration(samples_df: pd.DataFrame) -> float:
    """Seconds from the earliest scheduled start to the last completion of the given samples."""
    if samples_df.empty:
        return 0.0
    start = float(samples_df["absolute_time"].min())
    end = float((samples_df["absolute_time"] + samples_df["latency"]).max())
    return max(end - start, 0.0)


def throughput_stats(samples_df: pd.DataFrame, task: str) -> ThroughputStats | None:
    """min/median/max over the measurement phase's per-second series (see module doc);
    mean = total measured units / measured duration. None when the task has no measurement samples."""
    df = samples_df[(samples_df["task"] == task) & ~samples_df["warmup"].astype(bool)]
    if df.empty:
        return None
    unit = f"{df['unit'].iloc[0]}/s"
    df = df.assign(units=successful_units(df))
    if float(df["units"].sum()) <= 0:
        return None  # nothing succeeded: a throughput of failures would be a made-up number
    series = _phase_series(df, "measurement")
    usable = series[series["duration"] > 0]
    total_units = float(df["units"].sum())
    duration = measured_duration(df)
    if usable.empty or duration <= 0:
        # All requests completed at the same instant as they were scheduled: no time base.
        return None
    values = usable["throughput"].to_numpy(dtype=float)
    return ThroughputStats(min=float(values.min()), mean=total_units / duration,
                           median=float(np.median(values)), max=float(values.max()), unit=unit)


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
