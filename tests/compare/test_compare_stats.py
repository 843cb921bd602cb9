"""Confidence intervals of a difference of means and row verdicts, against known data (pure, no cluster)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as sps

from bench.compare.stats import DiffCI, bootstrap_diff_ci, diff_ci, judge, welch_diff_ci


def test_welch_matches_the_textbook_formula_and_scipy():
    a = [30_000.0, 61_000.0, 53_000.0]  # the three identical runs
    b = [48_000.0, 50_000.0, 57_000.0]
    ci = welch_diff_ci(a, b)
    # Hand computation: diff 3,666.67; se² = var(a)/3 + var(b)/3; Welch–Satterthwaite df.
    va, vb = np.var(a, ddof=1) / 3, np.var(b, ddof=1) / 3
    df = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 2)
    half = sps.t.ppf(0.975, df) * np.sqrt(va + vb)
    assert ci.diff == pytest.approx(3666.6667, rel=1e-6)
    assert (ci.low, ci.high) == pytest.approx((ci.diff - half, ci.diff + half))
    ref = sps.ttest_ind(b, a, equal_var=False).confidence_interval(0.95)
    assert (ci.low, ci.high) == pytest.approx((ref.low, ref.high))
    assert not ci.excludes_zero  # 30k/61k/53k vs 48k/50k/57k: noise


def test_welch_on_a_known_textbook_example():
    # Two groups whose difference is large relative to their spread: the interval excludes zero.
    ci = welch_diff_ci([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert ci.diff == 3.0
    assert (ci.low, ci.high) == pytest.approx((0.733042064, 5.266957936))  # t(0.975, 4) = 2.776445
    assert ci.excludes_zero


def test_bootstrap_equals_the_exact_bootstrap_distribution_enumerated():
    # With 3 values per group every resample can be enumerated (27 x 27 equally likely pairs): the
    # Monte-Carlo percentiles must converge to the exact percentiles of that distribution.
    a, b = np.array([10.0, 12.0, 17.0]), np.array([15.0, 19.0, 20.0])
    means_a = [np.mean(c) for c in itertools.product(a, repeat=3)]
    means_b = [np.mean(c) for c in itertools.product(b, repeat=3)]
    exact = np.array([mb - ma for ma in means_a for mb in means_b])
    lo, hi = np.quantile(exact, [0.025, 0.975])
    ci = bootstrap_diff_ci(a, b, resamples=200_000, seed=1)
    assert ci.diff == pytest.approx(b.mean() - a.mean())
    step = 1 / 3  # resampled means move in steps of 1/3 here
    assert abs(ci.low - lo) <= step and abs(ci.high - hi) <= step


def test_bootstrap_agrees_with_welch_for_large_normal_samples():
    rng = np.random.default_rng(7)
    a, b = rng.normal(100, 10, 400), rng.normal(103, 12, 400)
    boot, welch = bootstrap_diff_ci(a, b, seed=3), welch_diff_ci(a, b)
    assert boot.low == pytest.approx(welch.low, abs=0.35) and boot.high == pytest.approx(welch.high, abs=0.35)
    assert boot.excludes_zero and welch.excludes_zero


def test_bootstrap_is_seeded_and_auto_picks_the_method_by_group_size():
    a, b = [1.0, 2.0, 4.0], [2.0, 3.0, 5.0]
    assert bootstrap_diff_ci(a, b, seed=5) == bootstrap_diff_ci(a, b, seed=5)
    assert diff_ci(a, b).method == "welch"
    assert diff_ci(list(range(10)), list(range(1, 11))).method == "bootstrap"
    with pytest.raises(ValueError):
        diff_ci(a, b, method="magic")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        welch_diff_ci([1.0], [2.0, 3.0])


def _ci(low: float, high: float) -> DiffCI:
    return DiffCI(diff=(low + high) / 2, low=low, high=high, confidence=0.95, method="welch", n_baseline=3,
                  n_candidate=3)


def test_verdict_follows_the_better_direction_not_the_sign():
    up = _ci(5.0, 15.0)
    down = _ci(-15.0, -5.0)
    assert judge(10.0, up, higher_is_better=True) == "improvement"  # throughput up
    assert judge(10.0, up, higher_is_better=False) == "regression"  # latency up
    assert judge(-10.0, down, higher_is_better=False) == "improvement"  # latency down
    assert judge(-10.0, down, higher_is_better=True) == "regression"
    assert judge(10.0, up, higher_is_better=None) == "changed"
    assert judge(1.0, _ci(-3.0, 5.0), higher_is_better=True) == "within noise"
    # A threshold turns small but "significant" changes into noise.
    assert judge(2.0, _ci(1.0, 3.0), higher_is_better=True, noise_threshold_pct=5.0) == "within noise"
    # One trial per side: shown, not judged -- unless below the threshold.
    assert judge(-3.9, None, higher_is_better=True) == "not judged"
    assert judge(-3.9, None, higher_is_better=True, noise_threshold_pct=5.0) == "within noise"
    assert judge(0.0, None, higher_is_better=True) == "no change"
