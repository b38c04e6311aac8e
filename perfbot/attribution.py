"""Whose step is it? A step in what the check watches for a subject's benchmark (its median over
a reference, or its median) is the subject's own only when the subject's own time stepped the
same way: a faster vendor library lifts the subject's ratio over it with no change to the subject's
code, and a slower machine lifts the subject's median.

The subject's own time is its median told by a witness measured in the same runs: the median of
the case's other implementations that are neither under test nor the reference (a plain
framework baseline beside a kernel watched over a library bound, say), so that what moved the
whole run cancels in it too. A case without such
an implementation tells the subject's time by what the check does not watch: its raw median when
the ratio is watched, its ratio when the median is. The subject's own change is measured between
the same runs as the step: from the step before it (or the first run) to the step, and from the
step to the next (or the newest run).

It counts as the subject's when that change is in the step's direction and at least half its
size, the midpoint between "all of the step is the subject's" and "none of it is": on the
generated stores of docs/history.md a witness's change varies by a few tenths of a percent,
far less than half of the 1% steps the check reports.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from scipy import stats

from .history import Point, Series

Cause = Literal["subject", "unclear", "reference", "run", "unknown"]
# How surely the subject's own values after a step must rank beyond those before it (one-sided
# Mann-Whitney U) for the step to be its own. Heavy-tailed noise in a few runs right after a
# reference's step could otherwise pass the half-size rule by chance (docs/history.md).
OWN_ALPHA = 0.01
Reading = Callable[[Point], float | None]  # a value read from a run's point of the series


@dataclass(frozen=True)
class Attribution:
    cause: Cause  # the subject's own time; its reference; the whole run; or nothing to tell by
    own_percent: float | None  # the subject's own change, told by `told_by`
    reference_percent: float | None  # the reference's, told by the same (None: no reference)
    told_by: str  # a baseline's name, "its raw median", ...

    def describe(self, series: Series) -> str:
        """One line for the report: whose step it is, and the figures that say so."""
        kernel, reference = series.bench.kernel, series.reference
        if self.cause == "unknown":
            return (
                f"  nothing else was measured on the case to tell {kernel}'s own time from the machine's: "
                "this fails no check"
            )
        own = f"{kernel} {self.own_percent:+.2f}% against {self.told_by}"
        if self.cause == "subject":
            return f"  {kernel}'s own time moved: {own}"
        if self.cause == "unclear":
            return f"  not yet clear whose: {own}, not yet surely; held back until later runs tell"
        if self.cause == "reference":
            moved = f"{reference} {self.reference_percent:+.2f}%" if self.reference_percent is not None else reference
            return (
                f"  the reference moved, not {kernel}: {moved}, {own}; not this repository's code: this fails no check"
            )
        return f"  the whole run moved, not {kernel} alone: {own}; this fails no check"


def attribute(series: Series, before: Sequence[int], after: Sequence[int], change: float) -> Attribution:
    """Whose step of `change` (after over before, minus 1) is it, between the runs `before` the
    step and those `after` it (run indexes)."""
    points = {p.run: p for p in series.points}
    own, told_by = _own_time(series)
    own_change = _change(points, before, after, own)
    if own_change is None:
        return Attribution("unknown", None, None, told_by)
    reference_change = _change(points, before, after, _reference_time(series))
    step, moved = math.log1p(change), math.log1p(own_change)
    cause: Cause
    if moved * step > 0 and abs(moved) >= abs(step) / 2:
        cause = "subject" if _ranks_apart(points, before, after, own, slower=step > 0) else "unclear"
    else:
        cause = "reference" if series.watches_ratio else "run"
    return Attribution(cause, 100 * own_change, None if reference_change is None else 100 * reference_change, told_by)


def _own_time(series: Series) -> tuple[Reading, str]:
    """How the subject's own time is read from a point, and what tells it, for people."""
    if series.witnesses:
        return (lambda p: p.median_ms / p.witness_ms if p.witness_ms else None), _names(series.witnesses)
    if series.watches_ratio:
        return (lambda p: p.median_ms), "its raw median (nothing else measured on the case)"
    if series.reference is not None:
        return (lambda p: p.ratio), f"{series.reference}"
    return (lambda p: None), "nothing"


def _reference_time(series: Series) -> Reading:
    if series.reference is None:
        return lambda p: None
    if series.witnesses:
        return lambda p: p.reference_ms / p.witness_ms if p.reference_ms and p.witness_ms else None
    return lambda p: p.reference_ms


def _change(points: dict[int, Point], before: Sequence[int], after: Sequence[int], value: Reading) -> float | None:
    """The median of `value` over the runs after, over its median over the runs before, minus 1."""
    levels = []
    for runs in (before, after):
        values = [v for run in runs if run in points and (v := value(points[run])) is not None]
        if not values:
            return None
        levels.append(statistics.median(values))
    return levels[1] / levels[0] - 1


def _ranks_apart(
    points: dict[int, Point], before: Sequence[int], after: Sequence[int], value: Reading, slower: bool
) -> bool:
    """The values after rank beyond those before, in the step's direction, at OWN_ALPHA."""
    earlier, later = ([v for run in runs if (v := value(points[run])) is not None] for runs in (before, after))
    test = stats.mannwhitneyu(later, earlier, alternative="greater" if slower else "less")
    return bool(test.pvalue < OWN_ALPHA)


def _names(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"the median of {', '.join(names)}"
