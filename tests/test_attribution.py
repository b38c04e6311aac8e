"""Whose step is it: the subject's own time, its reference's, the whole run's (perfbot/history/attribution.py),
on series and stores built by hand, where the answer is known."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.history import attribution
from perfbot.history.series import Point, Series
from tests.history_store import make_runs, write_store

BENCH = next(b for b in make_runs(1)[0].benchmarks if b.kernel == "fused")
BEFORE, AFTER = range(20), range(20, 40)


def _whole(run: int, by: float = 0.02) -> float:
    """What moves the whole run: ±2% from run to run (unless told), so the ratio is the quieter."""
    return 1 + by if run % 2 else 1 - by


def _series(
    subject, reference, *, ratio_watched: bool = True, runs: int = 40, whole: float = 0.02, witness=None
) -> Series:
    """Runs of fused and its reference from functions of the run, each with a wobble of 0.1% so
    that ranks are not ties. Unless told otherwise the whole run moves (the ratio is watched);
    told otherwise, the reference alone takes that noise, and the median is the quieter."""
    points = []
    for run in range(runs):
        median = subject(run) * (1 + 0.001 * (run % 3)) * (_whole(run, whole) if ratio_watched else 1)
        over = reference(run) * (1 + 0.001 * ((run + 1) % 3)) * _whole(run, whole)
        seen = () if witness is None else (("eager", median / (witness(run) * _whole(run, whole))),)
        points.append(Point(run, median, median, median, median / over, seen))
    return Series("NVIDIA H200", BENCH, True, "gemm", tuple(points), witnesses=("eager",) if witness else ())


def _step(size: float, at: int = 20):
    return lambda run: 1 + size if run >= at else 1.0


def test_a_ratio_step_is_the_subjects_when_its_raw_median_moved_surely_whatever_else_did():
    # A slowdown that lands with a faster library: the ratio steps by 5%, 2% of it the subject's.
    both = _series(_step(0.02), _step(-0.03), whole=0.005)
    assert both.watches_ratio
    found = attribution.attribute(both, BEFORE, AFTER, 1.02 / 0.97 - 1)
    assert found.cause == "subject" and found.own_percent == pytest.approx(2.0, abs=0.3)
    assert "fused's own time moved: raw medians fused +2" in found.describe(both)


def test_a_ratio_step_is_the_references_when_only_the_reference_moved():
    series = _series(_step(0.0), _step(-0.04))
    found = attribution.attribute(series, BEFORE, AFTER, 1 / 0.96 - 1)
    assert found.cause == "reference" and found.other_percent == pytest.approx(-4.0, abs=0.3)
    assert "the reference moved, not fused: raw medians fused " in found.describe(series)
    # Under 1% of its own is not the subject's; 1% or more is, even beside a larger reference step.
    quiet = {"whole": 0.005}
    assert (
        attribution.attribute(_series(_step(0.006), _step(-0.03), **quiet), BEFORE, AFTER, 0.037).cause == "reference"
    )
    assert attribution.attribute(_series(_step(0.014), _step(-0.03), **quiet), BEFORE, AFTER, 0.045).cause == "subject"
    # Unsure (the whole run's ±2% in the raw median) and under half the step: not the subject's.
    decided = range(20, 20 + attribution.DECIDE_RUNS)
    assert attribution.attribute(_series(_step(0.014), _step(-0.03)), BEFORE, decided, 0.045).cause == "reference"


def test_a_step_both_took_faster_is_not_a_slowdown_of_the_subjects():
    # fused 3% faster, gemm 6% faster: fused over gemm is 3% slower, none of it fused's doing.
    series = _series(_step(-0.03), _step(-0.06))
    assert attribution.attribute(series, BEFORE, AFTER, 0.97 / 0.94 - 1).cause == "reference"
    faster = _series(_step(-0.04), _step(0.0))
    assert attribution.attribute(faster, BEFORE, AFTER, -0.04).cause == "subject"  # read the same way down


def test_with_the_median_watched_a_step_of_the_whole_run_is_not_the_subjects():
    slower = _step(0.04)
    whole = _series(slower, slower, ratio_watched=False)
    assert not whole.watches_ratio and whole.watched_label == "median"
    found = attribution.attribute(whole, BEFORE, AFTER, 0.04)
    assert found.cause == "run" and "the whole run moved, not fused alone" in found.describe(whole)
    own = _series(slower, _step(0.0), ratio_watched=False)
    assert attribution.attribute(own, BEFORE, AFTER, 0.04).cause == "subject"
    alone = Series(
        "NVIDIA H200", BENCH, True, None, tuple(Point(r, 1.0 + 0.04 * (r >= 20), 1, 1, None) for r in range(40))
    )
    assert attribution.attribute(alone, BEFORE, AFTER, 0.04).cause == "subject"  # its median is all there is


def test_the_ratio_is_watched_only_with_enough_runs_that_have_one():
    series = _series(_step(0.0), _step(0.0))
    few = replace(series, points=tuple(replace(p, ratio=None) if p.run < 35 else p for p in series.points))
    assert series.watches_ratio and not few.watches_ratio  # five runs with a ratio: too few
    assert "too few runs with a ratio" in few.watched_why


def test_a_step_whose_raw_median_does_not_yet_rank_apart_is_unclear_until_enough_runs_follow():
    # fused 3% slower from run 20, but the whole run's ±2% hides it in the raw median at first.
    series = _series(_step(0.03), _step(0.0))
    early = attribution.attribute(series, BEFORE, range(20, 23), 0.03)
    assert early.cause == "unclear" and early.describe(series).startswith("  not yet clear whose")
    decided = attribution.attribute(series, BEFORE, range(20, 20 + attribution.DECIDE_RUNS), 0.03)
    assert decided.cause == "subject"
    assert attribution.attribute(series, BEFORE, range(20, 19 + attribution.DECIDE_RUNS), 0.03).cause == "unclear"


def _noiseless(count: int, step_from: int) -> list:
    """Generated runs with their noise replaced: the whole run ±2% from run to run, fused on the
    t5 case 3% slower from `step_from`."""
    runs = []
    for index, run in enumerate(make_runs(count)):
        benchmarks = []
        for bench in run.benchmarks:
            level = {"fused": 1.0, "gemm": 1.005, "eager": 1.5}[bench.kernel] * _whole(index)
            if bench.kernel == "fused" and bench.case == "t5-v1.1-xl" and index >= step_from:
                level *= 1.03
            benchmarks.append(replace(bench, samples_ms=[level * (1 + 0.0005 * (index % 3))] * 30))
        runs.append(replace(run, benchmarks=benchmarks))
    return runs


def test_the_check_shows_a_held_step_without_recording_it_and_reports_it_once_it_is_clear(tmp_path: Path):
    runs = _noiseless(40, step_from=24)
    directory = write_store(tmp_path / "store", runs[:28])
    early = CliRunner().invoke(perfbot, ["history", "--store", str(directory), "--check"])
    assert early.exit_code == 0, early.output
    assert early.output.startswith("held back: NVIDIA H200 · fused · pr/t5-v1.1-xl")
    assert "  not yet clear whose: raw medians fused " in early.output
    assert early.output.strip().endswith("no new step; 1 held back until it is clear whose")
    write_store(directory, runs[28 : 24 + attribution.DECIDE_RUNS])
    later = CliRunner().invoke(perfbot, ["history", "--store", str(directory), "--check"])
    assert later.exit_code == 1, later.output  # decided: the subject's, and reported now
    assert "fused's own time moved" in later.output and "held back" not in later.output


def test_a_witness_tells_the_references_move_from_the_first_runs_when_the_raw_medians_cannot():
    # The whole run's ±2% hides fused's flat raw median in three runs; eager, measured beside
    # them, shows gemm alone 4% faster.
    flat = _step(0.0)
    series = _series(flat, _step(-0.04), witness=flat)
    found = attribution.attribute(series, BEFORE, range(20, 23), 1 / 0.96 - 1)
    assert found.cause == "reference" and found.witnessed is not None
    assert "the reference moved, not fused: against eager: gemm -4.0" in found.describe(series)
    without = attribution.attribute(_series(flat, _step(-0.04)), BEFORE, range(20, 23), 1 / 0.96 - 1)
    assert without.cause == "unclear" and without.witnessed is None


def test_a_witness_that_moved_with_the_subject_does_not_excuse_it():
    # Shared code: fused and eager both 3% slower, gemm flat. Against eager, gemm looks 3%
    # faster, but its raw median did not move: the witness moved, and the step is fused's.
    slower = _step(0.03)
    series = _series(slower, _step(0.0), witness=slower, whole=0.005)
    found = attribution.attribute(series, BEFORE, AFTER, 0.03)
    assert found.cause == "subject" and found.witnessed is None


def test_a_witness_that_moved_with_the_reference_leaves_it_to_the_raw_medians():
    # A faster library under gemm and eager alike: against eager gemm did not move, so the
    # witness cannot tell; the raw medians do (fused flat, gemm 4% faster).
    faster = _step(-0.04)
    series = _series(_step(0.0), faster, witness=faster, whole=0.005)
    found = attribution.attribute(series, BEFORE, AFTER, 1 / 0.96 - 1)
    assert found.cause == "reference" and found.witnessed is None


def _tuned(series: Series, picks: dict[bool, tuple[str, ...]], code: dict[bool, tuple[str, ...]]) -> Series:
    """The series with each run's autotune picks and code: those of `True` from run 20 on."""
    points = tuple(replace(p, picks=picks[p.run >= 20], code=code[p.run >= 20]) for p in series.points)
    return replace(series, points=points)


