"""The confidence sequence that sequential sampling will stop on: its false-alarm rate holds
under a look after every few rounds, where a fixed-sample interval looked at as often does not,
and it catches a 0.5% slowdown. Simulated rounds: per-round ratios with heavy-tailed noise (t,
4 degrees of freedom, 1% scale). `pytest -s` prints the rates measured."""

import numpy as np
import pytest
from scipy import stats as scipy_stats

from perfbot.deciding import stats

LOOKS = range(10, 301, 5)  # a look after every five rounds, up to 300
SIMULATIONS = 400


def _rounds(rng, shift):
    noise = rng.standard_t(4, LOOKS[-1]) * 0.01
    return np.ones(LOOKS[-1]), np.exp(noise + np.log(shift))


def _fixed_sample_sign_interval(baseline, current, confidence):
    """The 99% sign-test interval for one fixed n (binomial quantiles), valid only at that n."""
    ratios = np.sort(current / baseline)
    n = len(ratios)
    k = int(scipy_stats.binom.ppf((1 - confidence) / 2, n, 0.5))
    return ratios[max(k - 1, 0)], ratios[min(n - k, n - 1)]


def _sequence_interval(baseline, current):
    estimate = stats.always_valid_paired_ratio(baseline, current, 0.99)
    return estimate.low, estimate.high


def _ever_excludes_one(interval, baseline, current):
    for n in LOOKS:
        low, high = interval(baseline[:n], current[:n])
        if low > 1 or high < 1:
            return True
    return False


@pytest.mark.slow
def test_the_false_alarm_rate_holds_under_repeated_looks_where_a_fixed_sample_interval_does_not():
    rng = np.random.default_rng(20261130)
    sequence = fixed = 0
    for _ in range(SIMULATIONS):
        baseline, current = _rounds(rng, 1.0)
        sequence += _ever_excludes_one(_sequence_interval, baseline, current)
        fixed += _ever_excludes_one(lambda b, c: _fixed_sample_sign_interval(b, c, 0.99), baseline, current)
    print(f"\nA/A excluding 1 at a look: sequence {sequence / SIMULATIONS:.2%}, fixed-sample {fixed / SIMULATIONS:.2%}")
    assert sequence / SIMULATIONS <= 0.01
    assert fixed / SIMULATIONS > 0.03  # the same looks at a fixed-sample interval: several times alpha


def test_a_half_percent_slowdown_is_caught():
    rng = np.random.default_rng(7)
    caught = 0
    for _ in range(SIMULATIONS // 2):
        baseline, current = _rounds(rng, 1.005)
        caught += any(stats.always_valid_paired_ratio(baseline[:n], current[:n], 0.99).low > 1 for n in LOOKS)
    print(f"\n0.5% slowdown caught: {caught / (SIMULATIONS // 2):.1%}")
    assert caught / (SIMULATIONS // 2) >= 0.95


def test_the_interval_holds_the_median_and_narrows():
    baseline = np.ones(200)
    current = 1 + np.random.default_rng(3).permutation(np.linspace(-0.01, 0.01, 200))
    wide, narrow = (stats.always_valid_paired_ratio(baseline[:n], current[:n]) for n in (20, 200))
    assert narrow.low <= narrow.ratio <= narrow.high
    assert narrow.high - narrow.low < wide.high - wide.low
    assert stats.always_valid_paired_ratio([1.0] * 5, [1.1] * 5).low == 0.0  # too few rounds to bound
    with pytest.raises(ValueError):
        stats.always_valid_paired_ratio([], [])
