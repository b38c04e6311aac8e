"""perfbot/deciding/changepoints.py on plain series: a step's size, the noise it is measured
against, and the limits under which a change is no step: too few runs after it to rank apart at
ALPHA, or smaller than MIN_STEP. (tests/test_history.py finds steps in generated stores.)"""

import numpy as np
import pytest

from perfbot.deciding import changepoints
from perfbot.deciding.changepoints import Step


def _level(value: float, runs: int) -> list[float]:
    """`runs` runs at `value`, a tenth of a per mille apart, so that no two tie."""
    return [value * (1 + 0.0001 * (i % 3)) for i in range(runs)]


def test_a_steps_change_is_after_over_before_in_percent():
    assert Step(3, 2.0, 2.1).change_percent == pytest.approx(5.0)
    assert Step(3, 2.0, 1.9).change_percent == pytest.approx(-5.0)


def test_noise_is_the_standard_deviation_of_one_runs_log_value_and_ignores_a_drift():
    """The median absolute deviation of successive differences, over 0.6745 (a normal's MAD) and
    sqrt 2 (a difference of two runs): for log-normal runs it is their sigma, also while the level
    drifts by 1% a run."""
    rng = np.random.default_rng(0)
    for sigma in (0.005, 0.02):
        runs = rng.normal(0, sigma, 4000)
        assert changepoints.noise(np.exp(runs)) == pytest.approx(sigma, rel=0.05)
        drifting = runs + 0.01 * np.arange(4000)
        assert changepoints.noise(np.exp(drifting)) == pytest.approx(sigma, rel=0.05)
    assert changepoints.noise([1.0]) == 0.0 == changepoints.noise([])


def test_a_step_is_reported_once_its_runs_rank_apart_at_alpha():
    """Mann-Whitney at 0.001 (normal approximation past eight runs a side): four runs after twenty
    do not rank apart (p = 0.0012), five do; five runs from the start of a series are a step too."""
    assert changepoints.find(_level(1.0, 20) + _level(1.05, 4)) == []
    [late] = changepoints.find(_level(1.0, 20) + _level(1.05, 5))
    assert late.at == 20 and late.change_percent == pytest.approx(5.0, abs=0.02)
    [early] = changepoints.find([1.0, 1.0, 1.0, 1.002, 1.003, *_level(1.05, 24)])
    assert early.at == 5 and early.before == pytest.approx(1.0, abs=1e-9)  # the median of all five


def test_a_step_under_min_step_is_not_reported():
    """Significant, but half a percent: no step; one and a half percent is one."""
    assert changepoints.find(_level(1.0, 20) + _level(1.005, 20)) == []
    [step] = changepoints.find(_level(1.0, 20) + _level(1.015, 20))
    assert step.at == 20 and step.change_percent == pytest.approx(1.5, abs=0.02)


def test_a_step_of_exactly_min_step_is_reported(monkeypatch):
    """The threshold is "at least": a step exactly MIN_STEP is one. No float step is exactly 1%
    (after / before - 1 has no double equal to 0.01), so the threshold is set to a quarter, which
    1.0 to 1.25 is exactly, and an eighth is not a step."""
    monkeypatch.setattr(changepoints, "MIN_STEP", 0.25)
    [step] = changepoints.find([1.0] * 12 + [1.25] * 12)
    assert (step.at, step.before, step.after) == (12, 1.0, 1.25)
    assert changepoints.find([1.0] * 12 + [1.125] * 12) == []


def test_a_known_break_at_the_second_run_splits_the_series_there():
    """Five runs and twenty: a step, but one run of the five is cut off by the break (an
    acknowledged step at run 1), and four runs before twenty do not rank apart."""
    series = _level(1.0, 5) + _level(1.05, 20)
    assert [step.at for step in changepoints.find(series)] == [5]
    assert changepoints.find(series, breaks=[1]) == []
