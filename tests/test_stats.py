"""perfbot/deciding/stats.py: known values (hand-computed, or scipy called directly where stats
wraps it), edge cases (ties, tiny and identical samples), and the promise of each docstring."""

import itertools
import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from perfbot.deciding import stats

positive = st.floats(min_value=0.01, max_value=100.0, allow_nan=False, allow_infinity=False)


# ratio_of_medians
def test_the_ratio_of_medians_is_current_over_baseline_inside_its_interval():
    estimate = stats.ratio_of_medians([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 4.0, 6.0, 8.0, 10.0])
    assert estimate.ratio == 2.0 and estimate.confidence == 0.95
    assert estimate.low <= estimate.ratio <= estimate.high


def test_the_bootstrap_is_scipys_percentile_bootstrap_with_a_fixed_seed():
    rng = np.random.default_rng(7)
    base, cur = rng.lognormal(0, 0.05, 40), 1.03 * rng.lognormal(0, 0.05, 40)
    estimate = stats.ratio_of_medians(base, cur, confidence=0.9, resamples=500, seed=3)
    direct = scipy.stats.bootstrap(
        (base, cur),
        lambda b, c, axis=-1: np.median(c, axis=axis) / np.median(b, axis=axis),
        n_resamples=500,
        confidence_level=0.9,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(3),
    ).confidence_interval
    assert (estimate.low, estimate.high) == pytest.approx((direct.low, direct.high), rel=1e-12)
    assert stats.ratio_of_medians(base, cur, confidence=0.9, resamples=500, seed=3) == estimate  # same files, same CI


def test_a_higher_confidence_gives_an_interval_that_contains_the_lower_ones():
    rng = np.random.default_rng(1)
    base, cur = rng.normal(1, 0.02, 30), rng.normal(1.01, 0.02, 30)
    narrow, wide = stats.ratio_of_medians(base, cur, 0.8), stats.ratio_of_medians(base, cur, 0.99)
    assert wide.low < narrow.low <= narrow.high < wide.high


def test_identical_constant_samples_give_a_ratio_of_one_and_no_width():
    assert stats.ratio_of_medians([2.0] * 5, [2.0] * 5) == stats.RatioEstimate(1.0, 1.0, 1.0, 0.95)


def test_a_single_sample_per_side_cannot_be_bootstrapped():
    with pytest.raises(ValueError, match="two or more"):
        stats.ratio_of_medians([1.0], [2.0])


@settings(max_examples=30, deadline=None)
@given(st.lists(positive, min_size=3, max_size=30), st.lists(positive, min_size=3, max_size=30))
def test_the_interval_lies_within_the_ratios_resampling_can_reach(base, cur):
    estimate = stats.ratio_of_medians(base, cur, resamples=200)
    assert min(cur) / max(base) * (1 - 1e-12) <= estimate.low <= estimate.high <= max(cur) / min(base) * (1 + 1e-12)


# always_valid_paired_ratio and fewest_units
def test_no_rounds_is_refused():
    with pytest.raises(ValueError, match="no rounds"):
        stats.always_valid_paired_ratio([], [])


def test_the_estimate_is_the_median_per_round_ratio_not_the_ratio_of_medians():
    base, cur = [1.0, 2.0, 4.0], [1.1, 2.0, 3.0]  # per-round ratios 1.1, 1.0, 0.75
    estimate = stats.always_valid_paired_ratio(base, cur)
    assert estimate.ratio == pytest.approx(1.0) and estimate.confidence == 0.99


def _mixture(n: int, prior: int = 2) -> float:
    """The mixture's value with all n ratios on one side, in closed form for an integer prior 2:
    B(n + 2, 2) / B(2, 2) * 2^n = 6 * 2^n / ((n + 2)(n + 3))."""
    assert prior == 2
    return 6 * 2**n / ((n + 2) * (n + 3))


@pytest.mark.parametrize("confidence,fewest", [(0.99, 12), (0.95, 9), (0.9, 8)])
def test_the_fewest_units_that_can_exclude_anything_match_the_closed_form(confidence, fewest):
    """12 blocks at alpha 0.01 (6 * 4096 / 210 = 117 >= 100, while 11 give 67.5)."""
    assert stats.fewest_units(confidence) == fewest
    assert _mixture(fewest) >= 1 / (1 - confidence) > _mixture(fewest - 1)


