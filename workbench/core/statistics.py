"""The statistics of a study (SPEC §9): scipy.stats' definitions, computed fast enough for a study.

- :func:`estimate`: a metric's mean over its units, with the percentile bootstrap's 95 % interval
  (2,000 resamples, ``numpy.random.default_rng(0)``);
- :func:`paired`: the mean paired difference between two arms, the same bootstrap over the pairs,
  and the two-sided paired sign-flip permutation test: exact (every sign pattern) up to
  :data:`EXACT_UP_TO` pairs with a non-zero difference, else 100,000 resamples; with ``min_p``, the
  smallest p the test can reach with k non-zero differences, min(1, 2^(1−k));
- :func:`holm`: Holm's step-down correction (scipy has none: a short function, tested);
- :func:`auc`: the ROC AUC of two groups of values, Mann–Whitney's U over the product of the sizes.

The definitions are scipy's: ``stats.bootstrap(method="percentile")`` and
``stats.permutation_test(permutation_type="samples")`` (:func:`scipy_bootstrap` and
:func:`scipy_sign_flip_p` call them; tests/core/test_statistics.py checks the numbers here against
them on fixed vectors). They are computed here from the same random draws without scipy's
per-resample overhead, and with the draws shared by every test of the same size: a study's report
makes hundreds of them (scipy took 11.6 s for one exact test of 20 pairs). Where a resampled test
has more than :data:`SAME_STREAM_UP_TO` non-zero differences taking few distinct sizes (a study's
shares: multiples of 1/6...), each resample's sum of signed differences is drawn size by size, a
binomial count of positive signs among the pairs of that size, from ``default_rng(0)``: the same
test and the same number of resamples, from other draws than scipy's (a p that differs from
scipy's by Monte Carlo error, at most 0.0016 at p = 0.5), at a cost that no longer grows with the
pairs (docs/studies.md).

Numbers are returned unrounded. A bootstrap of one unit, or of units all equal, has no spread:
its interval is that value (scipy warns and answers NaN there; the degenerate case is answered
here without asking it).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

BOOTSTRAP_RESAMPLES = 2_000
PERMUTATION_RESAMPLES = 100_000
EXACT_UP_TO = 20  # pairs with a non-zero difference: 2^20 sign patterns at most
SAME_STREAM_UP_TO = 200  # beyond, a test of few distinct sizes draws by size (see above)
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
    """scipy's percentile bootstrap of the mean (:func:`scipy_bootstrap`): the same resamples
    (``default_rng(0).integers(0, n, (2000, n))``), each one's mean as how often it drew each value."""
    import numpy as np

    data = np.asarray(values, dtype=float)
    if len(data) == 0:
        return (math.nan, math.nan)
    if len(data) == 1 or np.all(data == data[0]):
        return (float(data[0]), float(data[0]))
    means = _draw_counts(len(data)) @ data / len(data)
    low, high = np.quantile(means, [0.025, 0.975])  # scipy's stats.quantile, its default (linear) method
    return (float(low), float(high))


