"""The statistics behind a verdict. Each function names its test; none decides anything.

scipy is imported in the functions that use it: its import takes about a second, which every
perfbot process that never decides would pay."""

from __future__ import annotations

import fractions
import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

# Samples as a list, or as the array a sequential A/B makes once per look.
Floats = Sequence[float] | npt.NDArray[np.float64]


@dataclass(frozen=True)
class RatioEstimate:
    """current median / baseline median, with a bootstrap confidence interval."""

    ratio: float
    low: float
    high: float
    confidence: float


def ratio_of_medians(
    baseline: Sequence[float], current: Sequence[float], confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> RatioEstimate:
    """Percentile bootstrap (scipy.stats.bootstrap, independent resampling of each side) of
    median(current) / median(baseline). Fixed seed: the same files give the same interval."""
    from scipy import stats

    base = np.asarray(baseline, dtype=float)
    cur = np.asarray(current, dtype=float)

    def statistic(b: np.ndarray, c: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(c, axis=axis) / np.median(b, axis=axis)

    result = stats.bootstrap(
        (base, cur),
        statistic,
        n_resamples=resamples,
        confidence_level=confidence,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(seed),
        batch=_batch(max(len(base), len(cur))),
    )
    interval = result.confidence_interval
    return RatioEstimate(float(statistic(base, cur)), float(interval.low), float(interval.high), confidence)


def always_valid_paired_ratio(
    baseline: Floats, current: Floats, confidence: float = 0.99, prior: float = 2.0
) -> RatioEstimate:
    """For interleaved samples to which rounds keep being added: the median of the per-round
    ratios current_i / baseline_i with a confidence sequence, an interval that holds at every
    number of rounds at once, so it may be looked at after each round and sampling stopped as soon
    as it decides, without raising the false-alarm rate (a fixed-sample interval looked at again
    and again does raise it).

    A sign test made time-uniform: for a candidate median m, the count k of rounds whose ratio
    lies above m is Binomial(n, 1/2) when m is the median, and the Beta(prior, prior) mixture of
    likelihood ratios B(k + prior, n - k + prior) / B(prior, prior) * 2^n is a nonnegative
    martingale; by Ville's inequality it ever reaches 1 / (1 - confidence) with at most that
    probability. The interval holds every m not rejected so, between two order statistics of the
    ratios. Distribution-free (only continuity and independent rounds are assumed)."""
    ratios = np.sort(np.asarray(current, dtype=float) / np.asarray(baseline, dtype=float))
    n = len(ratios)
    if n == 0:
        raise ValueError("no rounds")
    fewest, most = _kept_counts(n, confidence, prior)
    # m with k ratios above it lies between the (n - k)th and (n - k + 1)th smallest ratio.
    low = ratios[n - most - 1] if most < n else 0.0
    high = ratios[n - fewest] if fewest > 0 else float("inf")
    # The median of the ratios, sorted already: a sequential A/B asks at every look.
    middle = float(ratios[n // 2]) if n % 2 else float((ratios[n // 2 - 1] + ratios[n // 2]) / 2)
    return RatioEstimate(middle, float(low), float(high), confidence)


def median(values: Floats) -> float:
    """np.median of one list of samples, to the bit (NaN if any is NaN), without its generic
    machinery, which costs ten times the partition itself: a sequential A/B asks at every look."""
    row = np.asarray(values, dtype=float)
    if len(row) == 0:
        return float(np.median(row))  # NaN, with numpy's warning
    return float(row_medians(row[np.newaxis])[0])


def row_medians(rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """np.median(rows, axis=1) of a two-dimensional float array with at least one column, to the
    bit (NaN in a row that holds one), without its generic machinery (see `median`)."""
    width = rows.shape[1]
    half = width // 2
    part = np.partition(rows, (half - 1, half, -1) if width % 2 == 0 else (half, -1), axis=1)
    middle = (part[:, half - 1] + part[:, half]) / 2 if width % 2 == 0 else part[:, half].copy()
    last = part[:, -1]
    return np.where(np.isnan(last), last, middle)


@functools.lru_cache(maxsize=4096)
def _kept_counts(n: int, confidence: float, prior: float) -> tuple[int, int]:
    """The fewest and most of n ratios that may lie above a median always_valid_paired_ratio
    keeps: they do not depend on the data, and a sequential A/B asks again at every look."""
    from scipy import special

    above = np.arange(n + 1)
    log_mixture = special.betaln(above + prior, n - above + prior) - special.betaln(prior, prior) + n * np.log(2)
    kept = above[log_mixture < -np.log1p(-confidence)]
    return int(kept.min()), int(kept.max())


@functools.cache
def fewest_units(confidence: float = 0.99, prior: float = 2.0) -> int:
    """The fewest units (rounds, blocks) with which always_valid_paired_ratio's interval can
    exclude anything at all: all of them on one side of it."""
    from scipy import special

    n = 1
    while special.betaln(n + prior, prior) - special.betaln(prior, prior) + n * np.log(2) < -np.log1p(-confidence):
        n += 1
    return n


def _batch(samples: int) -> int:
    """Resamples per bootstrap batch: at most about four million values in memory at once."""
    return max(1, 4_000_000 // max(samples, 1))


def mann_whitney_p(baseline: Sequence[float], current: Sequence[float], alternative: str = "two-sided") -> float:
    """Mann-Whitney U test (scipy.stats.mannwhitneyu, method "auto": exact for small samples
    without ties, normal approximation with tie correction otherwise). `alternative` is about
    current against baseline: "greater" asks whether current is slower, "less" faster."""
    from scipy import stats

    return float(stats.mannwhitneyu(current, baseline, alternative=alternative).pvalue)


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """q-values controlling the false discovery rate over many benchmarks
    (scipy.stats.false_discovery_control, method "bh")."""
    from scipy import stats

    if not p_values:
        return []
    return [float(q) for q in stats.false_discovery_control(np.asarray(p_values, dtype=float), method="bh")]


def geometric_mean(values: Sequence[float]) -> float:
    from scipy import stats

    return float(stats.gmean(np.asarray(values, dtype=float)))


def median_interval(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median: the order statistics whose ranks bound it
    with at least `confidence` (binomial, p = 1/2); the whole range when there are too few samples."""
    ordered = sorted(samples)
    n = len(ordered)
    low = _median_rank(n, confidence)
    if low < 0:
        return ordered[0], ordered[-1]
    return ordered[low], ordered[n - 1 - low]


@functools.cache
def _median_rank(n: int, confidence: float) -> int:
    """The 0-based rank of median_interval's lower end (a history asks for it per point): one less
    than the binomial (n, 1/2) quantile of (1 - confidence) / 2, the smallest k with P(X <= k) at
    least that (scipy.stats.binom.ppf), counted in integers: a history of a few runs then never
    imports scipy.stats (1.7 CPU-seconds), and a longer one imports it only to find steps."""
    target = fractions.Fraction((1 - confidence) / 2) * 2**n  # P(X <= k) * 2**n, exactly
    at_most, ways = 0, 1  # the ways to draw at most k-1 heads of n, and exactly k: C(n, k)
    for k in range(n + 1):
        at_most += ways
        if at_most >= target:
            return k - 1
        ways = ways * (n - k) // (k + 1)
    return n - 1
