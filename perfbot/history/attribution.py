"""Whose step is it? A step in what the check watches for a subject's benchmark is the subject's
own only when the subject's own time stepped the same way: a faster vendor library lifts the
subject's ratio over it with no change to the subject's code, and a slower machine lifts the
subject's median with everything else's.

The subject's own time is its raw median, the only series no other implementation is in (the
other baselines of a case may well run the same library as the reference, and move with it).
It is noisier than the ratio, as it keeps what moved the whole run, so the verdict takes
significance as well as size, between the same runs as the step (from the step or break before
it to the next one, or the ends):

- the ratio is watched, first: the reference's when, against the case's other implementations
  that are neither under test nor the reference (Series.witnesses), the reference alone moved
  the other way by at least half the step, ranking apart (an exact test, so three runs can
  tell), the subject by less than MIN_OWN, and the reference's raw median moved that way too
  (others that moved with the subject, through shared code, must not make a still reference
  look faster). Others that run the reference's library move with it and tell nothing; then:
- the ratio is watched: the step is the subject's when its raw median moved the step's way by
  at least MIN_OWN (whatever share of the step that is: a slowdown that lands with a faster
  library is still a slowdown) and its runs after rank beyond those before (one-sided
  Mann-Whitney at OWN_ALPHA); the reference's when its raw median moved the other way by
  at least half the step, ranking apart likewise, while the subject's moved by less than MIN_OWN;
- the median is watched: the subject's when its ratio over the reference moved the same way by
  at least half the step; else the whole run moved;
- before all of these: where the autotuner's picks alone changed at the step (the same code, the
  same picks on each side of it, other picks after), the step is the autotuner's; it fails no
  check, as the reference's and the run's do not;
- anything else is not yet clear: the step is held back until later runs tell. Once
  DECIDE_RUNS runs follow it, it is decided: the subject's if its raw median moved MIN_OWN its
  way ranking apart at DECIDE_ALPHA, or by at least half the step; else the reference's.

Why two levels of significance: docs/history.md, "Whose step it is" (run-wide noise in the few
runs right after a step made too many steps the subject's at the looser one).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ..deciding.changepoints import MIN_STEP
from .series import Point, Series

Cause = Literal["subject", "unclear", "reference", "run", "autotune"]
Reading = Callable[[Point], float | None]  # a value read from a run's point of the series
MIN_OWN = MIN_STEP  # the least change of the subject's own time that makes a step its own
OWN_ALPHA = 0.001  # how surely the raw medians after a step must rank beyond those before
DECIDE_RUNS = 12  # runs after a step once which an unclear step is decided
DECIDE_ALPHA = 0.01  # then, how surely MIN_OWN of the subject's own still makes it the subject's


@dataclass(frozen=True)
class Attribution:
    cause: Cause  # the subject's own time; not yet clear; its reference; the whole run
    own_percent: float  # the change of the subject's own time: its raw median (or, median watched, its ratio)
    other_percent: float | None  # the reference's raw median (ratio watched; None without a reference)
    # When the case's other implementations told it: their names, and the subject's and the
    # reference's changes against them.
    witnessed: tuple[str, float, float] | None = None
    picks: tuple[str, str] | None = None  # an autotune step: the picks before it and after, in words

    def describe(self, series: Series) -> str:
        """One line for the report: whose step it is, and the figures that say so."""
        kernel, reference = series.bench.kernel, series.reference
        if self.cause == "autotune" and self.picks is not None:
            before, after = self.picks
            return (
                f"  the autotuner's pick changed, not {kernel}'s code: {before} → {after}; its own time "
                f"{self.own_percent:+.2f}%; this fails no check"
            )
        if not series.watches_ratio:
            if self.cause == "subject":
                moved = (
                    f"over {reference} {self.own_percent:+.2f}%" if reference else "its median: nothing to tell it by"
                )
                return f"  {kernel}'s own time moved: {moved}"
            moved = f"over {reference} {self.own_percent:+.2f}%"
            return f"  the whole run moved, not {kernel} alone: {moved}; this fails no check"
        medians = f"raw medians {kernel} {self.own_percent:+.2f}%, {reference} {self.other_percent:+.2f}%"
        if self.witnessed is not None:
            names, own, other = self.witnessed
            medians = f"against {names}: {reference} {other:+.2f}%, {kernel} {own:+.2f}%; {medians}"
        if self.cause == "subject":
            return f"  {kernel}'s own time moved: {medians}"
        if self.cause == "reference":
            return f"  the reference moved, not {kernel}: {medians}; not this repository's code: this fails no check"
        if self.cause == "unclear":
            return f"  not yet clear whose: {medians}; held back until later runs tell"
        return f"  the whole run moved, not {kernel} alone: {medians}; this fails no check"


def attribute(series: Series, before: Sequence[int], after: Sequence[int], change: float) -> Attribution:
    """Whose step of `change` (after over before, minus 1) is it, between the runs `before` the
    step and those `after` it (run indexes)."""
    points = {p.run: p for p in series.points}
    earlier, later = [points[run] for run in before if run in points], [points[run] for run in after if run in points]
    step = math.log1p(change)
    picked = _only_the_picks(earlier, later)
    if picked is not None:
        return Attribution(
            "autotune", 100 * (_change(earlier, later, lambda p: p.median_ms) or 0.0), None, None, picked
        )
    if not series.watches_ratio:
        if series.reference is None:  # its own median stepped, and nothing else tells it
            return Attribution("subject", 100 * change, None)
        moved = _change(earlier, later, lambda p: p.ratio)
        same = moved is not None and math.log1p(moved) * step > 0 and abs(math.log1p(moved)) >= abs(step) / 2
        return Attribution("subject" if same else "run", 100 * (moved or 0.0), None)
    own = _change(earlier, later, lambda p: p.median_ms) or 0.0
    other = _change(earlier, later, lambda p: p.reference_ms) or 0.0
    own_log, other_log = math.log1p(own), math.log1p(other)
    witnessed = _against_witnesses(series, earlier, later)
    if witnessed is not None and other_log * step < 0 and abs(other_log) >= abs(step) / 2:
        # The reference alone moved against the case's other implementations, as it did in its
        # raw median, and the subject did not: precise, where the raw medians are noisy.
        names, own_against, other_against, apart = witnessed
        if (
            other_against * step < 0
            and abs(other_against) >= abs(step) / 2
            and abs(own_against) < math.log1p(MIN_OWN)
            and apart(step > 0)  # the reference down against them when the ratio went up
        ):
            told = (names, 100 * math.expm1(own_against), 100 * math.expm1(other_against))
            return Attribution("reference", 100 * own, 100 * other, told)
    cause: Cause
    if own_log * step > 0 and abs(own) >= MIN_OWN and _ranks_apart(earlier, later, lambda p: p.median_ms, step > 0):
        cause = "subject"
    elif (
        other_log * step < 0
        and abs(other_log) >= abs(step) / 2
        and abs(own) < MIN_OWN
        and _ranks_apart(earlier, later, lambda p: p.reference_ms, step < 0)
    ):
        cause = "reference"
    elif len(later) >= DECIDE_RUNS:  # long enough: MIN_OWN of its own less surely, or the nearer of all and none
        surely = abs(own) >= MIN_OWN and _ranks_apart(earlier, later, lambda p: p.median_ms, step > 0, DECIDE_ALPHA)
        cause = "subject" if own_log * step > 0 and (surely or abs(own_log) >= abs(step) / 2) else "reference"
    else:
        cause = "unclear"
    return Attribution(cause, 100 * own, 100 * other)


def _only_the_picks(earlier: Sequence[Point], later: Sequence[Point]) -> tuple[str, str] | None:
    """Where the autotuner's picks alone changed at the step: the same picks in every run before
    it, others in every run after, and the same code throughout (its files', or its autotuned
    kernels' source and configs). The picks before and after, in words; else None."""
    points = [*earlier, *later]
    if not earlier or not later or not all(p.code for p in points) or len({p.code for p in points}) != 1:
        return None
    before, after = {p.picks for p in earlier}, {p.picks for p in later}
    if len(before) != 1 or len(after) != 1 or before == after or not all(p.picks for p in points):
        return None
    return "; ".join(*before), "; ".join(*after)


def _against_witnesses(
    series: Series, earlier: Sequence[Point], later: Sequence[Point]
) -> tuple[str, float, float, Callable[[bool], bool]] | None:
    """The subject's and the reference's log changes against the case's other implementations
    (the median, run by run, over those measured in every run of both segments), and a test of
    whether the reference's values rank apart, down or up; None without such an implementation."""
    points = [*earlier, *later]
    names = [n for n in series.witnesses if all(n in dict(p.ratios) for p in points)]
    if not names or not earlier or not later or any(p.ratio is None for p in points):
        return None

    def own(p: Point) -> float:  # log(subject / witness)
        return statistics.median(math.log(dict(p.ratios)[n]) for n in names)

    def other(p: Point) -> float:  # log(reference / witness) = log(subject / witness) - log(subject / reference)
        return own(p) - math.log(p.ratio or 1.0)

    def shift(value: Callable[[Point], float]) -> float:
        return statistics.median(map(value, later)) - statistics.median(map(value, earlier))

    def apart(down: bool) -> bool:
        from scipy import stats  # imported where it is used: a second of start-up

        # Exact: the normal approximation cannot reach OWN_ALPHA from the third run after a step.
        test = stats.mannwhitneyu(
            [other(p) for p in later],
            [other(p) for p in earlier],
            alternative="less" if down else "greater",
            method="exact",
        )
        return bool(test.pvalue < OWN_ALPHA)

    label = names[0] if len(names) == 1 else f"the median of {', '.join(names)}"
    return label, shift(own), shift(other), apart


def _change(earlier: Sequence[Point], later: Sequence[Point], value: Reading) -> float | None:
    """The median of `value` over the later points, over its median over the earlier, minus 1."""
    levels = []
    for points in (earlier, later):
        values = [v for p in points if (v := value(p)) is not None]
        if not values:
            return None
        levels.append(statistics.median(values))
    return levels[1] / levels[0] - 1


def _ranks_apart(
    earlier: Sequence[Point], later: Sequence[Point], value: Reading, up: bool, alpha: float = OWN_ALPHA
) -> bool:
    """The values of the later points rank beyond the earlier's, up or down, at `alpha`."""
    from scipy import stats

    before, after = ([v for p in points if (v := value(p)) is not None] for points in (earlier, later))
    if not before or not after:
        return False
    test = stats.mannwhitneyu(after, before, alternative="greater" if up else "less")
    return bool(test.pvalue < alpha)