def test_a_step_where_only_the_autotuners_pick_changed_is_the_autotuners():
    # The subject's own time stepped 3%, with the same code on both sides and another pick after.
    series = _series(_step(0.03), _step(0.0), whole=0.005)
    picks = {False: ("_k (key 64): BLOCK=64",), True: ("_k (key 64): BLOCK=128",)}
    found = attribution.attribute(_tuned(series, picks, {False: ("abc",), True: ("abc",)}), BEFORE, AFTER, 0.03)
    assert found.cause == "autotune" and found.picks == ("_k (key 64): BLOCK=64", "_k (key 64): BLOCK=128")
    described = found.describe(series)
    assert "the autotuner's pick changed, not fused's code: _k (key 64): BLOCK=64 → _k (key 64): BLOCK=128" in described
    assert "this fails no check" in described


@pytest.mark.parametrize(
    ("picks", "code"),
    [
        ({False: ("BLOCK=64",), True: ("BLOCK=128",)}, {False: ("abc",), True: ("def",)}),  # the code changed too
        ({False: ("BLOCK=64",), True: ("BLOCK=64",)}, {False: ("abc",), True: ("abc",)}),  # the same pick
        ({False: (), True: ()}, {False: ("abc",), True: ("abc",)}),  # nothing autotuned
    ],
)
def test_a_step_with_the_code_changed_or_the_same_pick_is_not_the_autotuners(picks, code):
    series = _series(_step(0.03), _step(0.0), whole=0.005)
    found = attribution.attribute(_tuned(series, picks, code), BEFORE, AFTER, 0.03)
    assert found.cause == "subject"


