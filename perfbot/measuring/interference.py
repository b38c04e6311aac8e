"""`perfbot selftest`'s interference check: does slowing one implementation move another?

One implementation, one verdict (docs/method.md, "Cross-talk and side bias, measured"): changing
implementation A of a case must never move the verdict of implementation B. The check slows one
implementation of one case, on the head side of an A/A, by a known amount (its kernel followed
by a sleep, as the selftest injects its levels), and measures that case and the cases either
side of it in its suite as `perfbot ab` measures a pull request: both sides interleaved, in
blocks on fresh captures, a fixed number of rounds. Every other benchmark's head/base ratio is
then cross-talk, reported with its interval; the slowed benchmark's own ratio says what was
injected."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, TypeAdapter, with_config

from ..deciding.compare import judge_paired
from ..deciding.thresholds import Policy
from ..errors import BadInput, EnvironmentFailure, WrongResult
from ..loading.package import Loaded, load_subject
from ..loading.subject import Case, Suite
from ..records.run import Results
from . import measure
from .measure import BLOCK_ROUNDS
from .planning import RunSettings
from .recording import Measurement
from .runner import LocalSides, measure_sides
from .selftest import BASE_SLEEP_CYCLES, followed_by_sleep, selftest_rule, sleep_line
from .sequential import PolicyRules, Stopping, first_look

SLOWED_SIDE = "head"


@dataclass(frozen=True)
class Moved:
    """How far one benchmark's head side moved from its base: the median of its blocks' median
    per-round ratios (the A/B's estimate), in percent, with its confidence interval."""

    suite: str
    case: str
    benchmark: str
    percent: float
    low_percent: float
    high_percent: float
    rounds: int

    @property
    def label(self) -> str:
        return f"{self.benchmark} on {self.suite}/{self.case}"

    @property
    def surely_moved(self) -> bool:
        """Whether its interval leaves out no change: a move the rounds cannot put down to chance."""
        return self.low_percent > 0 or self.high_percent < 0

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Interference:
    """The slowed benchmark (what was injected, as measured) and every other one of the check."""

    slowed: Moved
    others: tuple[Moved, ...]
    confidence: float

    @property
    def largest(self) -> Moved | None:
        """The benchmark that moved the most, either way: the cross-talk the check found."""
        return max(self.others, key=lambda moved: abs(moved.percent), default=None)

    def to_json(self) -> dict[str, Any]:
        largest = self.largest
        return {
            "slowed": self.slowed.to_json(),
            "largest_cross_talk_percent": abs(largest.percent) if largest else None,
            "largest": largest.to_json() if largest else None,
            "confidence": self.confidence,
            "surely_moved": [moved.label for moved in self.others if moved.surely_moved],
            "others": [moved.to_json() for moved in self.others],
        }

    @classmethod
    def from_json(cls, value: Any) -> Interference:
        """What `to_json` wrote, from the subject's process: checked like any message."""
        try:
            others = tuple(_moved().validate_python(moved) for moved in value["others"])
            return cls(_moved().validate_python(value["slowed"]), others, float(value["confidence"]))
        except (KeyError, TypeError, ValueError) as error:  # pydantic's ValidationError is a ValueError
            raise EnvironmentFailure(f"the interference check answered something that does not read: {error}") from None


@functools.cache
def _moved() -> TypeAdapter[Moved]:
    """Moved's validator, built on first use (pydantic takes a while to build one)."""
    return TypeAdapter(with_config(ConfigDict(extra="forbid"))(Moved))


def neighbourhood(loaded: Loaded, case: Case) -> Suite:
    """The case's suite cut down to the case and the cases either side of it."""
    suite = loaded.suites[case.suite]
    at = [c.name for c in suite.cases].index(case.name)
    return dataclasses.replace(suite, cases=suite.cases[max(at - 1, 0) : at + 2])


class SlowedSides(LocalSides):
    """An A/A of one subject in this process in which one benchmark is followed by a sleep on
    both sides, on the head side longer by enough cycles to slow it by `percent`
    (selftest.sleep_line): the sleep kernel's own launch, on both sides, is no part of it."""

    def __init__(self, loaded: Loaded, settings: RunSettings, case: Case, kernel: str, percent: float):
        super().__init__({"base": loaded, SLOWED_SIDE: loaded}, settings)
        self.case, self.kernel, self.percent = case, kernel, percent

    def prepare(self, case: Suite) -> tuple[list[str], list[tuple[str, Any]]]:
        keys, failed = super().prepare(case)
        (only,) = case.cases
        slowed = f"{SLOWED_SIDE}:{self.kernel}"
        if (only.suite, only.name) != (self.case.suite, self.case.name) or slowed not in self.captured:
            return keys, failed
        kernel_ms, ms_per_cycle = sleep_line(self.captured[slowed], self._ready(slowed).call)
        cycles = {"base": BASE_SLEEP_CYCLES, SLOWED_SIDE: BASE_SLEEP_CYCLES}
        cycles[SLOWED_SIDE] += max(1, round(self.percent / 100 * kernel_ms / ms_per_cycle))
        for side in self.placement.sample(list(cycles), len(cycles)):  # in a drawn order, as every capture
            ready = self._ready(f"{side}:{self.kernel}")
            ready.call = followed_by_sleep(ready.call, cycles[side])
            self.captured[ready.planned.key] = measure.capture(ready.call, 1)
        return keys, failed

    def _ready(self, key: str) -> Any:
        return next(r for r in self.ready if r.planned.key == key)


def measure_interference(
    loaded: Loaded,
    case: Case,
    kernel: str,
    percent: float,
    rounds: int,
    policy: Policy,
    skipped: Sequence[str] = (),
    on_progress: Callable[[str, int], None] = lambda label, steps: None,
) -> Interference:
    """On the GPU: slow `kernel` on `case` by `percent` on one side of an A/A and time the case
    and its neighbours `rounds` rounds (whole blocks, at least the first look's) as an A/B."""
    if kernel not in loaded.implementations:
        raise BadInput(f"unknown implementation {kernel!r}; known: {sorted(loaded.implementations)}")
    rounds = max(first_look(rounds, selftest_rule(policy, None).alpha), math.ceil(rounds / BLOCK_ROUNDS) * BLOCK_ROUNDS)
    settings = RunSettings(skipped=tuple(k for k in skipped if k != kernel and k in loaded.implementations))
    sides = SlowedSides(loaded, settings, case, kernel, percent)
    stopping = Stopping(rounds, rounds, math.inf, PolicyRules(policy, ""))
    measured = measure_sides(sides, Measurement([neighbourhood(loaded, case)], settings, stopping), on_progress)
    return tally(measured["base"], measured[SLOWED_SIDE], case, kernel, policy)


def tally(base: Results, head: Results, case: Case, kernel: str, policy: Policy) -> Interference:
    """Each benchmark's head/base ratio as the A/B's verdict estimates it (compare.judge_paired,
    in blocks, at the confidence of the interleaved rule it gets), the slowed one apart."""
    bases = {(b.suite, b.case, b.name): b for b in base.benchmarks}
    key = (case.suite, case.name, kernel)
    gpu = str(head.environment.gpu_name or "")
    slowed, others = None, []
    for bench in head.benchmarks:
        other = bases.get((bench.suite, bench.case, bench.name))
        if other is None:
            continue
        rule = policy.rule_for(bench.kernel, bench.suite, bench.dtype, gpu, bench.shape, True, other.median_ms)
        estimate = judge_paired(other.samples_ms, bench.samples_ms, rule, BLOCK_ROUNDS).estimate
        percent, low, high = (100 * (value - 1) for value in (estimate.ratio, estimate.low, estimate.high))
        moved = Moved(str(bench.suite), str(bench.case), bench.name, percent, low, high, len(bench.samples_ms))
        if (bench.suite, bench.case, bench.name) == key:
            slowed = moved
        else:
            others.append(moved)
    if slowed is None:
        failures = [f for f in (*base.failures, *head.failures) if (f.suite, f.case, f.kernel) == key]
        why = failures[0].reason if failures else "not measured on both sides"
        error = WrongResult if why.startswith("wrong result") else BadInput
        raise error(f"{kernel} on {case.suite}/{case.name}: {why}; the interference check injected nothing")
    return Interference(slowed, tuple(others), 1 - selftest_rule(policy, None).alpha)


def interference_in_worker(
    kernels: Path,
    suite: str,
    case: str,
    kernel: str,
    percent: float,
    rounds: int,
    policy: Policy,
    skipped: tuple[str, ...],
    mode: str = "forward",
) -> Interference:
    """`measure_interference` on this worker's GPU (shards.on_each_gpu), the subject loaded here."""
    loaded = load_subject(kernels)
    return measure_interference(loaded, loaded.case(suite, case, mode), kernel, percent, rounds, policy, skipped)
