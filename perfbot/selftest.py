"""`perfbot selftest`: how well the bot sees on the runner at hand, with the rule in force.

- False alarms: A/A, one kernel against a second capture of itself, interleaved, many rounds.
- Sensitivity: A/B, the kernel against itself followed by a calibrated `torch.cuda._sleep`,
  at several nominal slowdowns. The slowdown actually injected is reported as measured (median
  ratio of the two sides over all rounds), not as asked for.

Each round is judged exactly as an interleaved `perfbot compare` judges one benchmark. The
pull-request check fails only when a second interleaved round confirms the first, so rounds are
also judged in consecutive pairs: a pair flags when both of its rounds do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from statistics import median
from typing import Any

from .compare import compare
from .results import Benchmark, Environment, Results, Settings
from .thresholds import Policy

BASE, TWIN = "A", "A2"  # the kernel, and a second capture of it


def slowed(level: float) -> str:
    return f"B{level:g}"


@dataclass(frozen=True)
class Flagged:
    """How often one comparison flagged: single rounds, and consecutive pairs of rounds where
    the second confirms the first (what fails a pull-request check)."""

    rounds: int
    flagged: int
    pairs: int
    confirmed: int

    @classmethod
    def of(cls, flags: list[bool]) -> Flagged:
        pairs = len(flags) // 2
        confirmed = sum(flags[2 * i] and flags[2 * i + 1] for i in range(pairs))
        return cls(len(flags), sum(flags), pairs, confirmed)

    def to_json(self) -> dict:
        return {
            "rounds": self.rounds,
            "flagged": self.flagged,
            "rate": self.flagged / self.rounds,
            "pairs": self.pairs,
            "confirmed": self.confirmed,
            "confirmed_rate": self.confirmed / self.pairs if self.pairs else None,
        }


@dataclass(frozen=True)
class LevelResult:
    nominal_percent: float
    measured_percent: float  # median over rounds of median(B)/median(A) - 1
    detections: Flagged

    @property
    def as_asked(self) -> bool:
        """Whether the injection landed within half the asked slowdown of it. On a short kernel
        the sleep kernel's own cost inside the graph (about 1.3 us on the H200) sets a floor."""
        return abs(self.measured_percent - self.nominal_percent) <= self.nominal_percent / 2


@dataclass(frozen=True)
class SelftestResult:
    false_alarms: Flagged
    levels: tuple[LevelResult, ...]
    rule: str
    kernel_ms: float

    def to_json(self) -> dict:
        return {
            "rule": self.rule,
            "kernel_median_ms": self.kernel_ms,
            "false_alarms": self.false_alarms.to_json(),
            "levels": [
                {
                    "nominal_percent": level.nominal_percent,
                    "measured_percent": level.measured_percent,
                    "as_asked": level.as_asked,
                    "detections": level.detections.to_json(),
                }
                for level in self.levels
            ],
        }


def _fails(baseline: list[float], current: list[float], policy: Policy) -> bool:
    """One benchmark judged as `perfbot compare` judges an interleaved A/B pair."""

    def side(samples: list[float]) -> Results:
        bench = Benchmark(kernel="selftest", shape={"n": 1}, dtype="-", samples_ms=samples)
        return Results(
            environment=Environment(gpu_name="selftest"), settings=Settings(ab_run="selftest"), benchmarks=[bench]
        )

    return compare(side(baseline), side(current), policy).fails


def tally(rounds: list[dict[str, list[float]]], levels: tuple[float, ...], policy: Policy) -> SelftestResult:
    """Judge every round: A/A for false alarms, A against each slowed copy for detections."""
    false_alarms = Flagged.of([_fails(r[BASE], r[TWIN], policy) for r in rounds])
    results = []
    for level in levels:
        name = slowed(level)
        detections = Flagged.of([_fails(r[BASE], r[name], policy) for r in rounds])
        ratios = [median(r[name]) / median(r[BASE]) for r in rounds]
        results.append(LevelResult(level, 100 * (median(ratios) - 1), detections))
    rule = policy.rule_for("selftest", "", "-", "selftest", {"n": 1}, interleaved=True)
    text = (
        "paired per-round ratios, two-sided Wilcoxon signed-rank, "
        f"q < {rule.alpha:g}, slowdown > {rule.fail_percent:g}% "
        f"(interleaved policy of {policy.source})"
    )
    kernel_ms = median(median(r[BASE]) for r in rounds)
    return SelftestResult(false_alarms, tuple(results), text, kernel_ms)


def measure_rounds(
    fn: Callable[[], Any],
    levels: tuple[float, ...],
    rounds: int,
    samples: int,
    on_round: Callable[[], None] = lambda: None,
) -> list[dict[str, list[float]]]:
    """On the GPU: capture the kernel twice and once per level followed by a calibrated sleep;
    every round times all of them interleaved (perfbot's engine)."""
    import torch

    from . import measure

    def with_sleep(cycles: int) -> Callable[[], Any]:
        def call() -> Any:
            out = fn()
            torch.cuda._sleep(cycles)
            return out

        return call

    # Calibrate the sleep at two lengths: the added time is overhead + cycles / rate, and the
    # overhead (the sleep kernel's own launch inside the graph, about a microsecond) matters
    # when the injection is a fraction of a percent.
    short_cycles, long_cycles = 100_000, 1_000_000
    base = measure.capture(fn, 3)
    timed = measure.time_interleaved(
        {
            BASE: base,
            "short": measure.capture(with_sleep(short_cycles), 2),
            "long": measure.capture(with_sleep(long_cycles), 2),
        },
        31,
    ).samples
    kernel_ms, short_ms, long_ms = (median(timed[name]) for name in (BASE, "short", "long"))
    ms_per_cycle = max(long_ms - short_ms, 1e-6) / (long_cycles - short_cycles)
    overhead_ms = max(short_ms - kernel_ms - short_cycles * ms_per_cycle, 0.0)
    targets = {level: level / 100 * kernel_ms for level in levels}
    cycles = {level: max(1, int((targets[level] - overhead_ms) / ms_per_cycle)) for level in levels}
    # Short sleeps stray from that line (H200: +0.15% at every level of a 0.55 ms kernel), so
    # measure each level against the kernel, paired by round, and correct its length; twice.
    for _ in range(2):
        trial = {BASE: base, **{slowed(level): measure.capture(with_sleep(cycles[level]), 1) for level in levels}}
        timed = measure.time_interleaved(trial, 21).samples
        for level in levels:
            added = median(b - a for a, b in zip(timed[BASE], timed[slowed(level)], strict=False))
            cycles[level] = max(1, int(cycles[level] + (targets[level] - added) / ms_per_cycle))
    captured = {BASE: base, TWIN: measure.capture(fn, 1)}
    for level in levels:
        captured[slowed(level)] = measure.capture(with_sleep(cycles[level]), 1)
    collected = []
    for _ in range(rounds):
        collected.append(measure.time_interleaved(captured, samples).samples)
        on_round()
    return collected