@pytest.mark.parametrize("confidence", [0.99, 0.95])
def test_with_fewer_units_the_interval_is_everything_and_with_the_fewest_it_excludes_one(confidence):
    fewest = stats.fewest_units(confidence)
    ratios = [1.01 + 0.001 * i for i in range(fewest)]  # every unit above 1
    short = stats.always_valid_paired_ratio([1.0] * (fewest - 1), ratios[:-1], confidence)
    assert (short.low, short.high) == (0.0, math.inf)
    decided = stats.always_valid_paired_ratio([1.0] * fewest, ratios, confidence)
    assert decided.low == ratios[0] > 1  # the smallest ratio: all of them on one side
    assert decided.high == ratios[-1]


def test_tied_ratios_give_a_point_interval_once_there_are_enough_rounds():
    estimate = stats.always_valid_paired_ratio([1.0] * 12, [1.0] * 12)
    assert (estimate.ratio, estimate.low, estimate.high) == (1.0, 1.0, 1.0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(positive, positive), min_size=1, max_size=80), st.floats(0.5, 2.0), st.randoms())
def test_the_paired_interval_lies_on_the_ratios_is_order_free_and_scales(pairs, scale, random):
    base, cur = [b for b, _ in pairs], [c for _, c in pairs]
    estimate = stats.always_valid_paired_ratio(base, cur)
    ratios = np.asarray(cur) / np.asarray(base)
    assert estimate.low <= estimate.ratio <= estimate.high
    assert estimate.low == 0.0 or estimate.low in ratios
    assert estimate.high == math.inf or estimate.high in ratios
    shuffled = list(pairs)
    random.shuffle(shuffled)
    assert stats.always_valid_paired_ratio([b for b, _ in shuffled], [c for _, c in shuffled]) == estimate
    scaled = stats.always_valid_paired_ratio(base, [scale * c for c in cur])
    assert scaled.ratio == pytest.approx(scale * estimate.ratio)
    assert scaled.low == pytest.approx(scale * estimate.low) and scaled.high == pytest.approx(scale * estimate.high)


def test_looked_at_after_every_round_the_interval_rarely_ever_excludes_the_true_median():
    """The confidence sequence's promise: over all looks at once, at most 1 - confidence of A/A
    sequences ever exclude 1 (Ville). Confidence 0.9 so that the rate is measurable; looking this
    often at a fixed-sample 90% interval would exclude 1 in far more."""
    rng = np.random.default_rng(0)
    sequences, rounds, ever = 200, 120, 0
    for _ in range(sequences):
        ratios = np.exp(rng.standard_t(4, rounds) * 0.01)  # median 1
        for n in range(stats.fewest_units(0.9), rounds + 1):
            estimate = stats.always_valid_paired_ratio([1.0] * n, ratios[:n].tolist(), 0.9)
            if not estimate.low <= 1 <= estimate.high:
                ever += 1
                break
    assert ever / sequences <= 0.1


# mann_whitney_p
def test_mann_whitney_exact_small_case_by_hand():
    """3 against 3 without ties, all of current above: U = 9, the most extreme of C(6, 3) = 20
    equally likely arrangements: one-sided p = 1/20, two-sided 2/20."""
    base, cur = [1.0, 2.0, 3.0], [4.0, 5.0, 6.0]
    assert stats.mann_whitney_p(base, cur) == pytest.approx(0.1)
    assert stats.mann_whitney_p(base, cur, "greater") == pytest.approx(0.05)  # current slower
    assert stats.mann_whitney_p(base, cur, "less") == pytest.approx(1.0)
    assert stats.mann_whitney_p(cur, base, "less") == pytest.approx(0.05)  # current faster


def test_mann_whitney_is_scipys_with_ties_and_symmetric_two_sided():
    base, cur = [1.0, 2.0, 2.0, 3.0, 5.0, 5.0, 7.0], [2.0, 3.0, 3.0, 6.0, 8.0, 8.0, 9.0, 9.0]
    assert stats.mann_whitney_p(base, cur) == scipy.stats.mannwhitneyu(cur, base).pvalue
    assert stats.mann_whitney_p(base, cur) == pytest.approx(stats.mann_whitney_p(cur, base))
    assert stats.mann_whitney_p(base, cur, "greater") < stats.mann_whitney_p(base, cur, "less")


def test_identical_samples_are_not_significant():
    assert stats.mann_whitney_p([1.0, 1.0, 1.0], [1.0, 1.0, 1.0]) == 1.0
    assert stats.mann_whitney_p([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]) == 1.0


