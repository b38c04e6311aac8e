"""What kernels/report.py and kernels/report_backward.py share: the paired ratio that judges a
baseline, the summary table of the ratios, and the error that stops a report (one line, exit 2)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy import stats

from perfbot.records.run import Benchmark


class ReportError(Exception):
    """Input the report cannot be made from: its message is the one line printed."""


@dataclass(frozen=True)
class Paired:
    ratio: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.ratio:.3f} [{self.low:.3f}, {self.high:.3f}]"


def paired_ratio(baseline: Sequence[float], current: Sequence[float], resamples: int = 2000, seed: int = 0) -> Paired:
    """The median of the per-round ratios current_i / baseline_i with its 95% percentile
    bootstrap interval over rounds (scipy.stats.bootstrap, paired=True): a clock change during the
    run moves both sides of a round together and cancels. The fixed seed and resamples are those
    that experiments/2026-11-30-h200-unseen-shapes/summarize.py's figures were made with."""
    base, cur = np.asarray(baseline, dtype=float), np.asarray(current, dtype=float)

    def statistic(b: np.ndarray, c: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(c / b, axis=axis)

    interval = stats.bootstrap(
        (base, cur),
        statistic,
        paired=True,
        n_resamples=resamples,
        confidence_level=0.95,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(seed),
        batch=max(1, 4_000_000 // len(base)),  # at most a few million values in memory at once
    ).confidence_interval
    return Paired(float(statistic(base, cur)), float(interval.low), float(interval.high))


def judged_pair(where: str, baseline: str, fused: str, benches: dict[str, Benchmark]) -> Paired:
    """benches[fused] / benches[baseline], paired by round; `where` begins the error's line."""
    base, cur = benches[baseline].samples_ms, benches[fused].samples_ms
    if len(base) != len(cur):
        raise ReportError(f"{where}: {baseline} and {fused} have {len(base)} and {len(cur)} samples: not paired")
    if len(cur) < 2:
        raise ReportError(f"{where}: one sample of {baseline} and {fused}, too few for an interval")
    return paired_ratio(base, cur)


def summary_row(label: str, values: list[tuple[float, str]], higher_is_better: bool = False) -> str:
    """`| label | best | median | worst (its case) |` of (value, case) pairs."""
    ordered = sorted(values, reverse=higher_is_better)
    best, worst = ordered[0], ordered[-1]
    middle = statistics.median(value for value, _ in values)
    return f"| {label} | {best[0]:.3f} | {middle:.3f} | {worst[0]:.3f} ({worst[1]}) |"


class Judged(Protocol):
    """A shape's row as both reports keep it."""

    @property
    def case(self) -> str: ...
    @property
    def paired(self) -> Mapping[str, Paired]: ...
    @property
    def of_gemm(self) -> float: ...
    @property
    def misses(self) -> Sequence[str]: ...


def summary_table(heading: str, baselines: Sequence[str], shapes: Sequence[Judged]) -> list[str]:
    """The heading, then best, median and worst of fused over each baseline (paired) and over
    gemm; a report adds rows of its own after these."""
    lines = [heading, "", "| ratio | best | median | worst |", "|---|---:|---:|---:|"]
    for name in baselines:
        lines.append(summary_row(f"fused / {name} (paired)", [(s.paired[name].ratio, s.case) for s in shapes]))
    lines.append(summary_row("fused / gemm", [(s.of_gemm, s.case) for s in shapes]))
    return lines


def misses_lines(shapes: Sequence[Judged], targets: Sequence[str]) -> list[str]:
    """How many targets the shapes missed, on how many shapes, and of which target."""
    missed = [s for s in shapes if s.misses]
    by_target = {target: sum(target in s.misses for s in shapes) for target in targets}
    counts = ", ".join(f"{target} {count}" for target, count in by_target.items() if count)
    return [
        "",
        f"Misses: {sum(by_target.values())} on {len(missed)} of the {len(shapes)} shapes"
        + (f" ({counts})." if counts else "."),
    ]