@functools.lru_cache(maxsize=4)
def _draw_counts(n: int):
    """How often each of ``n`` values is drawn in each of the 2,000 resamples scipy's bootstrap
    makes from ``default_rng(0)``: the same for every bootstrap of ``n`` values, so made once."""
    import numpy as np

    rng = _rng()
    counts = np.empty((BOOTSTRAP_RESAMPLES, n))
    rows = max(1, min(BOOTSTRAP_RESAMPLES, (1 << 21) // n))  # a block of draws at a time: the same draws
    for start in range(0, BOOTSTRAP_RESAMPLES, rows):
        block = min(rows, BOOTSTRAP_RESAMPLES - start)
        drawn = rng.integers(0, n, (block, n))
        drawn += np.arange(block, dtype=drawn.dtype)[:, None] * n
        counts[start:start + block] = np.bincount(drawn.ravel(), minlength=block * n).reshape(block, n)
    counts.setflags(write=False)
    return counts


def scipy_bootstrap(values: Sequence[float]) -> tuple[float, float]:
    """:func:`_bootstrap` as scipy computes it (the definition; for tests)."""
    import numpy as np
    from scipy import stats

    data = np.asarray(values, dtype=float)
    result = stats.bootstrap((data,), np.mean, n_resamples=BOOTSTRAP_RESAMPLES, method="percentile",
                             confidence_level=0.95, rng=_rng())
    return (float(result.confidence_interval.low), float(result.confidence_interval.high))


def estimate(values: Sequence[float]) -> Estimate:
    """The mean of the units' values, with its percentile-bootstrap 95 % interval."""
    n = len(values)
    mean = float(math.fsum(values) / n) if n else math.nan
    return Estimate(mean, _bootstrap(values), n)


def min_p(nonzero: int) -> float:
    """The smallest two-sided p a paired sign-flip test can give with ``nonzero`` differences."""
    return min(1.0, 2.0 ** (1 - nonzero))


def sign_flip_p(differences: Sequence[float]) -> tuple[float, bool]:
    """The two-sided paired sign-flip permutation test of the mean difference: ``(p, exact)``.

    The test is ``scipy.stats.permutation_test((d,), np.mean, permutation_type="samples",
    alternative="two-sided")`` over the non-zero differences ``d``: exact (``n_resamples=inf``)
    up to :data:`EXACT_UP_TO` of them, else 100,000 resamples from ``default_rng(0)``
    (:func:`scipy_sign_flip_p` calls it so). The same p is computed here without scipy's
    per-resample overhead (at 20 pairs scipy's exact test took 11.6 s, its resampled one 2.5 s
    at 100 pairs): the same sign patterns (every one; or, resampled, the very signs scipy draws:
    the low bit of each 32-bit draw of the generator, +1 when set, resample by resample and pair by
    pair, as ``Generator.permuted`` spends them shuffling each pair (d, −d)), the same statistic
    and scipy's own rule for a p-value, ties within 100 ulp of the observed mean counting as
    reached. tests/core/test_statistics.py checks both against scipy on fixed vectors. Past
    :data:`SAME_STREAM_UP_TO` differences of few distinct sizes, the resamples are drawn size by
    size (:func:`_by_size`; the module's docstring says why).
    """
    import numpy as np

    d = np.asarray([x for x in differences if x != 0], dtype=float)
    k = len(d)
    if k == 0:
        return 1.0, True
    observed = float(np.mean(d))
    gamma = abs(np.finfo(float).eps * 100 * observed)
    exact = k <= EXACT_UP_TO
    sizes, counts = np.unique(np.abs(d), return_counts=True)
    if not exact and k > SAME_STREAM_UP_TO and len(sizes) * 8 <= k:
        nulls = [_by_size(sizes, counts, PERMUTATION_RESAMPLES) / k]
        # Few sizes put the null on a lattice that often meets the observed mean exactly; summed
        # over thousands of pairs, two ways of adding may differ there by far more than scipy's
        # 100 ulp of the mean. A tie is a tie within 1e-9 of the mean size, where the lattice's
        # steps (a size over k) are never that close.
        gamma = max(gamma, 1e-9 * float(np.mean(np.abs(d))))
    else:
        chunks = _every_sign_pattern(k) if exact else _scipy_sign_draws(k, PERMUTATION_RESAMPLES)
        nulls = ((signs @ d) / k for signs in chunks)
    below = above = 0
    for null in nulls:
        below += int(np.count_nonzero(null <= observed + gamma))
        above += int(np.count_nonzero(null >= observed - gamma))
    extra, total = (0, 2 ** k) if exact else (1, PERMUTATION_RESAMPLES)
    p = 2 * min((below + extra) / (total + extra), (above + extra) / (total + extra))
    return float(min(1.0, max(0.0, p))), exact


_CHUNK = 1 << 16  # sign patterns (rows) per block: a block of 2^16 x 20 signs is 10 MB


def _every_sign_pattern(k: int):
    """All 2^k sign vectors of length ``k`` (+1/−1), in blocks."""
    import numpy as np

    bits = np.arange(k, dtype=np.int64)
    for start in range(0, 2 ** k, _CHUNK):
        rows = np.arange(start, min(start + _CHUNK, 2 ** k), dtype=np.int64)
        yield ((rows[:, None] >> bits) & 1).astype(np.float64) * 2 - 1


def _scipy_sign_draws(k: int, resamples: int):
    """The signs ``permutation_test`` draws from ``default_rng(0)`` for ``k`` pairs, in blocks of
    resamples: one 32-bit draw per pair (a PCG64 64-bit output is two of them, its low half
    first), +1 when its low bit is set (the pair (d, −d) left in place), −1 when swapped."""
    import numpy as np

    bitgen = _rng().bit_generator
    per_block = max(1, (1 << 22) // k)
    carry = np.empty(0, dtype=np.uint8)
    for start in range(0, resamples, per_block):
        rows = min(per_block, resamples - start)
        need = rows * k - len(carry)
        raw = bitgen.random_raw((need + 1) // 2)
        low = np.empty(2 * len(raw), dtype=np.uint8)
        low[0::2] = raw & 1
        low[1::2] = (raw >> 32) & 1
        stream = np.concatenate((carry, low))
        carry = stream[rows * k:]
        yield stream[:rows * k].reshape(rows, k).astype(np.float64) * 2 - 1


def _by_size(sizes, counts, resamples: int):
    """Each resample's sum of signed differences with the pairs taken size by size: every pair's
    sign in every resample is one fair bit of ``default_rng(0)``'s 64-bit draws, and the c pairs
    of size v add v (2X − c), X the bits set among theirs. A size's bits lie together, resample
    after resample (c bits each), so every X is a difference of the stream's running count read
    in order: the same null distribution as signs drawn pair by pair, at a cost per size, not per
    pair; and the same stream for every test of a report."""
    import numpy as np

    k = int(counts.sum())
    total = np.zeros(resamples)
    offset = 0
    for size, count in zip(sizes, counts):
        count = int(count)
        marks = _bits_before(offset + np.arange(resamples + 1, dtype=np.int64) * count, resamples * k)
        total += size * (2.0 * np.diff(marks) - count)
        offset += resamples * count
    return total


def _bits_before(positions, total: int):
    """How many of the stream's first ``position`` bits are set, for each position (< ``total``)."""
    import numpy as np

    words, before = _bit_stream(total // 64 + 1)  # one word past the last position: always there to index
    positions = np.asarray(positions, dtype=np.int64)
    word = positions >> 6
    below = np.left_shift(1, positions & 63)  # in int64, 1 << 63 - 1 wraps to the 63-bit mask: still right
    below -= 1
    return before[word] + np.bitwise_count(words[word] & below.view(np.uint64))


_STREAM: dict[str, object] = {}  # the longest bit stream made so far: every shorter one is its prefix


def reserve(pairs: int) -> None:
    """Make the stream the largest test of ``pairs`` non-zero differences would need, once (a
    report knows its largest number of pairs; tests that grow one by one would remake it)."""
    if pairs > SAME_STREAM_UP_TO:
        _bit_stream(PERMUTATION_RESAMPLES * pairs // 64 + 1)


def _bit_stream(n_words: int):
    """``default_rng(0)``'s first ``n_words`` (or more) 64-bit draws, and how many bits are set
    before each word: made once for the longest test, kept for the next."""
    import numpy as np

    words = _STREAM.get("words")
    if words is None or len(words) < n_words:
        n_words = max(n_words, len(words) * 3 // 2) if words is not None else n_words
        words = _rng().bit_generator.random_raw(n_words)
        _STREAM["words"] = words
        _STREAM["before"] = np.concatenate(([0], np.cumsum(np.bitwise_count(words), dtype=np.int64)))
    return words, _STREAM["before"]


def scipy_sign_flip_p(differences: Sequence[float]) -> tuple[float, bool]:
    """:func:`sign_flip_p` as scipy computes it (the definition; slow: for tests)."""
    import numpy as np
    from scipy import stats

    d = np.asarray([x for x in differences if x != 0], dtype=float)
    if len(d) == 0:
        return 1.0, True
    exact = len(d) <= EXACT_UP_TO
    if len(d) == 1:  # scipy needs two observations; one difference's two patterns give p = 1
        return 1.0, True
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
