"""`perfbot selftest`: how well the bot sees on the runner at hand, with the rule in force.

- False alarms: A/A, one kernel against a second capture of itself, interleaved, many rounds.
- Sensitivity: A/B, the kernel against itself followed by a calibrated `torch.cuda._sleep`,
  at several nominal slowdowns. The slowdown actually injected is reported as measured (median
  ratio of the two sides over all rounds), not as asked for.

Each round is judged exactly as an interleaved `perfbot compare` judges one benchmark.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from statistics import median

from .compare import compare
from .results import Benchmark, Results
from .thresholds import Policy

BASE, TWIN = "A", "A2"  # the kernel, and a second capture of it


def slowed(level: float) -> str:
    return f"B{level:g}"


@dataclass(frozen=True)
class LevelResult:
    nominal_percent: float
    measured_percent: float  # median over rounds of median(B)/median(A) - 1
    detected: int
    rounds: int


@dataclass(frozen=True)
class SelftestResult:
    false_alarms: int
    rounds: int
    levels: tuple[LevelResult, ...]
    rule: str

    def to_json(self) -> dict:
        return {
            "false_alarms": self.false_alarms,
            "rounds": self.rounds,
            "false_alarm_rate": self.false_alarms / self.rounds if self.rounds else None,
            "rule": self.rule,
            "levels": [
                {"nominal_percent": l.nominal_percent, "measured_percent": l.measured_percent,
                 "detected": l.detected, "rounds": l.rounds, "detection_rate": l.detected / l.rounds}
                for l in self.levels
            ],
        }


def _fails(baseline: list[float], current: list[float], policy: Policy) -> bool:
    """One benchmark judged as `perfbot compare` judges an interleaved A/B pair."""
    def side(samples: list[float]) -> Results:
        bench = Benchmark(kernel="selftest", shape={"M": 1}, dtype="-", samples_ms=samples)
        return Results(environment={"gpu_name": "selftest"}, settings={"ab_run": "selftest"}, benchmarks=[bench])

    return compare(side(baseline), side(current), policy).fails


def tally(rounds: list[dict[str, list[float]]], levels: tuple[float, ...], policy: Policy) -> SelftestResult:
    """Judge every round: A/A for false alarms, A against each slowed copy for detections."""
    false_alarms = sum(_fails(r[BASE], r[TWIN], policy) for r in rounds)
    results = []
    for level in levels:
        name = slowed(level)
        detected = sum(_fails(r[BASE], r[name], policy) for r in rounds)
        ratios = [median(r[name]) / median(r[BASE]) for r in rounds]
        results.append(LevelResult(level, 100 * (median(ratios) - 1), detected, len(rounds)))
    rule = policy.rule_for("selftest", "", "-", "selftest", {"M": 1}, interleaved=True)
    text = (f"two-sided Mann-Whitney U, q < {rule.alpha:g}, slowdown > {rule.fail_percent:g}% "
            f"(interleaved policy of {policy.source})")
    return SelftestResult(false_alarms, len(rounds), tuple(results), text)


def measure_rounds(fn: Callable[[], object], levels: tuple[float, ...], rounds: int, samples: int,
                   on_round: Callable[[], None] = lambda: None) -> list[dict[str, list[float]]]:
    """On the GPU: capture the kernel twice and once per level followed by a calibrated sleep;
    every round times all of them interleaved (perfbot's engine)."""
    import torch

    from . import measure

    def with_sleep(cycles: int) -> Callable[[], object]:
        def call() -> object:
            out = fn()
            torch.cuda._sleep(cycles)
            return out
        return call

    base = measure.capture(fn, 3)
    probe = measure.time_interleaved({BASE: base}, 15).samples[BASE]
    kernel_ms = median(probe)
    calibration_cycles = 1_000_000
    sleep_ms = median(measure.time_interleaved({"sleep": measure.capture(with_sleep(calibration_cycles), 2)},
                                               15).samples["sleep"]) - kernel_ms
    cycles_per_ms = calibration_cycles / max(sleep_ms, 1e-6)
    captured = {BASE: base, TWIN: measure.capture(fn, 1)}
    for level in levels:
        cycles = max(1, int(level / 100 * kernel_ms * cycles_per_ms))
        captured[slowed(level)] = measure.capture(with_sleep(cycles), 1)
    collected = []
    for _ in range(rounds):
        collected.append(measure.time_interleaved(captured, samples).samples)
        on_round()
    return collected
