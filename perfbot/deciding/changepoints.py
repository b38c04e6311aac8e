"""Change points in a benchmark's history: where its level stepped and stayed.

Binary segmentation (Scott and Knott, 1974; ruptures' `Binseg`) with a least-absolute-deviation
cost proposes the steps, on the log of the series standardized by a robust estimate of its
run-to-run noise (the median absolute deviation of successive differences, which a step barely
moves). A split is proposed while it lowers the cost by more than PENALTY · log(n); a segment
spans at least MIN_SEGMENT runs, so one odd run is never a step.

Each proposed step must then pass a significance test, as E-Divisive's permutation test does in
MongoDB's performance CI: the runs of the segment it ends against those of the segment it starts,
a two-sided Mann-Whitney U test at ALPHA. The least significant step that fails is dropped (its
two segments merge) until every step left passes; a step smaller than MIN_STEP is not reported.
The rank test is what keeps heavy tails out: the noise between separate runs on H200s is
heavy-tailed (docs/history.md), and four runs that happen to be low after a quiet stretch can
lower a cost by as much as a real step, but they do not rank apart from their neighbours as a
real step's runs do. With ALPHA at 0.001 a step is reported from its third run at the earliest
(three runs after twenty or more before rank apart at p < 0.001).

Known breaks (the steps a user acknowledged, `perfbot history ack`) split the series first: each
piece is searched on its own, so a step after a break is measured from the level the break
started, and nothing is found across one.

The false-alarm rate and the size of step found, on stores generated with the measured noise,
are in docs/history.md with the command that made them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

PENALTY = 2.0
MIN_SEGMENT = 3
ALPHA = 0.001
MIN_STEP = 0.01  # 1%


@dataclass(frozen=True)
class Step:
    at: int  # index of the first value after the step
    before: float  # the median level of the segment before it
    after: float  # and of the segment it starts

    @property
    def change_percent(self) -> float:
        return 100 * (self.after / self.before - 1)


def find(values: Sequence[float], breaks: Sequence[int] = ()) -> list[Step]:
    """The steps in a series of positive values (medians, or ratios of medians), oldest first;
    `breaks` are indices where a known step starts: the pieces between them are searched apart."""
    bounds = sorted({0, len(values), *(b for b in breaks if 0 < b < len(values))})
    return [
        replace(step, at=step.at + start)
        for start, end in itertools.pairwise(bounds)
        for step in _find(values[start:end])
    ]


def _find(values: Sequence[float]) -> list[Step]:
    series = np.log(np.asarray(values, dtype=float))
    n = len(series)
    if n < 2 * MIN_SEGMENT:
        return []
    import ruptures  # a second of import (scipy's): only once a series is long enough to search

    standardized = (series - np.median(series)) / max(noise(values), 1e-6)
    search = ruptures.Binseg(model="l1", min_size=MIN_SEGMENT, jump=1).fit(standardized)
    cuts = _significant(series, search.predict(pen=PENALTY * math.log(n))[:-1])
    bounds = [0, *cuts, n]
    steps = []
    for index, at in enumerate(cuts):
        before = float(np.exp(np.median(series[bounds[index] : at])))
        after = float(np.exp(np.median(series[at : bounds[index + 2]])))
        if abs(after / before - 1) >= MIN_STEP:
            steps.append(Step(at, before, after))
    return steps


def noise(values: Sequence[float]) -> float:
    """A series' run-to-run noise: the robust standard deviation of one run's log value about the
    next's (the median absolute deviation of successive differences, over sqrt 2), which a step
    barely moves. 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    differences = np.diff(np.log(np.asarray(values, dtype=float)))
    return float(np.median(np.abs(differences - np.median(differences))) / 0.6745 / math.sqrt(2))


def _significant(series: np.ndarray, cuts: list[int]) -> list[int]:
    """The cuts left when the least significant failing one is dropped, again and again."""
    from scipy import stats

    cuts = list(cuts)
    while cuts:
        bounds = [0, *cuts, len(series)]
        p_values = [
            stats.mannwhitneyu(series[bounds[i] : at], series[at : bounds[i + 2]]).pvalue for i, at in enumerate(cuts)
        ]
        worst = int(np.argmax(p_values))
        if p_values[worst] < ALPHA:
            break
        del cuts[worst]
    return cuts
