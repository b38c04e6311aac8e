"""Whose step is it: the subject's own time, its reference's, the whole run's (perfbot/attribution.py),
on series built by hand, where the answer is known."""

from __future__ import annotations

import pytest

from perfbot import attribution
from perfbot.history import Point, Series
from tests.history_store import make_runs

BENCH = next(b for b in make_runs(1)[0].benchmarks if b.kernel == "fused")
BEFORE, AFTER = range(20), range(20, 30)


def _series(subject, reference, witness, *, ratio_watched: bool = True) -> Series:
    """Runs 0-29 of fused, its reference and the witness, from functions of the run, with a small
    wobble of 0.1% each so that ranks are not ties. The whole run moves by ±2% from run to run,
    so the ratio is the quieter series and is watched; unless told otherwise: then the reference
    alone takes that ±2%, and the median is the quieter."""
    points = []
    for run in range(30):
        whole = 1.02 if run % 2 else 0.98
        median = subject(run) * (1 + 0.001 * (run % 3)) * (whole if ratio_watched else 1)
        over = reference(run) * (1 + 0.001 * ((run + 1) % 3)) * whole
        seen = witness(run) * (1 + 0.001 * ((run + 2) % 3)) * (whole if ratio_watched else 1) if witness else None
        points.append(Point(run, median, median, median, median / over, (), seen))
    return Series("NVIDIA H200", BENCH, True, "gemm", tuple(points), ("eager",) if witness else ())


def _step(size: float, at: int = 20):
    return lambda run: 1.0 * (1 + size if run >= at else 1)


def test_a_ratio_step_is_the_subjects_when_its_own_time_moved_half_of_it_or_more():
    flat = _step(0.0)
    # The ratio steps +4% either way; what differs is how much of it fused's own time took.
    mostly_own = _series(_step(0.024), _step(1.024 / 1.04 - 1), flat)
    mostly_reference = _series(_step(0.016), _step(1.016 / 1.04 - 1), flat)
    own = attribution.attribute(mostly_own, BEFORE, AFTER, 0.04)
    assert own.cause == "subject" and own.own_percent == pytest.approx(2.4, abs=0.15)
    other = attribution.attribute(mostly_reference, BEFORE, AFTER, 0.04)
    assert other.cause == "reference" and other.reference_percent == pytest.approx(-2.3, abs=0.15)
    assert "the reference moved, not fused: gemm -2.3" in other.describe(mostly_reference)


def test_a_step_of_the_whole_run_is_not_the_subjects():
    # The median is watched (the reference is noisy) and every implementation got 4% slower.
    slower = _step(0.04)
    series = _series(slower, slower, slower, ratio_watched=False)
    assert not series.watches_ratio and series.watched_label == "median"
    found = attribution.attribute(series, BEFORE, AFTER, 0.04)
    assert found.cause == "run" and "the whole run moved, not fused alone" in found.describe(series)
    own = attribution.attribute(_series(slower, _step(0.0), _step(0.0), ratio_watched=False), BEFORE, AFTER, 0.04)
    assert own.cause == "subject"


def test_without_a_witness_the_raw_median_tells_and_a_faster_step_is_read_the_same_way():
    faster_reference = _series(_step(0.0), _step(-0.04), None)
    assert attribution.attribute(faster_reference, BEFORE, AFTER, 0.04).cause == "reference"
    faster_subject = _series(_step(-0.04), _step(0.0), None)
    found = attribution.attribute(faster_subject, BEFORE, AFTER, -0.04)
    assert found.cause == "subject" and found.told_by.startswith("its raw median")


def test_a_step_whose_own_change_does_not_yet_rank_apart_is_unclear():
    # Three runs after the step: two 4% up, one 4% down. The median moved by the step, but three
    # runs that disagree do not rank beyond twenty (one-sided Mann-Whitney at OWN_ALPHA).
    def subject(run: int) -> float:
        return {20: 1.04, 21: 0.96, 22: 1.04}.get(run, 1.0)

    series = _series(subject, _step(0.0), _step(0.0))
    assert attribution.attribute(series, BEFORE, range(20, 23), 0.04).cause == "unclear"
    assert attribution.attribute(series, BEFORE, range(20, 23), 0.04).describe(series).startswith("  not yet clear")


def test_nothing_to_tell_by_is_unknown():
    series = Series("NVIDIA H200", BENCH, True, None, tuple(Point(r, 1.0, 1.0, 1.0, None) for r in range(30)))
    found = attribution.attribute(series, BEFORE, AFTER, 0.04)
    assert found.cause == "unknown" and "this fails no check" in found.describe(series)
