"""`perfbot run`: check every implementation on every case, then time the correct ones."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import itertools
import random
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch

from .. import git
from ..errors import BadInput, EnvironmentFailure, listed
from ..loading import guard, isolation
from ..loading.subject import Case, Loaded, Subject, Suite
from ..records.results import Benchmark, Environment, Failure, GpuStates, Results, Settings, variant_name
from ..records.schema import clean, shown
from . import correctness, loads, measure, sequential
from .environment import GpuMonitor, collect_environment, stability
from .sequential import Stopping

MIN_SAMPLES = 10
# Where inputs live. Only the CPU tests of the orchestration change it (with the GPU's timing
# primitives replaced): perfbot measures on CUDA devices.
DEVICE = "cuda"


@dataclass(frozen=True)
class RunSettings:
    samples: int = 30
    warmup_calls: int = 3
    seed: int = 0
    # The values to measure per variant parameter; a parameter left out takes its default only.
    variants: tuple[tuple[str, tuple[str, ...]], ...] = ()
    kernels: tuple[str, ...] = ()  # implementations; empty: each suite's own list
    skipped: tuple[str, ...] = ()  # implementations left out on purpose

    def __post_init__(self) -> None:
        if self.samples < MIN_SAMPLES:
            raise BadInput(f"samples must be at least {MIN_SAMPLES} for a meaningful median, got {self.samples}")
        if self.warmup_calls < 1:
            raise BadInput(f"warmup calls must be at least 1, got {self.warmup_calls}")


@dataclass(frozen=True)
class Planned:
    """One benchmark to run: an implementation of a case with its variant values, from one side of
    the run ("" for a plain run; "base" or "head" for an A/B run)."""

    case: Case
    kernel: str  # the implementation
    values: tuple[tuple[str, str], ...]  # every variant parameter it takes, with its value
    side: str = ""
    impl: Any = field(default=None, compare=False, repr=False)
    defaults: tuple[tuple[str, str], ...] = ()
    subject: Any = field(default=None, compare=False, repr=False)

    @property
    def variant(self) -> dict[str, str]:
        """The parameters set away from their defaults (what results record as the variant)."""
        default = dict(self.defaults)
        return {name: value for name, value in self.values if default.get(name) != value}

    @property
    def key(self) -> str:
        """Unique within a timed group: both sides of an A/B run time the same kernel names."""
        name = variant_name(self.kernel, self.variant)
        return f"{self.side}:{name}" if self.side else name


def chosen_variants(subject: Subject, requested: Sequence[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`--variant NAME=VALUE` options as RunSettings.variants: every value asked for, per parameter;
    `NAME=all` takes every value the subject lists."""
    chosen: dict[str, list[str]] = {}
    for text in requested:
        name, _, value = text.partition("=")
        if name not in subject.variants:
            known = listed(subject.variants) or "none"
            raise BadInput(f"--variant {text!r}: subject {subject.name!r} has no variant {name!r} (it has {known})")
        values = [str(v) for v in subject.variants[name]]
        if value != "all" and value not in values:
            raise BadInput(f"--variant {text!r}: {name} is one of {listed(values, 10)} (or all)")
        for picked in values if value == "all" else [value]:
            chosen.setdefault(name, [])
            if picked not in chosen[name]:
                chosen[name].append(picked)
    return tuple((name, tuple(values)) for name, values in chosen.items())


def plan(
    loaded: Loaded, suites: Sequence[Suite], settings: RunSettings, side: str = "", lenient: bool | None = None
) -> list[list[Planned]]:
    """Benchmarks grouped by case; a group is timed interleaved. The base side of an A/B run
    may lack implementations (it can predate them): those are left out instead of refused.
    `lenient` leaves out what is missing on any side (a run planned whole first, measured case by
    case)."""
    lenient = side == "base" if lenient is None else lenient
    subject = loaded.subject
    unknown = [k for k in (*settings.kernels, *settings.skipped) if k not in subject.implementations]
    if unknown and not lenient:
        raise BadInput(f"unknown implementation {unknown[0]!r}; known: {sorted(subject.implementations)}")
    asked = dict(settings.variants)
    defaults = tuple(subject.defaults().items())
    groups = []
    for suite in suites:
        names = [
            k
            for k in suite.implementations
            if (not settings.kernels or k in settings.kernels) and k not in settings.skipped
        ]
        for case in suite.cases:
            group = []
            for name in names:
                impl = subject.implementations.get(name)
                if impl is None:
                    continue  # the other side of an A/B run may not have it
                takes = subject.takes(impl)
                options = [asked.get(param, (dict(defaults)[param],)) for param in takes]
                for values in itertools.product(*options):
                    values_of = tuple(zip(takes, values, strict=True))
                    group.append(Planned(case, name, values_of, side, impl, defaults, subject))
            keys = [planned.key for planned in group]
            if len(set(keys)) != len(keys):  # two benchmarks under one name would overwrite each other
                raise BadInput(f"case {suite.name}/{case.name}: two benchmarks would share the name {keys[0]!r}")
            if group:
                groups.append(group)
    if not groups and not lenient:
        raise BadInput(f"nothing to run: none of the implementations {list(settings.kernels)} is in the chosen suites")
    return groups


