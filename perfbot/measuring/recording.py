"""The records of a run: one Results per side from what measuring its cases gave."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..deciding import credible
from ..loading.subject import Suite
from ..records.run import Benchmark, Environment, Failure, GpuStates, Results, Settings, failure_of
from . import loads, measure
from .environment import stability
from .planning import RunSettings
from .sequential import Stopping


@dataclass
class Measured:
    """What measuring some cases gave, every side together: records tagged with their side,
    and the GPU's state after every round."""

    benchmarks: list[tuple[str, Benchmark]] = field(default_factory=list)
    failures: list[tuple[str, Failure]] = field(default_factory=list)
    rounds: list[measure.Round] = field(default_factory=list)
    sampling_seconds: float = 0.0  # the time spent timing rounds (a sequential A/B's budget)
    # A case whose time ran out with pairs undecided, to be measured again (sequential.Turns):
    # its timings so far, and nothing else (its second turn checks and records it).
    unfinished: measure.Timings | None = None

    def add(self, other: Measured) -> None:
        self.benchmarks += other.benchmarks
        self.failures += other.failures
        self.rounds += other.rounds
        self.sampling_seconds += other.sampling_seconds


def stopping_text(stopping: Stopping) -> str:
    """How an A/B decided its rounds, as results record it."""
    return (
        f"sequential: each pair timed until decided, first look after {stopping.first} rounds, then every "
        f"{measure.BLOCK_ROUNDS}, at most {stopping.most} rounds, {stopping.seconds:g} s for the run's sampling "
        "(a second turn for a case whose share ran out); each block on fresh captures, the Triton kernels of each "
        f"side's modules loaded anew every {loads.BLOCKS_PER_LOAD} blocks"
    )


@dataclass(frozen=True)
class Measurement:
    """What a run measures and how, as its results record it: the suites, the run's settings,
    how a sequential A/B chooses its rounds (None: `settings.samples` rounds), and settings the
    caller records besides (an A/B's run and revisions)."""

    suites: Sequence[Suite]
    settings: RunSettings
    stopping: Stopping | None = None
    extra_settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Described:
    """The sides of a run as their results describe them: each side's environment and subject
    (its description and the files its code came from), and how a sample was taken."""

    names: tuple[str, ...]
    environments: dict[str, Environment]
    subjects: dict[str, dict[str, Any]]
    timing: str


def results_by_side(
    sides: Described,
    measurement: Measurement,
    measured: Measured,
    states: GpuStates,
    stable: dict[str, Any] | None = None,
) -> dict[str, Results]:
    """One Results per side from what was measured, the GPU's states before and after with it;
    `stable`, the GPU's stability (from the rounds measured, by default)."""
    stable = stable if stable is not None else stability(measured.rounds)
    benchmarks, failures = _credible(sides, measured)
    extra_settings = measurement.extra_settings
    if measurement.stopping is not None:
        sequential_settings = {"stopping": stopping_text(measurement.stopping), "block_rounds": measure.BLOCK_ROUNDS}
        extra_settings = {**extra_settings, **sequential_settings}
    return {
        side: Results(
            environment=dataclasses.replace(sides.environments[side], gpu_state=states, **stable),
            settings=_settings(side, measurement, sides.timing, {**sides.subjects[side], **extra_settings}),
            benchmarks=[bench for owner, bench in benchmarks if owner == side],
            failures=[failure for owner, failure in failures if owner == side],
            created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        )
        for side in sides.names
    }


def _credible(sides: Described, measured: Measured) -> tuple[list[tuple[str, Benchmark]], list[tuple[str, Failure]]]:
    """The benchmarks, less those of a subject's own whose time no GPU can give (credible.py),
    which become wrong results naming why. The ceiling is the run's, over every side's bounds."""
    bounds = {name for described in sides.subjects.values() for name in described.get("bounds", [])}
    gpu = next((e.gpu_name for e in sides.environments.values() if e.gpu_name), None)
    top = credible.ceiling((bench for _, bench in measured.benchmarks), bounds, gpu)
    kept, failures = [], list(measured.failures)
    for side, bench in measured.benchmarks:
        why = None
        if bench.kernel in sides.subjects[side].get("under_test", []):
            why = credible.not_credible(bench, top)
        if why is None:
            kept.append((side, bench))
            continue
        failures.append((side, failure_of(bench, f"wrong result: {why}")))
    return kept, failures


def _settings(side: str, measurement: Measurement, timing: str, extra_settings: dict[str, Any]) -> Settings:
    settings = measurement.settings
    return Settings(
        suites=list(dict.fromkeys(s.name for s in measurement.suites)),
        samples=settings.samples,
        warmup_calls=settings.warmup_calls,
        seed=settings.seed,
        timing=timing,
        side=side or None,
        skipped_kernels=list(settings.skipped),
        chosen_cases=list(settings.cases),
        chosen_kernels=list(settings.kernels),
        chosen_variants={name: list(values) for name, values in settings.variants},
        chosen_modes=list(settings.modes),
        **extra_settings,
    )
