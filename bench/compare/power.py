"""What a comparison of two groups of trials can resolve. Pure functions, no I/O.

- ``min_detectable_diff``: the smallest true difference of means that the groups' spread lets a two-sided Welch
  test at ``confidence`` detect with probability ``power``:  (t(1 − α/2, df) + t(power, df)) · SE, with SE and
  the Welch–Satterthwaite df of ``bench.compare.stats.welch_se_df`` (the textbook minimum detectable effect with
  Student's t in place of the normal quantiles, as the trial counts are small).
- ``repetitions_needed``: how many trials per group the same spread needs for a given difference to be that
  detectable (the smallest n whose minimum detectable difference is at most the difference).

Both read the spread from the groups' sample variances, so with one trial in a group nothing is known (None).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from bench.compare.stats import welch_se_df

DEFAULT_POWER = 0.8
MAX_REPETITIONS = 100_000  # beyond this a count is no plan: repetitions_needed says None


def _quantiles(df: float, confidence: float, power: float) -> float:
    from scipy.stats import t as student_t

    if not 0 < confidence < 1 or not 0 < power < 1:
        raise ValueError(f"confidence {confidence} and power {power} must be in (0, 1)")
    return float(student_t.ppf(0.5 + confidence / 2.0, df) + student_t.ppf(power, df))


def _mdd(var_a: float, n_a: int, var_b: float, n_b: int, confidence: float, power: float) -> float:
    se, df = welch_se_df(var_a, n_a, var_b, n_b)
    return 0.0 if se == 0.0 else _quantiles(df, confidence, power) * se


def _variances(baseline: Sequence[float], candidate: Sequence[float]) -> tuple[float, float] | None:
    if len(baseline) < 2 or len(candidate) < 2:
        return None
    return statistics.variance(baseline), statistics.variance(candidate)


def min_detectable_diff(baseline: Sequence[float], candidate: Sequence[float], *, confidence: float = 0.95,
                        power: float = DEFAULT_POWER) -> float | None:
    """The smallest difference of means (absolute, in the values' unit) these groups could detect; None when a
    group has fewer than 2 values (its spread is unknown)."""
    v = _variances(baseline, candidate)
    if v is None:
        return None
    return _mdd(v[0], len(baseline), v[1], len(candidate), confidence, power)


def repetitions_needed(baseline: Sequence[float], candidate: Sequence[float], diff: float, *,
                       confidence: float = 0.95, power: float = DEFAULT_POWER,
                       limit: int = MAX_REPETITIONS) -> int | None:
    """The smallest n (per group, n ≥ 2) at which a difference ``diff`` (absolute) is detectable with the
    groups' spread; None when a group's spread is unknown or more than ``limit`` would be needed."""
    v = _variances(baseline, candidate)
    if v is None or diff == 0:
        return None

    def enough(n: int) -> bool:
        return _mdd(v[0], n, v[1], n, confidence, power) <= abs(diff)

    lo, hi = 2, 2
    while not enough(hi):  # the detectable difference shrinks as n grows: find a big enough n, then bisect
        if hi >= limit:
            return None
        lo, hi = hi, min(hi * 2, limit)
    if lo == hi:
        return hi
    while hi - lo > 1:  # enough(hi), not enough(lo)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


def relative(value: float | None, reference: float) -> float | None:
    """``value`` in % of |reference| (None where it is unknown or the reference is 0)."""
    if value is None or reference == 0 or not math.isfinite(value):
        return None
    return 100.0 * value / abs(reference)
