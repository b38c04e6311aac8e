"""The records of a run: one Results per side from what measuring its cases gave."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..loading.subject import Suite
from ..records.run import Benchmark, Environment, Failure, GpuStates, Results, Settings
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


def results_by_side(
    names: Sequence[str],
    environments: dict[str, Environment],
    described: dict[str, dict[str, Any]],
    states: GpuStates,
    measured: Measured,
    suites: Sequence[Suite],
    settings: RunSettings,
    extra_settings: dict[str, Any],
    timing: str,
    stable: dict[str, Any] | None = None,
    stopping: Stopping | None = None,
) -> dict[str, Results]:
    """One Results per side from what was measured; `stable`, the GPU's stability (from the
    rounds measured, by default); `stopping`, how a sequential A/B chose its rounds."""
    stable = stable if stable is not None else stability(measured.rounds)
    if stopping is not None:
        sequential_settings = {"stopping": stopping_text(stopping), "block_rounds": measure.BLOCK_ROUNDS}
        extra_settings = {**extra_settings, **sequential_settings}
    return {
        side: side_results(
            environments[side],
            states,
            stable,
            suites,
            settings,
            side,
            [bench for owner, bench in measured.benchmarks if owner == side],
            [failure for owner, failure in measured.failures if owner == side],
            {**described[side], **extra_settings},
            timing,
        )
        for side in names
    }


def side_results(
    environment: Environment,
    states: GpuStates,
    stable: dict[str, Any],
    suites: Sequence[Suite],
    settings: RunSettings,
    side: str,
    benchmarks: list[Benchmark],
    failures: list[Failure],
    extra_settings: dict[str, Any],
    timing: str,
) -> Results:
    """One side's results: the environment with the GPU's states before and after and the run's
    stability, the settings, and what was measured."""
    return Results(
        environment=dataclasses.replace(environment, gpu_state=states, **stable),
        settings=Settings(
            suites=list(dict.fromkeys(s.name for s in suites)),
            samples=settings.samples,
            warmup_calls=settings.warmup_calls,
            seed=settings.seed,
            timing=timing,
            side=side or None,
            skipped_kernels=list(settings.skipped),
            **extra_settings,
        ),
        benchmarks=benchmarks,
        failures=failures,
        created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    )