# benjamini_hochberg
def test_benjamini_hochberg_by_hand():
    """Sorted 0.01, 0.03, 0.04 of m = 3: p * m / rank = 0.03, 0.045, 0.04, then the running
    minimum from the top: 0.03, 0.04, 0.04, given back in the input's order."""
    assert stats.benjamini_hochberg([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.04, 0.04])
    assert stats.benjamini_hochberg([0.01, 0.02, 0.03, 0.04]) == pytest.approx([0.04] * 4)
    assert stats.benjamini_hochberg([0.9, 0.95]) == pytest.approx([0.95, 0.95])


def test_benjamini_hochberg_edge_cases():
    assert stats.benjamini_hochberg([]) == []
    assert stats.benjamini_hochberg([0.02]) == pytest.approx([0.02])  # one test: nothing to adjust
    assert stats.benjamini_hochberg([0.5, 0.5, 0.5]) == pytest.approx([0.5] * 3)  # ties


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=50))
def test_q_values_are_at_least_p_at_most_one_and_keep_the_order(p_values):
    q_values = stats.benjamini_hochberg(p_values)
    assert len(q_values) == len(p_values)
    assert all(p <= q + 1e-12 and q <= 1 for p, q in zip(p_values, q_values, strict=True))
    ranked = sorted(range(len(p_values)), key=p_values.__getitem__)
    assert all(q_values[a] <= q_values[b] + 1e-12 for a, b in itertools.pairwise(ranked))


# geometric_mean
def test_geometric_mean_by_hand():
    assert stats.geometric_mean([1.0, 4.0]) == pytest.approx(2.0)
    assert stats.geometric_mean([2.0, 8.0, 4.0]) == pytest.approx(4.0)
    assert stats.geometric_mean([1.1]) == pytest.approx(1.1)


@settings(max_examples=60, deadline=None)
@given(st.lists(positive, min_size=1, max_size=30))
def test_the_geometric_mean_of_ratios_and_of_their_inverses_cancel(ratios):
    """A speedup and the same slowdown average to no change (why compare uses it for ratios)."""
    mean = stats.geometric_mean(ratios)
    assert mean * stats.geometric_mean([1 / r for r in ratios]) == pytest.approx(1.0)
    assert min(ratios) * (1 - 1e-9) <= mean <= max(ratios) * (1 + 1e-9)


# median_interval
def test_median_interval_by_hand():
    """10 samples at 95%: P(Bin(10, 1/2) <= 1) = 11/1024 < 2.5% <= P(<= 2) = 56/1024, so the
    2nd and 9th smallest, which hold the median with 1 - 22/1024 = 97.9%."""
    assert stats.median_interval([9, 3, 0, 5, 1, 8, 2, 7, 4, 6]) == (1, 8)  # unsorted input


def test_too_few_samples_give_the_whole_range_and_one_sample_itself():
    assert stats.median_interval([4.0, 0.0, 2.0, 1.0, 3.0]) == (0.0, 4.0)  # 5 samples: 2/32 > 5%
    assert stats.median_interval([3.0]) == (3.0, 3.0)
    assert stats.median_interval([2.0] * 20) == (2.0, 2.0)  # ties


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_the_median_interval_holds_at_least_its_confidence_and_is_the_tightest_that_does(confidence):
    """With the ith smallest (0-based) as its lower end, the interval misses the median when at
    most i samples lie below it or above it: it holds with 1 - 2 P(Bin(n, 1/2) <= i)."""

    def holds(i: int, n: int) -> float:
        return 1 - 2 * scipy.stats.binom.cdf(i, n, 0.5)

    for n in range(1, 300):
        low, high = stats.median_interval(list(range(n)), confidence)
        assert high == n - 1 - low  # symmetric ranks
        if holds(0, n) > confidence:
            assert holds(low, n) >= confidence  # at least its confidence
            assert holds(low + 1, n) <= confidence + 1e-12  # one rank narrower would not be
        else:
            assert (low, high) == (0, n - 1)  # too few samples: the whole range


# _batch
@pytest.mark.parametrize("samples", [0, 1, 30, 4000, 10_000_000])
def test_a_bootstrap_batch_holds_at_most_about_four_million_values(samples):
    batch = stats._batch(samples)
    assert batch >= 1 and (batch * samples <= 4_000_000 or batch == 1)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 11])
def test_the_sequential_ratio_is_the_median_of_the_per_round_ratios(n: int):
    rng = np.random.default_rng(n)
    base, cur = rng.uniform(1, 2, n), rng.uniform(1, 2, n)
    estimate = stats.always_valid_paired_ratio(base.tolist(), cur.tolist())
    assert estimate.ratio == float(np.median(cur / base))
