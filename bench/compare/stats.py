"""Is a difference between two groups of trials real? Pure functions, no I/O.

Two confidence intervals of the difference of means (candidate − baseline):

- ``bootstrap_diff_ci``: the percentile bootstrap (resample each group with replacement, independently;
  the interval is the 2.5th..97.5th percentile of the resampled differences). Seeded, so a report is
  reproducible.
- ``welch_diff_ci``: Welch's t interval (unequal variances, Welch–Satterthwaite degrees of freedom).

Why both: with the handful of trials people actually run (3–5 per side) the percentile bootstrap is too
narrow -- each resampled mean has variance s²·(n−1)/n², and normal-like quantiles (≈1.96) stand in where
Student's t with ~2–4 degrees of freedom needs 2.8–4.3 -- so 3 identical configurations would too often be
called "different". ``diff_ci(method="auto")`` therefore uses Welch when either side has fewer than
``BOOTSTRAP_MIN_N`` trials, and the bootstrap from then on (where it no longer depends on normality).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel

CiMethod = Literal["auto", "bootstrap", "welch"]
CI_METHODS: tuple[str, ...] = ("auto", "bootstrap", "welch")
MIN_GROUP = 3  # fewer trials on a side: significance is not judged
BOOTSTRAP_MIN_N = 10
DEFAULT_RESAMPLES = 10_000


class DiffCI(BaseModel):
    """Difference of means (candidate − baseline) with its confidence interval."""

    diff: float
    low: float
    high: float
    confidence: float
    method: Literal["bootstrap", "welch"]
    n_baseline: int
    n_candidate: int

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def _arrays(baseline: Sequence[float], candidate: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(baseline, dtype=float)
    b = np.asarray(candidate, dtype=float)
    if a.ndim != 1 or b.ndim != 1 or a.size == 0 or b.size == 0:
        raise ValueError("both groups need at least one value")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("values must be finite")
    return a, b


def bootstrap_diff_ci(baseline: Sequence[float], candidate: Sequence[float], *, confidence: float = 0.95,
                      resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> DiffCI:
    """Percentile-bootstrap CI of mean(candidate) − mean(baseline), resampling each group independently."""
    a, b = _arrays(baseline, candidate)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence {confidence} is not in (0, 1)")
    rng = np.random.default_rng(seed)
    # Vectorised: one (resamples x n) index matrix per group.
    ma = a[rng.integers(0, a.size, size=(resamples, a.size))].mean(axis=1)
    mb = b[rng.integers(0, b.size, size=(resamples, b.size))].mean(axis=1)
    diffs = mb - ma
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(diffs, [alpha, 1.0 - alpha])
    return DiffCI(diff=float(b.mean() - a.mean()), low=float(low), high=float(high), confidence=confidence,
                  method="bootstrap", n_baseline=int(a.size), n_candidate=int(b.size))


def welch_se_df(var_a: float, n_a: int, var_b: float, n_b: int) -> tuple[float, float]:
    """Standard error of a difference of two means and its Welch–Satterthwaite degrees of freedom, from each
    group's sample variance (ddof=1) and size (≥ 2 each). The degrees of freedom are inf when the error is 0."""
    va, vb = var_a / n_a, var_b / n_b
    se = math.sqrt(va + vb)
    if se == 0.0:
        return 0.0, math.inf
    return se, (va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (n_b - 1))


def welch_diff_ci(baseline: Sequence[float], candidate: Sequence[float], *,
                  confidence: float = 0.95) -> DiffCI:
    """Welch's t confidence interval of mean(candidate) − mean(baseline). Needs ≥ 2 values per group."""
    from scipy.stats import t as student_t

    a, b = _arrays(baseline, candidate)
    if a.size < 2 or b.size < 2:
        raise ValueError("Welch's interval needs at least 2 values per group")
    diff = float(b.mean() - a.mean())
    se, df = welch_se_df(float(a.var(ddof=1)), int(a.size), float(b.var(ddof=1)), int(b.size))
    if se == 0.0:  # both groups constant: the difference is exactly known
        return DiffCI(diff=diff, low=diff, high=diff, confidence=confidence, method="welch",
                      n_baseline=int(a.size), n_candidate=int(b.size))
    half = float(student_t.ppf(0.5 + confidence / 2.0, df)) * se
    return DiffCI(diff=diff, low=diff - half, high=diff + half, confidence=confidence, method="welch",
                  n_baseline=int(a.size), n_candidate=int(b.size))


def diff_ci(baseline: Sequence[float], candidate: Sequence[float], *, method: CiMethod = "auto",
            confidence: float = 0.95, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> DiffCI:
    if method not in CI_METHODS:
        raise ValueError(f"unknown CI method {method!r}: use one of {', '.join(CI_METHODS)}")
    if method == "auto":
        method = "welch" if min(len(baseline), len(candidate)) < BOOTSTRAP_MIN_N else "bootstrap"
    if method == "welch":
        return welch_diff_ci(baseline, candidate, confidence=confidence)
    return bootstrap_diff_ci(baseline, candidate, confidence=confidence, resamples=resamples, seed=seed)


Verdict = Literal["improvement", "regression", "changed", "within noise", "not judged", "no change", "n/a"]


def judge(diff_pct: float | None, ci: DiffCI | None, higher_is_better: bool | None,
          noise_threshold_pct: float = 0.0) -> Verdict:
    """Label one row.

    - ``n/a``: the metric has no better direction (e.g. a document count), or no relative change exists.
    - ``within noise``: |Δ %| is below the threshold, or the CI of the difference contains zero.
    - ``not judged``: a side has fewer than ``MIN_GROUP`` trials (``ci`` is None) and the change is above
      the threshold: one trial per side cannot tell signal from noise.
    - ``no change``: identical means.
    - ``improvement`` / ``regression``: the CI excludes zero, by the row's direction, not by sign;
      ``changed`` when it excludes zero on a row without a better direction.
    """
    if diff_pct == 0.0 or (ci is not None and ci.diff == 0.0):
        return "no change"
    if diff_pct is not None and abs(diff_pct) < noise_threshold_pct:
        return "within noise"
    if ci is None:
        return "not judged" if higher_is_better is not None else "n/a"
    if not ci.excludes_zero:
        return "within noise"
    if higher_is_better is None:
        return "changed"
    better = (ci.diff > 0) == higher_is_better
    return "improvement" if better else "regression"