def test_picks_that_wander_on_one_side_of_the_step_do_not_blame_the_autotuner():
    series = _series(_step(0.03), _step(0.0), whole=0.005)
    points = tuple(
        replace(p, picks=("BLOCK=128",) if p.run >= 20 else (f"BLOCK={64 if p.run % 2 else 32}",), code=("abc",))
        for p in series.points
    )
    found = attribution.attribute(replace(series, points=points), BEFORE, AFTER, 0.03)
    assert found.cause == "subject"


def test_the_check_blames_a_step_of_the_picks_alone_on_the_autotuner_and_fails_nothing(tmp_path: Path):
    from perfbot.records.autotune import AutotunePick

    def picked(block: int) -> AutotunePick:
        return AutotunePick(
            kernel="_k", source_sha256="a" * 64, configs_sha256="b" * 64, key=["64"], config={"BLOCK": block},
            origin="tuned",
        )  # fmt: skip

    runs = make_runs(40, step=0.05, at=24)
    tuned = [
        replace(run, benchmarks=[replace(b, autotune=[picked(128 if i >= 24 else 64)]) if b.kernel == "fused" else b
                                 for b in run.benchmarks])
        for i, run in enumerate(runs)
    ]  # fmt: skip
    checked = CliRunner().invoke(perfbot, ["history", "--store", str(write_store(tmp_path / "s", tuned)), "--check"])
    assert checked.exit_code == 0, checked.output
    assert "the autotuner's pick changed, not fused's code: _k (key 64): BLOCK=64 → _k (key 64): BLOCK=128" in (
        checked.output
    )
    control = CliRunner().invoke(perfbot, ["history", "--store", str(write_store(tmp_path / "c", runs)), "--check"])
    assert control.exit_code == 1, control.output  # the same step without a pick change is the subject's
