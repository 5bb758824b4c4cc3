"""The statistics of a study (SPEC §9), with scipy.stats, never hand-written.

- :func:`estimate`: a metric's mean over its units, with the percentile bootstrap's 95 % interval
  (2,000 resamples, ``numpy.random.default_rng(0)``);
- :func:`paired`: the mean paired difference between two arms, the same bootstrap over the pairs,
  and the two-sided paired sign-flip permutation test: exact (every sign pattern) up to
  :data:`EXACT_UP_TO` pairs with a non-zero difference, else 100,000 resamples; with ``min_p``, the
  smallest p the test can reach with k non-zero differences, min(1, 2^(1−k));
- :func:`holm`: Holm's step-down correction (scipy has none: a short function, tested);
- :func:`auc`: the ROC AUC of two groups of values, Mann–Whitney's U over the product of the sizes.

Numbers are returned unrounded. A bootstrap of one unit, or of units all equal, has no spread:
its interval is that value (scipy warns and answers NaN there; the degenerate case is answered
here without asking it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

BOOTSTRAP_RESAMPLES = 2_000
PERMUTATION_RESAMPLES = 100_000
EXACT_UP_TO = 20  # pairs with a non-zero difference: 2^20 sign patterns at most
SEED = 0


@dataclass(frozen=True)
class Estimate:
    mean: float
    ci95: tuple[float, float]
    n: int  # units

    def to_json(self) -> dict:
        return {"mean": self.mean, "ci95": list(self.ci95), "n": self.n}


@dataclass(frozen=True)
class Paired:
    diff: float  # mean of (arm - baseline) over the pairs
    ci95: tuple[float, float]
    p: float
    pairs: int
    nonzero: int
    min_p: float
    exact: bool


def _rng():
    import numpy as np

    return np.random.default_rng(SEED)


def _bootstrap(values: Sequence[float]) -> tuple[float, float]:
    import numpy as np
    from scipy import stats

    data = np.asarray(values, dtype=float)
    if len(data) == 0:
        return (math.nan, math.nan)
    if len(data) == 1 or np.all(data == data[0]):
        return (float(data[0]), float(data[0]))
    result = stats.bootstrap((data,), np.mean, n_resamples=BOOTSTRAP_RESAMPLES, method="percentile",
                             confidence_level=0.95, rng=_rng())
    ci = result.confidence_interval
    return (float(ci.low), float(ci.high))


def estimate(values: Sequence[float]) -> Estimate:
    """The mean of the units' values, with its percentile-bootstrap 95 % interval."""
    n = len(values)
    mean = float(math.fsum(values) / n) if n else math.nan
    return Estimate(mean, _bootstrap(values), n)


def min_p(nonzero: int) -> float:
    """The smallest two-sided p a paired sign-flip test can give with ``nonzero`` differences."""
    return min(1.0, 2.0 ** (1 - nonzero))


def sign_flip_p(differences: Sequence[float]) -> tuple[float, bool]:
    """The two-sided paired sign-flip permutation test of the mean difference: ``(p, exact)``."""
    import numpy as np
    from scipy import stats

    d = np.asarray([x for x in differences if x != 0], dtype=float)
    if len(d) == 0:
        return 1.0, True
    exact = len(d) <= EXACT_UP_TO
    result = stats.permutation_test((d,), np.mean, permutation_type="samples", vectorized=True,
                                    n_resamples=math.inf if exact else PERMUTATION_RESAMPLES,
                                    alternative="two-sided", rng=_rng())
    return float(min(1.0, result.pvalue)), exact


def paired(arm: Sequence[float], baseline: Sequence[float]) -> Paired:
    """``arm`` against ``baseline``, pair by pair (the same item and replicate in each)."""
    if len(arm) != len(baseline):
        raise ValueError(f"paired values differ in number: {len(arm)} and {len(baseline)}")
    differences = [a - b for a, b in zip(arm, baseline)]
    n = len(differences)
    p, exact = sign_flip_p(differences)
    nonzero = sum(1 for x in differences if x != 0)
    return Paired(diff=float(math.fsum(differences) / n) if n else math.nan, ci95=_bootstrap(differences), p=p,
                  pairs=n, nonzero=nonzero, min_p=min_p(nonzero), exact=exact)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment, in the input's order: the i-th smallest p times (m − i + 1),
    made non-decreasing in that order, capped at 1."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def auc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """How well the values separate the positive group from the negative one: P(a positive value
    exceeds a negative one), ties counting half; Mann–Whitney's U over the product of the sizes."""
    from scipy import stats

    if not positive or not negative:
        return math.nan
    u = stats.mannwhitneyu(positive, negative, alternative="two-sided").statistic
    return float(u) / (len(positive) * len(negative))
