"""`perfbot run`: check every implementation on every case, then time the correct ones."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch

from . import correctness, git, measure
from .environment import GpuMonitor, collect_environment, stability
from .errors import BadInput, EnvironmentFailure
from .results import Benchmark, Environment, Failure, GpuStates, Results, Settings, variant_name
from .schema import clean
from .subject import Case, Subject, Suite

MIN_SAMPLES = 10
# Where inputs live. Only the CPU tests of the orchestration change it (with the GPU's timing
# primitives replaced): perfbot measures on CUDA devices.
DEVICE = "cuda"


@dataclass(frozen=True)
class RunSettings:
    samples: int = 30
    warmup_calls: int = 3
    seed: int = 0
    approximations: tuple[str, ...] = ("none",)
    kernels: tuple[str, ...] = ()  # empty: each suite's own list

    def __post_init__(self) -> None:
        if self.samples < MIN_SAMPLES:
            raise BadInput(f"samples must be at least {MIN_SAMPLES} for a meaningful median, got {self.samples}")
        if self.warmup_calls < 1:
            raise BadInput(f"warmup calls must be at least 1, got {self.warmup_calls}")
        bad = [a for a in self.approximations if a not in ("none", "tanh")]
        if bad or not self.approximations:
            raise BadInput(f"approximate must be 'none' or 'tanh', got {bad or 'nothing'}")


@dataclass(frozen=True)
class Planned:
    """One benchmark to run: an implementation of a case with one GELU approximation, from one
    side of the run ("" for a plain run; "base" or "head" for an A/B run)."""

    case: Case
    kernel: str  # the implementation
    approximate: str
    side: str = ""
    impl: Any = field(default=None, compare=False, repr=False)

    @property
    def variant(self) -> dict[str, str]:
        """The parameters set away from their defaults (what results record as the variant)."""
        return {"approximate": self.approximate} if self.approximate != "none" else {}

    @property
    def key(self) -> str:
        """Unique within a timed group: both sides of an A/B run time the same kernel names."""
        name = variant_name(self.kernel, self.variant)
        return f"{self.side}:{name}" if self.side else name


def plan(
    subject: Subject, suites: Sequence[Suite], settings: RunSettings, side: str = "", lenient: bool | None = None
) -> list[list[Planned]]:
    """Benchmarks grouped by case; a group is timed interleaved. The base side of an A/B run
    may lack kernels (it can predate them): those are left out instead of refused. `lenient`
    leaves out what is missing on any side (a run planned whole first, measured case by case)."""
    lenient = side == "base" if lenient is None else lenient
    unknown = [k for k in settings.kernels if k not in subject.implementations]
    if unknown and not lenient:
        raise BadInput(f"unknown kernel {unknown[0]!r}; known: {sorted(subject.implementations)}")
    groups = []
    for suite in suites:
        kernels = [k for k in suite.kernels if not settings.kernels or k in settings.kernels]
        for case in suite.cases:
            group = []
            for name in kernels:
                impl = subject.implementations.get(name)
                if impl is None:
                    continue  # the other side of an A/B run may not have it
                for approximate in settings.approximations:
                    has_gelu = impl.computes == "geglu"
                    if not has_gelu and approximate != settings.approximations[0]:
                        continue  # no GELU in it: once per case is enough
                    group.append(Planned(case, name, approximate if has_gelu else "none", side, impl))
            if group:
                groups.append(group)
    if not groups and not lenient:
        raise BadInput(f"nothing to run: none of the kernels {list(settings.kernels)} is in the chosen suites")
    return groups


def require_gpu() -> None:
    if not torch.cuda.is_available():
        raise EnvironmentFailure("no CUDA GPU is visible (torch.cuda.is_available() is False); perfbot run needs one")


def progress_steps(groups: list[list[Planned]], settings: RunSettings) -> int:
    """Steps `run` reports: one check and `samples` timing rounds per case."""
    return len(groups) * (1 + settings.samples)


def run(
    subject: Subject,
    suites: Sequence[Suite],
    settings: RunSettings,
    on_progress: Callable[[str, int], None] = lambda label, steps: None,
) -> Results:
    """Measure the suites. `on_progress(label, steps)` is told of finished steps."""
    return measure_sides(LocalSides({"": subject}, settings), suites, settings, on_progress)[""]


class Sides(Protocol):
    """Where the benchmarks of a run live: one subject (a plain run), or the two sides of an A/B
    run, in this process (`LocalSides`) or in worker processes (worker.WorkerSides). Per case,
    `prepare` checks and captures every side's benchmarks and returns their keys; `timer` times
    them; `finish` checks what was timed and makes the records."""

    names: tuple[str, ...]
    timing: str  # how a sample was taken, recorded with the results

    def prepare(self, case: Suite) -> tuple[list[str], list[tuple[str, Failure]]]: ...

    def timer(self) -> measure.Timer: ...

    def finish(
        self, samples: dict[str, list[float]], throttled: list[int]
    ) -> tuple[list[tuple[str, Benchmark]], list[tuple[str, Failure]]]: ...

    def environments(self) -> dict[str, Environment]: ...


def measure_sides(
    sides: Sides,
    suites: Sequence[Suite],
    settings: RunSettings,
    on_progress: Callable[[str, int], None] = lambda label, steps: None,
    extra_settings: dict[str, Any] | None = None,
) -> dict[str, Results]:
    """Measure the suites on every side, case by case; one Results per side. With two sides this
    is an A/B run: each case's benchmarks of both sides alternate sample by sample on one GPU."""
    before = collect_environment().gpu_state
    benchmarks: dict[str, list[Benchmark]] = {side: [] for side in sides.names}
    failures: dict[str, list[Failure]] = {side: [] for side in sides.names}
    rounds: list[measure.Round] = []
    with GpuMonitor() as monitor:
        for suite in suites:
            for case in suite.cases:
                label = f"{case.suite}/{case.name}"
                keys, failed = sides.prepare(dataclasses.replace(suite, cases=(case,)))
                on_progress(label, 1)
                timed: list[tuple[str, Benchmark]] = []
                if keys:
                    timings = measure.time_rounds(
                        sides.timer(),
                        keys,
                        settings.samples,
                        monitor=monitor,
                        on_round=functools.partial(on_progress, label, 1),
                    )
                    rounds += timings.rounds
                    throttled = [index for index, r in enumerate(timings.rounds) if r.throttle_reasons]
                    timed, wrong = sides.finish(timings.samples, throttled)
                    failed += wrong
                else:
                    on_progress(label, settings.samples)
                for side, bench in timed:
                    benchmarks[side].append(bench)
                for side, failure in failed:
                    failures[side].append(failure)
    environments = sides.environments()
    at_end = collect_environment().gpu_state.after
    return {
        side: side_results(
            environments[side],
            GpuStates(before.after, at_end),
            rounds,
            suites,
            settings,
            side,
            benchmarks[side],
            failures[side],
            extra_settings or {},
            sides.timing,
        )
        for side in sides.names
    }


