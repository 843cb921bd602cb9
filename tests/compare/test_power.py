"""What two groups of trials can resolve (bench/compare/power.py), against values computed by hand.

The minimum detectable difference is (t(0.975, df) + t(0.80, df)) · SE (95 % two-sided, 80 % power), SE and df
Welch's. Where both groups have the same variance s² and size n: SE = s·√(2/n), df = 2n − 2."""

from __future__ import annotations

import pytest

from bench.compare.power import min_detectable_diff, relative, repetitions_needed

# mean 100 and 200, each with sample variance exactly 100 (deviations 0, ±10, ±10: 400 / 4)
FIVE_A = [100, 110, 90, 110, 90]
FIVE_B = [200, 210, 190, 210, 190]


def test_min_detectable_difference_of_five_against_five():
    # s = 10, n = 5: SE = 10·√(2/5) = 6.32456, df = 8; t(0.975, 8) = 2.30600 and t(0.80, 8) = 0.88889 (Student's t
    # table): (2.30600 + 0.88889) · 6.32456 = 20.206
    assert min_detectable_diff(FIVE_A, FIVE_B) == pytest.approx(20.206, abs=0.001)
    # 50 % power: the 95 % CI's half-width, 2.30600 · 6.32456 = 14.584
    assert min_detectable_diff(FIVE_A, FIVE_B, power=0.5) == pytest.approx(14.584, abs=0.001)


def test_repetitions_needed_are_cohens():
    # Cohen (1988), Statistical Power Analysis, table 2.4.1 (two-sided α = .05, power .80): d = 1.0 needs n = 17
    # per group, d = 0.5 needs 64. With s = 10, d = 1.0 is a difference of 10 and d = 0.5 of 5.
    assert repetitions_needed(FIVE_A, FIVE_B, 10) == 17
    assert repetitions_needed(FIVE_A, FIVE_B, -5) == 64
    assert repetitions_needed(FIVE_A, FIVE_B, 1000) == 2  # the least a spread needs


def test_two_against_two_as_the_study_has_them():
    # s² = 2,000,000 in both (9000/11000 and 7000/9000): SE = √(1e6 + 1e6) = 1414.21, df = 2;
    # t(0.975, 2) = 4.30265, t(0.80, 2) = 1.06066: (5.36331) · 1414.21 = 7584.9, ±75.8 % of the baseline's 10,000.
    mdd = min_detectable_diff([9000, 11000], [7000, 9000])
    assert mdd == pytest.approx(7584.87, abs=0.01)
    assert relative(mdd, 10_000) == pytest.approx(75.85, abs=0.01)
    # 3 % of 10,000 = 300: (t(.975, 2n−2) + t(.80, 2n−2)) · √(4e6/n) is 300.35 at n = 349 and 299.92 at n = 350
    assert repetitions_needed([9000, 11000], [7000, 9000], 300) == 350
    assert repetitions_needed([9000, 11000], [7000, 9000], 0.3) is None  # over 100,000: no plan


def test_unequal_variances_use_welchs_degrees_of_freedom():
    # var 8 (n 2) and var 4 (n 3): SE² = 4 + 4/3 = 5.3333, df = 5.3333² / (16/1 + (4/3)²/2) = 1.6842;
    # scipy.stats.t.ppf(0.975, 1.6842) + t.ppf(0.8, 1.6842) = 5.1762 + 1.1114 → 6.2877 · 2.3094 = 14.52
    assert min_detectable_diff([10, 14], [20, 22, 24]) == pytest.approx(14.52, abs=0.01)


def test_nothing_is_known_of_one_value_and_a_constant_spread_detects_anything():
    assert min_detectable_diff([5.0], [1.0, 2.0]) is None and repetitions_needed([5.0], [1.0, 2.0], 1) is None
    assert min_detectable_diff([3, 3], [4, 4]) == 0.0 and repetitions_needed([3, 3], [4, 4], 0.1) == 2
    assert relative(None, 10) is None and relative(5, 0) is None