def require_gpu() -> None:
    if not torch.cuda.is_available():
        raise EnvironmentFailure("no CUDA GPU is visible (torch.cuda.is_available() is False); perfbot run needs one")


def progress_steps(groups: list[list[Planned]], settings: RunSettings, stopping: Stopping | None = None) -> int:
    """Steps `run` reports: per case, one check and then `samples` timing rounds, or with
    sequential sampling (whose rounds are not known ahead) one step for all of them."""
    return len(groups) * (1 + (1 if stopping is not None else settings.samples))


def run(
    subject: Loaded,
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

    def described(self) -> dict[str, dict[str, Any]]: ...

    def recapture(self, keys: list[str]) -> None: ...


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


def measure_case(
    sides: Sides,
    case: Suite,
    settings: RunSettings,
    monitor: measure.Monitor,
    on_progress: Callable[[str, int], None],
    stopping: Stopping | None = None,
    turn: sequential.Turn = sequential.Turn(0, 0.0),
) -> Measured:
    """One case (a suite cut down to it) on every side: check and capture, time interleaved,
    check again. With `stopping`, an A/B pair is timed until it is decided (sequential.py) or
    the case has sampled for its turn's share of seconds; else `settings.samples` rounds. On its
    first turn, a case whose time ran out with pairs undecided comes back `unfinished`, to be
    measured again in a second turn that goes on from those timings."""
    (only,) = case.cases
    label = f"{only.suite}/{only.name}"
    keys, failed = sides.prepare(case)
    on_progress(label if turn.first else f"{label}, again", 1 if turn.first else 0)
    measured = Measured(failures=failed)
    started = time.monotonic()
    deadline = started + turn.share
    if not keys:
        on_progress(label, 1 if stopping is not None else settings.samples)
        return measured
    pairs = sequential.pairs_of(keys)
    seed = f"{settings.seed}/{label}"  # which side takes which place in each round (measure.round_order)
    if stopping is not None and pairs:
        timings = sequential.time_until_decided(
            only,
            sides.timer(),
            keys,
            pairs,
            stopping,
            deadline,
            monitor=monitor,
            recapture=sides.recapture,
            earlier=turn.earlier,
            seed=seed,
        )
        if turn.first and sequential.still_open(only, pairs, timings, stopping):
            return Measured(sampling_seconds=time.monotonic() - started, unfinished=timings)
    else:  # a plain run, or an A/B case with nothing on both sides: fixed rounds
        per_round = None if stopping is not None else functools.partial(on_progress, label, 1)
        timings = measure.time_rounds(
            sides.timer(),
            keys,
            settings.samples,
            monitor=monitor,
            on_round=per_round,
            pairs=list(pairs.values()),
            seed=seed,
        )
    if stopping is not None:
        on_progress(label, 1)
    throttled = [index for index, r in enumerate(timings.rounds) if r.throttle_reasons]
    measured.sampling_seconds = time.monotonic() - started
    timed, wrong = sides.finish(timings.samples, throttled)
    measured.benchmarks, measured.rounds = timed, timings.rounds
    measured.failures += wrong
    return measured


def single_cases(suites: Sequence[Suite]) -> list[Suite]:
    """Each case of the suites as a suite of its own, in order: the unit a run measures."""
    return [dataclasses.replace(suite, cases=(case,)) for suite in suites for case in suite.cases]


def measure_sides(
    sides: Sides,
    suites: Sequence[Suite],
    settings: RunSettings,
    on_progress: Callable[[str, int], None] = lambda label, steps: None,
    extra_settings: dict[str, Any] | None = None,
    stopping: Stopping | None = None,
) -> dict[str, Results]:
    """Measure the suites on every side, case by case; one Results per side. With two sides this
    is an A/B run: each case's benchmarks of both sides alternate sample by sample on one GPU,
    for `settings.samples` rounds or, with `stopping`, until each pair is decided."""
    before = collect_environment().gpu_state
    cases = single_cases(suites)
    turns = sequential.Turns(len(cases), sequential.Budget(stopping.seconds, len(cases)) if stopping else None)
    done: list[Measured] = [Measured() for _ in cases]
    with GpuMonitor() as monitor:
        while (turn := turns.take()) is not None:
            one = measure_case(sides, cases[turn.index], settings, monitor, on_progress, stopping, turn)
            turns.done(turn, one.sampling_seconds, one.unfinished)
            done[turn.index] = one
    measured = Measured()
    for one in done:
        measured.add(one)
    return results_by_side(
        sides.names,
        sides.environments(),
        sides.described(),
        GpuStates(before.after, collect_environment().gpu_state.after),
        measured,
        suites,
        settings,
        extra_settings or {},
        sides.timing,
        stopping=stopping,
    )


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


class LocalSides:
    """Every side's subject loaded in this process, timed on its GPU (`measure.GraphTimer`)."""

    timing = f"one CUDA-graph replay per sample, {measure.L2_FLUSH}, implementations interleaved"

    def __init__(self, subjects: dict[str, Loaded], settings: RunSettings):
        require_gpu()
        self.subjects, self.settings = subjects, settings
        self.names = tuple(subjects)
        self.generator: torch.Generator | None = None  # made at the first case, once the GPU is known
        self.ready: list[_Ready] = []
        self.captured: dict[str, measure.Captured] = {}
        self.placement = random.Random()  # capture order and offsets: seeded for each case's turn in `prepare`
        self.turns: dict[str, int] = {}
        self.kernels: list[Any] = []  # every side's Triton kernels, loaded anew every few blocks (loads.py)
        self.blocks = 0  # re-captures of this case's turn
        self.held: list[list[Any]] = []  # the loads let go this turn, alive until its graphs are

    def prepare(self, case: Suite) -> tuple[list[str], list[tuple[str, Failure]]]:
        group = [
            planned
            for side, subject in self.subjects.items()
            for planned_group in plan(subject, [case], self.settings, side, lenient=True)
            for planned in planned_group
        ]
        self.ready, self.captured, self.held, self.blocks = [], {}, [], 0
        if not group:
            return [], []
        # Each case's turn draws its own placements, the same for a seed wherever it is measured
        # (on whichever GPU's worker, after whichever cases).
        label = f"{group[0].case.suite}/{group[0].case.name}"
        self.turns[label] = self.turns.get(label, 0) + 1
        self.placement = random.Random(f"{self.settings.seed}/{label}/{self.turns[label]}")
        if self.generator is None:
            self.generator = torch.Generator(device=DEVICE).manual_seed(self.settings.seed)
        # Which side's implementations run first (and so compile, and are loaded, first) is drawn
        # too; the inputs and references stay the first listed side's, the round keeps its order.
        sides = self.placement.sample(list(self.subjects), len(self.subjects))
        checked = sorted(group, key=lambda planned: sides.index(planned.side))
        before = set(sys.modules)
        self.ready, failed = check_group(checked, self.generator, self.subjects[group[0].side].subject)
        if len(self.subjects) > 1:
            _refuse_late_imports(set(sys.modules) - before, self.subjects)
        # Found once the check has run: a subject may import a module of kernels at its first call.
        found = {
            id(k): k
            for loaded in self.subjects.values()
            for k in loads.triton_kernels(loaded.module, loaded.modules.values())
        }
        self.kernels = list(found.values())
        listed = {id(planned): at for at, planned in enumerate(group)}
        self.ready.sort(key=lambda ready: listed[id(ready.planned)])
        failed.sort(key=lambda failure: self.names.index(failure[0]))
        self.captured, not_captured = capture_group(self.ready, self.settings, self.placement)
        return list(self.captured), failed + not_captured

    def timer(self) -> measure.Timer:
        return measure.GraphTimer(self.captured)

    def recapture(self, keys: list[str]) -> None:
        """Capture these benchmarks again (a sequential A/B's next block: measure.capture_again);
        the timer sees the new graphs. Every few blocks, on kernels every side loads anew, so that
        no one load of a side's code is timed for the whole run (loads.py)."""
        self.blocks += 1
        if self.blocks % loads.BLOCKS_PER_LOAD == 0:
            self.held.append(loads.forget_compiled(self.kernels))
            del self.held[: -loads.MOST_HELD]
        measure.capture_again(self.captured, {r.planned.key: r.call for r in self.ready}, keys, self.placement)

    def finish(
        self, samples: dict[str, list[float]], throttled: list[int]
    ) -> tuple[list[tuple[str, Benchmark]], list[tuple[str, Failure]]]:
        done = finish_group(self.ready, self.captured, samples, throttled)
        self.ready, self.captured = [], {}
        self.held = []  # the graphs that called into them are gone
        if DEVICE == "cuda":
            torch.cuda.empty_cache()
        return done

    def described(self) -> dict[str, dict[str, Any]]:
        return {
            side: {**describe(loaded.subject), "sources": loaded.sources.recorded()}
            for side, loaded in self.subjects.items()
        }

    def environments(self) -> dict[str, Environment]:
        environment = collect_environment()
        return {
            side: dataclasses.replace(environment, **kernels_revision(subject.path))
            for side, subject in self.subjects.items()
        }


def _refuse_late_imports(imported: set[str], subjects: dict[str, Loaded]) -> None:
    """An A/B's sides import their checkouts' own packages each from its own checkout, while the
    subject loads (isolation.py). One imported only when an implementation first runs comes from
    wherever Python finds it, the same copy for both sides: refused, not measured."""
    own = {name for loaded in subjects.values() for name in isolation.own_packages(loaded.root)}
    late = sorted(name for name in imported if name.partition(".")[0] in own)
    if late:
        raise BadInput(
            f"{late[0]} was imported when an implementation first ran, not when its subject loaded: both sides "
            "would run whichever copy Python finds; import it at module level (docs/subject.md, "
            "'How each side's code is loaded')"
        )


@dataclass
class _Ready:
    planned: Planned
    call: Callable[[], Any]
    expected: Any
    check: correctness.Check
    config: dict[str, Any] | None


def describe(subject: Subject) -> dict[str, Any]:
    """What results record of the subject: its name, its tolerance, which implementations are its
    own and which are bounds (the others are baselines)."""
    return {
        "subject": subject.name,
        "error_bounds": dict(subject.tolerance),
        "under_test": [name for name, impl in subject.implementations.items() if impl.under_test],
        "bounds": [name for name, impl in subject.implementations.items() if impl.bound],
    }


def check_group(
    group: list[Planned], generator: torch.Generator, subject: Subject, limit: float | None = None
) -> tuple[list[_Ready], list[tuple[str, Failure]]]:
    """Run every planned implementation of one case once, on fresh inputs, and compare its output
    with the trusted result: the ones that are right, and a failure for each that is not (or raised).
    Each call into the subject's code may take `limit` seconds at most, if given (guard.py)."""
    case = group[0].case
    label = f"case {case.suite}/{case.name}"
    made = _subjects_own(f"inputs({label})", subject, functools.partial(subject.inputs, case, generator), limit)
    if not isinstance(made, tuple | list):
        raise BadInput(f"subject {subject.name!r}: inputs({label}) returned a {type(made).__name__}, not a tuple")
    inputs = tuple(made)
    references: dict[tuple[int, tuple[tuple[str, str], ...]], Any] = {}
    bound = subject.tolerance[case.dtype]
    ready, failures = [], []
    for planned in group:
        impl = planned.impl
        reference = impl.reference or subject.reference
        key = (id(reference), planned.values)
        values = dict(planned.values)
        if key not in references:
            what = f"{impl.name}'s own reference ({label})" if impl.reference else f"the reference ({label})"
            expected = _subjects_own(what, subject, functools.partial(reference, *inputs, **values), limit)
            untrusted = correctness.untrusted(expected)
            if untrusted:
                raise BadInput(f"subject {subject.name!r}: {what} {untrusted}: no result can be checked against it")
            references[key] = expected
        name = f"subject {subject.name!r}: implementation {variant_name(planned.kernel, planned.variant)!r} ({label})"
        call = guard.guarded(name, impl.fn, *inputs, **values)
        try:
            output = guard.call(name, functools.partial(_synchronized, call, generator.device.type), limit)
        except guard.Refused:
            raise
        except Exception as error:  # noqa: BLE001 -- any failure of the subject is reported, never timed
            failures.append((planned.side, _failure(planned, f"raised {type(error).__name__}: {_first_line(error)}")))
            continue
        check = correctness.check(output, references[key], bound)
        if not check.passed:
            failures.append((planned.side, _failure(planned, "wrong result", check)))
            continue
        try:
            config = (
                None
                if impl.config is None
                else guard.call(f"{name}: config", functools.partial(impl.config, *inputs), limit)
            )
        except guard.Refused:
            raise
        except Exception as error:  # noqa: BLE001 -- reported as this implementation's failure, the run goes on
            failures.append(
                (planned.side, _failure(planned, f"its config raised {type(error).__name__}: {_first_line(error)}"))
            )
            continue
        ready.append(_Ready(planned, call, references[key], check, config))
    return ready, failures


def _synchronized(call: Callable[[], Any], device: str) -> Any:
    """The call's output once the GPU has computed it, so that its time is the call's."""
    output = call()
    if device == "cuda":
        torch.cuda.synchronize()
    return output


def _subjects_own(what: str, subject: Subject, fn: Callable[[], Any], limit: float | None = None) -> Any:
    """Call a function of the subject's (its inputs, a reference, a count): a failure there is the
    subject's mistake, said in one line (exit 2); a GPU out of memory is the environment's."""
    try:
        return guard.call(f"subject {subject.name!r}: {what}", fn, limit)
    except guard.Refused:
        raise
    except torch.cuda.OutOfMemoryError as error:
        raise EnvironmentFailure(
            f"subject {subject.name!r}: {what}: the GPU ran out of memory: {_first_line(error)}"
        ) from None
    except Exception as error:  # noqa: BLE001 -- the subject's code
        raise BadInput(
            f"subject {subject.name!r}: {what} raised {type(error).__name__}: {_first_line(error)}"
        ) from None


def capture_group(
    ready: list[_Ready], settings: RunSettings, placement: random.Random
) -> tuple[dict[str, measure.Captured], list[tuple[str, Failure]]]:
    """Capture every checked benchmark as a CUDA graph, in an order drawn from `placement` (what
    is captured later gets the memory the earlier ones leave: listed order would give it always
    to the head side); one that cannot be captured leaves `ready` and becomes a failure. The
    captures come back in `ready`'s order, the order a round lays them out in."""
    captured, failures = {}, []
    for r in placement.sample(ready, len(ready)):
        try:
            captured[r.planned.key] = measure.capture(r.call, settings.warmup_calls)
        except guard.Refused:
            raise
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
    return {r.planned.key: captured[r.planned.key] for r in ready}, failures


def finish_group(
    ready: list[_Ready], captured: dict[str, measure.Captured], samples: dict[str, list[float]], throttled: list[int]
) -> tuple[list[tuple[str, Benchmark]], list[tuple[str, Failure]]]:
    """The timed benchmarks, after checking that what was timed is right too: the output of the
    last graph replay."""
    benchmarks, failures = [], []
    for r in ready:
        case = r.planned.case
        if not samples.get(r.planned.key):  # a case's second turn: it failed its check on the first
            failures.append(
                (r.planned.side, _failure(r.planned, "not timed: it passed its check only on a second try"))
            )
            continue
        replayed = correctness.check(captured[r.planned.key].output, r.expected, r.check.bound)
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
                    flops=_count(r.planned, "flops"),
                    bytes=_count(r.planned, "bytes"),
                    relative_error=r.check.relative_error,
                    error_bound=r.check.bound,
                    config=r.config,
                    # A pair decided early stopped before the case's last rounds.
                    throttled_samples=[i for i in throttled if i < len(samples[r.planned.key])],
                ),
            )
        )
    return benchmarks, failures


def _count(planned: Planned, what: str) -> int:
    """The flops or bytes of a benchmark: the implementation's own count, else the subject's, else
    0. A bound computes something else than the subject, so it counts only its own."""
    count = getattr(planned.impl, what)
    if count is None and not planned.impl.bound:
        count = getattr(planned.subject, what)
    if count is None:
        return 0
    case = planned.case
    where = f"{what} of {planned.kernel} (case {case.suite}/{case.name})"
    value = _subjects_own(where, planned.subject, functools.partial(count, case))
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 2**63:
        raise BadInput(f"subject {planned.subject.name!r}: {where} must be a number of at least 0, got {shown(value)}")
    return int(value)


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