def side_results(
    environment: Environment,
    states: GpuStates,
    rounds: list[measure.Round],
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
        environment=dataclasses.replace(environment, gpu_state=states, **stability(rounds)),
        settings=Settings(
            suites=[s.name for s in suites],
            samples=settings.samples,
            warmup_calls=settings.warmup_calls,
            seed=settings.seed,
            timing=timing,
            error_bounds=dict(correctness.ERROR_BOUNDS),
            side=side or None,
            **extra_settings,
        ),
        benchmarks=benchmarks,
        failures=failures,
        created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    )


class LocalSides:
    """Every side's subject loaded in this process, timed on its GPU (`measure.GraphTimer`)."""

    timing = f"one CUDA-graph replay per sample, {measure.L2_FLUSH}, implementations interleaved"

    def __init__(self, subjects: dict[str, Subject], settings: RunSettings):
        require_gpu()
        self.subjects, self.settings = subjects, settings
        self.names = tuple(subjects)
        self.generator: torch.Generator | None = None  # made at the first case, once the GPU is known
        self.ready: list[_Ready] = []
        self.captured: dict[str, measure.Captured] = {}

    def prepare(self, case: Suite) -> tuple[list[str], list[tuple[str, Failure]]]:
        group = [
            planned
            for side, subject in self.subjects.items()
            for planned_group in plan(subject, [case], self.settings, side, lenient=True)
            for planned in planned_group
        ]
        self.ready, self.captured = [], {}
        if not group:
            return [], []
        if self.generator is None:
            self.generator = torch.Generator(device=DEVICE).manual_seed(self.settings.seed)
        self.ready, failed = check_group(group, self.generator)
        self.captured, not_captured = capture_group(self.ready, self.settings)
        return list(self.captured), failed + not_captured

    def timer(self) -> measure.Timer:
        return measure.GraphTimer(self.captured)

    def finish(
        self, samples: dict[str, list[float]], throttled: list[int]
    ) -> tuple[list[tuple[str, Benchmark]], list[tuple[str, Failure]]]:
        done = finish_group(self.ready, self.captured, samples, throttled)
        self.ready, self.captured = [], {}
        if DEVICE == "cuda":
            torch.cuda.empty_cache()
        return done

    def environments(self) -> dict[str, Environment]:
        environment = collect_environment()
        return {
            side: dataclasses.replace(environment, **kernels_revision(subject.path))
            for side, subject in self.subjects.items()
        }


@dataclass
class _Ready:
    planned: Planned
    computes: str
    call: Callable[[], torch.Tensor]
    expected: torch.Tensor
    check: correctness.Check
    config: dict | None


