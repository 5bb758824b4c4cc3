"""The statistics of a study (SPEC §9) against scipy on fixed vectors, and by hand on a three-pair
example: the percentile bootstrap, the paired sign-flip test (exact and resampled), min_p, Holm's
correction and the AUC."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from workbench.core import statistics

# Differences as a study makes them: shares of six artifacts (many ties), and continuous values.
SHARES = [1 / 6, 0.0, -1 / 3, 1 / 6, 1 / 2, 1 / 3, 1 / 6, 0.0, 1 / 6, -1 / 6, 1 / 3, 1 / 6]
CONTINUOUS = [0.21, -0.05, 0.33, 0.08, 0.12, -0.41, 0.27, 0.19, 0.02, 0.15, -0.07, 0.3, 0.11, 0.24]


def scipy_bootstrap(values):
    result = stats.bootstrap((np.asarray(values, dtype=float),), np.mean, n_resamples=2000, method="percentile",
                             confidence_level=0.95, rng=np.random.default_rng(0))
    return pytest.approx((result.confidence_interval.low, result.confidence_interval.high), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("values", [SHARES, CONTINUOUS, [0.2, 0.4, 0.9]])
def test_an_estimate_is_the_mean_with_scipys_percentile_bootstrap(values):
    est = statistics.estimate(values)
    assert est.mean == pytest.approx(float(np.mean(values)), abs=1e-15)
    assert est.ci95 == scipy_bootstrap(values)
    assert est.n == len(values)


def test_an_estimate_of_one_unit_or_of_equal_units_has_no_spread():
    assert statistics.estimate([0.4]).ci95 == (0.4, 0.4)
    assert statistics.estimate([0.25, 0.25, 0.25]).ci95 == (0.25, 0.25)


def random_case(seed: int, k: int, discrete: bool) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(rng.integers(-3, 4, size=k) / 6.0) if discrete else list(rng.normal(0.1, 1.0, size=k))


@pytest.mark.parametrize("values", [SHARES, CONTINUOUS, [0.5, -0.25], [0.3],
                                    random_case(1, 15, True), random_case(2, 16, False)])
def test_the_exact_sign_flip_test_equals_scipys(values):
    """Up to 20 non-zero differences, every sign pattern (scipy's exact permutation_test)."""
    assert statistics.sign_flip_p(values) == statistics.scipy_sign_flip_p(values)
    assert statistics.sign_flip_p(values)[1] is True


@pytest.mark.parametrize("values", [random_case(3, 21, False), random_case(4, 30, True), random_case(5, 57, False),
                                    random_case(6, 64, True)])
def test_the_resampled_sign_flip_test_equals_scipys_100000_resamples(values):
    """Past 20 non-zero differences, 100,000 resamples from default_rng(0): the very signs scipy draws."""
    p, exact = statistics.sign_flip_p(values)
    assert (p, exact) == statistics.scipy_sign_flip_p(values)
    assert exact is False


def test_many_pairs_of_few_sizes_are_drawn_size_by_size_with_scipys_p_within_monte_carlo_error(monkeypatch):
    rng = np.random.default_rng(7)
    sizes = np.array([0.1, 0.1 * math.sqrt(2), 0.1 * math.sqrt(3)])  # few sizes, no lattice: no ties
    values = list(rng.choice(sizes, 4000) * rng.choice([-1.0, 1.0], 4000, p=[0.49, 0.51]))
    p, exact = statistics.sign_flip_p(values)
    # scipy's own draws (the same-stream computation, equal to scipy's above; scipy itself takes
    # a minute and gigabytes here)
    monkeypatch.setattr(statistics, "SAME_STREAM_UP_TO", 10**9)
    reference, _ = statistics.sign_flip_p(values)
    assert exact is False and p != reference
    assert abs(p - reference) <= 4 * math.sqrt(reference * (1 - reference) / 100_000)


def test_drawn_size_by_size_the_ties_count_as_reached():
    # One size only: the null is v (2X - k) with X ~ Binomial(k, 1/2), so the exact two-sided p is
    # twice the binomial tail at the observed count of positive signs, ties included.
    k, positive = 3001, 1540
    values = [0.25] * positive + [-0.25] * (k - positive)
    p, _ = statistics.sign_flip_p(values)
    exact = min(1.0, 2 * stats.binom.sf(positive - 1, k, 0.5))
    assert abs(p - exact) <= 4 * math.sqrt(exact * (1 - exact) / 100_000)


def test_paired_differences_their_bootstrap_and_min_p():
    arm = [0.5, 0.5, 1 / 3, 2 / 3, 0.5, 1 / 6]
    base = [1 / 3, 0.5, 0.0, 1 / 3, 1 / 6, 1 / 6]
    diffs = [a - b for a, b in zip(arm, base)]
    result = statistics.paired(arm, base)
    assert result.diff == pytest.approx(sum(diffs) / 6, abs=1e-15)
    assert result.ci95 == scipy_bootstrap(diffs)
    assert (result.pairs, result.nonzero, result.min_p) == (6, 4, 0.125)
    assert result.p == statistics.scipy_sign_flip_p(diffs)[0]


def test_a_three_pair_example_by_hand():
    # Three pairs, all differences positive: the 2^3 = 8 sign patterns give the mean difference
    # only once at or above the observed one, and every pattern is at or below it, so
    # p = 2 x min(1/8, 8/8) = 1/4, which is also the smallest p three pairs can give.
    three = statistics.paired([0.5, 0.4, 0.9], [0.3, 0.3, 0.6])  # differences 0.2, 0.1, 0.3
    assert three.diff == pytest.approx(0.2)
    assert (three.p, three.min_p, three.pairs, three.exact) == (0.25, 0.25, 3, True)
    # With one difference negative (0.3, -0.1, 0.2): the signed sums are +-0.3 +-0.1 +-0.2, and two
    # of the eight (0.6 and 0.4) reach the observed 0.4: p = 2 x 2/8 = 1/2.
    mixed = statistics.paired([0.6, 0.2, 0.7], [0.3, 0.3, 0.5])
    assert mixed.p == pytest.approx(0.5) and mixed.min_p == 0.25
    # One pair that differs: its two patterns give p = 1 (scipy refuses a single observation).
    assert statistics.paired([0.5, 0.5], [0.5, 0.25]).p == 1.0
    # No pair that differs: nothing to test.
    assert (statistics.paired([0.5], [0.5]).p, statistics.paired([0.5], [0.5]).min_p) == (1.0, 1.0)
    # Holm over three comparisons: sorted 0.01, 0.25, 0.5 times 3, 2, 1, made non-decreasing.
    assert statistics.holm([0.25, 0.5, 0.01]) == pytest.approx([0.5, 0.5, 0.03])
    assert statistics.holm([0.04, 0.03, 0.6, 0.9]) == pytest.approx([0.12, 0.12, 1.0, 1.0])
    assert statistics.holm([]) == []


def test_min_p_is_two_to_the_one_minus_k():
    assert [statistics.min_p(k) for k in (0, 1, 2, 5, 20)] == [1.0, 1.0, 0.5, 0.0625, 2.0 ** -19]


def test_the_auc_is_mann_whitneys_u_over_the_product_of_the_sizes():
    # By hand: 0.9 beats 0.1 and 0.8; 0.8 beats 0.1 and ties 0.8 (half): 3.5 of 4 pairs.
    assert statistics.auc([0.9, 0.8], [0.1, 0.8]) == 0.875
    pos, neg = [0.31, 0.12, 0.55, 0.4, 0.4], [0.05, 0.4, 0.2, 0.11]
    u = stats.mannwhitneyu(pos, neg, alternative="two-sided").statistic
    assert statistics.auc(pos, neg) == u / 20
    assert math.isnan(statistics.auc([], [0.1]))
