"""workbench.core.stats: seeded bootstrap intervals, ROC/AUC as Mann-Whitney, replicate spread."""

from __future__ import annotations

import random

import pytest

from workbench.core import stats


def test_bootstrap_intervals_are_deterministic_for_a_seed():
    rng = random.Random(5)
    values = [rng.gauss(0.05, 0.08) for _ in range(25)]
    first = stats.bootstrap_ci(values, seed=7)
    assert stats.bootstrap_ci(values, seed=7) == first
    assert stats.bootstrap_ci(list(values), seed=7, n_boot=2000) == first
    assert stats.bootstrap_ci(values, seed=8) != first  # another seed: other resamples
    assert first.estimate == pytest.approx(sum(values) / len(values))
    assert first.low < first.estimate < first.high
    assert first.n == len(values) and first.level == 0.95


def test_bootstrap_edge_cases():
    assert stats.bootstrap_ci([]) == stats.Interval(None, None, None, 0)
    one = stats.bootstrap_ci([0.3])
    assert (one.estimate, one.low, one.high) == (0.3, 0.3, 0.3)
    skipped = stats.bootstrap_ci([0.1, None, float("nan"), 0.3], seed=1)
    assert skipped.n == 2 and skipped.estimate == pytest.approx(0.2)
    with pytest.raises(ValueError):
        stats.bootstrap_ci([1, 2], level=1.0)


def test_a_wider_level_gives_a_wider_interval():
    rng = random.Random(3)
    values = [rng.gauss(0, 1) for _ in range(40)]
    narrow = stats.bootstrap_ci(values, level=0.8, seed=1)
    wide = stats.bootstrap_ci(values, level=0.99, seed=1)
    assert wide.low <= narrow.low and wide.high >= narrow.high


def test_grouped_means_are_deterministic_and_independent_of_other_groups():
    groups = {"a": [0.1, 0.2, 0.3, 0.25], "b": [0.5, 0.45, 0.6]}
    table = stats.grouped_means(groups, seed=11)
    assert table == stats.grouped_means(groups, seed=11)
    assert [g.group for g in table] == ["a", "b"]
    assert table[0].mean == pytest.approx(0.2125) and table[0].n == 4
    assert table[1].sd == pytest.approx(0.0763762615825973)
    # adding a group after "a" leaves "a"'s interval where it was
    more = stats.grouped_means({**groups, "c": [1.0, 2.0]}, seed=11)
    assert more[0] == table[0] and more[1] == table[1]


def mann_whitney(scores, labels):
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


@pytest.mark.parametrize("seed", range(6))
def test_auc_is_mann_whitney_and_the_area_under_the_roc_curve(seed):
    rng = random.Random(seed)
    labels = [rng.random() < 0.5 for _ in range(30)] + [True, False]
    scores = [round(rng.gauss(0.3 if y else 0.0, 0.3), 1) for y in labels]  # rounded: ties
    auc = stats.auc(scores, labels)
    assert auc == pytest.approx(mann_whitney(scores, labels), abs=1e-12)
    roc = stats.roc_curve(scores, labels)
    assert roc.auc == pytest.approx(auc, abs=1e-12)
    assert stats.trapezoid_area(roc.fpr, roc.tpr) == pytest.approx(auc, abs=1e-12)
    assert roc.fpr[0] == 0 and roc.tpr[0] == 0 and roc.fpr[-1] == 1 and roc.tpr[-1] == 1
    assert roc.fpr == sorted(roc.fpr) and roc.tpr == sorted(roc.tpr)


def test_auc_extremes_and_missing_values():
    assert stats.auc([3, 4, 1, 2], [True, True, False, False]) == 1.0
    assert stats.auc([1, 2, 3, 4], [True, True, False, False]) == 0.0
    assert stats.auc([1, 1, 1, 1], [True, False, True, False]) == 0.5
    assert stats.auc([1, 2], [True, True]) is None  # one class only
    # no score or no ground truth: left out
    assert stats.auc([3, None, 1, 5], [True, True, False, None]) == 1.0
    with pytest.raises(ValueError):
        stats.auc([1, 2], [True])


def test_replicate_spread_pools_within_cell_variation():
    cells = {("q1", "mix"): [0.1, 0.3], ("q2", "mix"): [0.0, 0.2, 0.4], ("q3", "mix"): [0.7]}
    spread = stats.replicate_spread(cells)
    # pooled: (0.02 + 0.08) / (1 + 2) ; pairs: 0.2, 0.2, 0.4, 0.2
    assert spread.pooled_sd == pytest.approx((0.1 / 3) ** 0.5)
    assert spread.mean_abs_diff == pytest.approx(0.25)
    assert (spread.cells, spread.replicates) == (2, 5)
    assert stats.replicate_spread({"x": [1.0]}) == stats.Spread(None, None, 0, 0)