def make_inputs(case: Case, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh random inputs for each case, scaled so that z = x @ weight.T is of order 1."""
    dtype = getattr(torch, case.dtype)
    x = torch.randn(case.M, case.K, generator=generator, device=DEVICE).to(dtype)
    weight = (torch.randn(2 * case.N, case.K, generator=generator, device=DEVICE) / case.K**0.5).to(dtype)
    return x, weight


def check_group(group: list[Planned], generator: torch.Generator) -> tuple[list[_Ready], list[tuple[str, Failure]]]:
    case = group[0].case
    x, weight = make_inputs(case, generator)
    references: dict[tuple[str, str], torch.Tensor] = {}
    ready, failures = [], []
    for planned in group:
        impl = planned.impl
        key = (impl.computes, planned.approximate)
        if key not in references:
            references[key] = correctness.reference(x, weight, *key)
        try:
            fn = impl.build(planned.approximate)
            output = fn(x, weight)
            if DEVICE == "cuda":
                torch.cuda.synchronize()
        except Exception as error:  # noqa: BLE001 -- any failure of the subject is reported, never timed
            failures.append((planned.side, _failure(planned, f"raised {type(error).__name__}: {_first_line(error)}")))
            continue
        check = correctness.check(output, references[key], case.dtype)
        if not check.passed:
            failures.append((planned.side, _failure(planned, "wrong result", check)))
            continue
        config = impl.config(x, weight)
        ready.append(_Ready(planned, impl.computes, functools.partial(fn, x, weight), references[key], check, config))
    return ready, failures


def capture_group(
    ready: list[_Ready], settings: RunSettings
) -> tuple[dict[str, measure.Captured], list[tuple[str, Failure]]]:
    """Capture every checked benchmark as a CUDA graph; one that cannot be captured leaves
    `ready` and becomes a failure."""
    captured, failures = {}, []
    for r in list(ready):
        try:
            captured[r.planned.key] = measure.capture(r.call, settings.warmup_calls)
        except Exception as error:  # noqa: BLE001 -- e.g. a kernel that cannot run inside CUDA-graph capture
            failures.append(
                (
                    r.planned.side,
                    _failure(
                        r.planned, f"cannot be captured in a CUDA graph: {type(error).__name__}: {_first_line(error)}"
                    ),
                )
            )
            ready.remove(r)
    return captured, failures


def finish_group(
    ready: list[_Ready], captured: dict[str, measure.Captured], samples: dict[str, list[float]], throttled: list[int]
) -> tuple[list[tuple[str, Benchmark]], list[tuple[str, Failure]]]:
    """The timed benchmarks, after checking that what was timed is right too: the output of the
    last graph replay."""
    benchmarks, failures = [], []
    for r in ready:
        case = r.planned.case
        replayed = correctness.check(captured[r.planned.key].output, r.expected, case.dtype)
        if not replayed.passed:
            failures.append(
                (r.planned.side, _failure(r.planned, "wrong result when replayed from a CUDA graph", replayed))
            )
            continue
        benchmarks.append(
            (
                r.planned.side,
                Benchmark(
                    kernel=r.planned.kernel,
                    variant=r.planned.variant,
                    shape=case.shape,
                    dtype=case.dtype,
                    samples_ms=samples[r.planned.key],
                    suite=case.suite,
                    case=case.name,
                    flops=case.flops(r.computes),
                    bytes=case.bytes_moved(r.computes),
                    relative_error=r.check.relative_error,
                    error_bound=r.check.bound,
                    config=r.config,
                    throttled_samples=throttled,
                ),
            )
        )
    return benchmarks, failures


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return clean(text.splitlines()[0], 300) if text else "(no message)"


def _failure(planned: Planned, reason: str, check: correctness.Check | None = None) -> Failure:
    case = planned.case
    return Failure(
        kernel=planned.kernel,
        variant=planned.variant,
        shape=case.shape,
        dtype=case.dtype,
        reason=reason,
        suite=case.suite,
        case=case.name,
        relative_error=check.relative_error if check else None,
        error_bound=check.bound if check else None,
    )


def kernels_revision(path: Path) -> dict[str, Any]:
    """The git commit the kernels directory is at, and whether its files differ from it (a
    results file measured from uncommitted kernels must not pass for that commit's)."""
    return {"kernels_commit": git_commit(path), "kernels_dirty": _git_dirty(path)}


def git_commit(path: Path) -> str | None:
    done = _git_or_none(path, "rev-parse", "HEAD")
    return (done.stdout.strip() or None) if done is not None else None


def _git_dirty(path: Path) -> bool | None:
    done = _git_or_none(path, "status", "--porcelain", "--", ".")
    return bool(done.stdout.strip()) if done is not None else None


def _git_or_none(path: Path, *args: str) -> subprocess.CompletedProcess | None:
    """A git command that succeeded, or None (not a repository, no git, git hanging)."""
    try:
        done = git.run(path, *args, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done if done.returncode == 0 else None
