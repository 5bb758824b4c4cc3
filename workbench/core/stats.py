"""Small, pure statistics for the plots: bootstrap intervals, ROC curves and AUC, replicate spread.

No Qt and no I/O; numpy is imported inside the functions (house style: heavy imports stay lazy).

- :func:`bootstrap_ci`: a percentile bootstrap interval of a statistic (the mean by default) from
  a *seeded* generator (``numpy.random.default_rng(seed)``), so the same values and seed give the
  same interval on every machine and every run;
- :func:`grouped_means`: the mean and bootstrap interval of each group (one seed per table: each
  group draws from ``seed`` mixed with its position, so adding a group never moves another's);
- :func:`roc_curve` / :func:`auc`: the ROC curve of a score against a binary truth, and its area,
  computed as the rank-based Mann-Whitney statistic ``U / (n_pos * n_neg)`` (ties count one half),
  which equals the trapezoidal area under :func:`roc_curve`;
- :func:`replicate_spread`: how far replicates of one cell (same question and provider mix, a new
  seed) differ: the pooled within-cell standard deviation and the mean absolute difference between
  two replicates of a cell. A difference between groups smaller than that is noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

DEFAULT_BOOT = 2000
DEFAULT_LEVEL = 0.95
DEFAULT_SEED = 0


@dataclass(frozen=True)
class Interval:
    """A statistic and its bootstrap interval (``low``/``high`` None with fewer than 2 values)."""

    estimate: float | None
    low: float | None
    high: float | None
    n: int
    level: float = DEFAULT_LEVEL


@dataclass(frozen=True)
class GroupStat:
    group: str
    n: int
    mean: float | None
    low: float | None
    high: float | None
    sd: float | None  # sample standard deviation (ddof 1), None with fewer than 2 values


def _finite(values: Sequence[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and isinstance(v, (int, float)) and math.isfinite(v)]


def bootstrap_ci(values: Sequence[float | None], *, n_boot: int = DEFAULT_BOOT, level: float = DEFAULT_LEVEL,
                 seed: int = DEFAULT_SEED, stat: Callable | None = None) -> Interval:
    """Percentile bootstrap interval of ``stat`` (default: the mean) over the finite ``values``.

    Resamples come from ``numpy.random.default_rng(seed)``: deterministic. With one value the
    interval is that value; with none, every field is None.
    """
    import numpy as np

    xs = np.asarray(_finite(values), dtype=np.float64)
    n = int(xs.size)
    if not 0.0 < level < 1.0:
        raise ValueError("level must lie strictly between 0 and 1")
    if n == 0:
        return Interval(None, None, None, 0, level)
    f = stat or (lambda a, axis=None: np.mean(a, axis=axis))
    estimate = float(f(xs))
    if n == 1:
        return Interval(estimate, estimate, estimate, 1, level)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    boots = np.asarray(f(xs[idx], axis=1), dtype=np.float64)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(boots, [alpha, 1.0 - alpha])
    return Interval(estimate, float(low), float(high), n, level)


def grouped_means(groups: Mapping[str, Sequence[float | None]], *, seed: int = DEFAULT_SEED,
                  n_boot: int = DEFAULT_BOOT, level: float = DEFAULT_LEVEL) -> list[GroupStat]:
    """Per group (in the mapping's order): n, mean, its bootstrap interval and the SD."""
    out = []
    for k, (name, values) in enumerate(groups.items()):
        xs = _finite(values)
        ci = bootstrap_ci(xs, n_boot=n_boot, level=level, seed=_group_seed(seed, k))
        out.append(GroupStat(name, len(xs), ci.estimate, ci.low, ci.high, _sd(xs)))
    return out


def _group_seed(seed: int, k: int) -> int:
    return (int(seed) * 1_000_003 + k) % (2**63)


def _sd(xs: Sequence[float]) -> float | None:
    if len(xs) < 2:
        return None
    mean = sum(xs) / len(xs)
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


# ----- ROC and AUC ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Roc:
    fpr: list[float]  # from 0 to 1
    tpr: list[float]
    thresholds: list[float]  # a case is called positive when its score >= threshold (first: +inf)
    auc: float | None
    n_pos: int
    n_neg: int


def _pairs(scores: Sequence[float | None], labels: Sequence[bool | None]) -> tuple[list[float], list[bool]]:
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores for {len(labels)} labels")
    s, y = [], []
    for score, label in zip(scores, labels):
        if label is None or score is None or not math.isfinite(float(score)):
            continue  # no ground truth or no value: not part of the curve
        s.append(float(score))
        y.append(bool(label))
    return s, y


def auc(scores: Sequence[float | None], labels: Sequence[bool | None]) -> float | None:
    """Area under the ROC curve as the Mann-Whitney statistic: the chance that a random positive
    scores above a random negative, ties counting one half. None without both classes."""
    import numpy as np

    s, y = _pairs(scores, labels)
    n_pos = sum(y)
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = _average_ranks(np.asarray(s))
    rank_sum = float(ranks[np.asarray(y)].sum())
    u = rank_sum - n_pos * (n_pos + 1) / 2.0
    return u / (n_pos * n_neg)


def _average_ranks(x):
    """Ranks 1..n with ties given their average rank."""
    import numpy as np

    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    ranks = np.empty(len(x), dtype=np.float64)
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sorted_x[j + 1] == sorted_x[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def roc_curve(scores: Sequence[float | None], labels: Sequence[bool | None]) -> Roc:
    """The ROC curve (one point per distinct score, highest first) and its AUC."""
    s, y = _pairs(scores, labels)
    n_pos = sum(y)
    n_neg = len(y) - n_pos
    fpr, tpr, thresholds = [0.0], [0.0], [math.inf]
    if n_pos and n_neg:
        tp = fp = 0
        pairs = sorted(zip(s, y), key=lambda p: -p[0])
        i = 0
        while i < len(pairs):
            threshold = pairs[i][0]
            while i < len(pairs) and pairs[i][0] == threshold:
                tp += pairs[i][1]
                fp += not pairs[i][1]
                i += 1
            fpr.append(fp / n_neg)
            tpr.append(tp / n_pos)
            thresholds.append(threshold)
    return Roc(fpr, tpr, thresholds, auc(s, y), n_pos, n_neg)


def trapezoid_area(fpr: Sequence[float], tpr: Sequence[float]) -> float:
    """Trapezoidal area under a curve given by its points (equals :func:`auc` for a ROC)."""
    return sum((fpr[i] - fpr[i - 1]) * (tpr[i] + tpr[i - 1]) / 2.0 for i in range(1, len(fpr)))


# ----- replicate spread -----------------------------------------------------------------------
@dataclass(frozen=True)
class Spread:
    pooled_sd: float | None  # within-cell SD, pooled over cells with 2+ replicates
    mean_abs_diff: float | None  # mean |a - b| over every pair of replicates of one cell
    cells: int  # cells with 2+ replicates
    replicates: int  # values in those cells


def replicate_spread(cells: Mapping[object, Sequence[float | None]]) -> Spread:
    """How much replicates of the same cell differ (the noise a difference must beat)."""
    ss, dof, diffs, used, values = 0.0, 0, [], 0, 0
    for vals in cells.values():
        xs = _finite(vals)
        if len(xs) < 2:
            continue
        used += 1
        values += len(xs)
        mean = sum(xs) / len(xs)
        ss += sum((x - mean) ** 2 for x in xs)
        dof += len(xs) - 1
        diffs += [abs(xs[i] - xs[j]) for i in range(len(xs)) for j in range(i + 1, len(xs))]
    if not used:
        return Spread(None, None, 0, 0)
    return Spread(math.sqrt(ss / dof), sum(diffs) / len(diffs), used, values)
