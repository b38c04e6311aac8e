"""`perfbot run`: check every implementation on every case, then time the correct ones. The case
loop (one turn loop for a run on one GPU or shared out across several, shards.py), and the
sides whose benchmarks it times, here in this process."""

from __future__ import annotations

import dataclasses
import functools
import random
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import click
import torch

from ..compiling import toolchain
from ..errors import BadInput, EnvironmentFailure, WrongResult
from ..git import kernels_revision
from ..loading import guard, isolation
from ..loading.package import Loaded
from ..loading.subject import Subject, Suite
from ..records.autotune import AutotunePick
from ..records.run import Benchmark, Environment, Failure, GpuStates, Results, failure_of
from . import alignment, loads, measure, sequential
from .environment import GpuMonitor, collect_environment
from .groups import _Ready, capture_group, check_group, describe, finish_group, recheck_fresh, record_compiled
from .planning import RunSettings, plan, single_cases
from .recording import Described, Measured, Measurement, results_by_side
from .sequential import Stopping


def gpu_device(command: str | None = None) -> str:
    """The device perfbot measures on and its inputs live on, "cuda"; refused without a CUDA GPU,
    naming the command (by default the one the command line runs). What measures asks here once
    and passes the answer on. (The CPU tests of the orchestration replace this function, with the
    GPU's timing primitives, by one that answers "cpu": tests/fake_gpu.py.)"""
    if not torch.cuda.is_available():
        if command is None:
            context = click.get_current_context(silent=True)
            command = context.command_path if context is not None else "this command"
        raise EnvironmentFailure(f"no CUDA GPU is visible (torch.cuda.is_available() is False); {command} needs one")
    return "cuda"


def run(
    subject: Loaded,
    suites: Sequence[Suite],
    settings: RunSettings,
    on_progress: Callable[[str, int], None] = lambda label, steps: None,
) -> Results:
    """Measure the suites. `on_progress(label, steps)` is told of finished steps."""
    return measure_sides(LocalSides({"": subject}, settings), Measurement(suites, settings), on_progress)[""]


class Sides(Protocol):
    """Where the benchmarks of a run live: one subject (a plain run), or the two sides of an A/B
    run, in this process (`LocalSides`) or in worker processes (worker_sides.WorkerSides). Per case,
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


def take_turns(
    turns: sequential.Turns,
    cases: Sequence[Suite],
    measure_one: Callable[[Suite, sequential.Turn], Measured],
    on_measured: Callable[[int, Measured], None],
    gpu: object = None,
) -> None:
    """The turn loop of one GPU (a run across GPUs drives one per GPU, each in a thread): take
    the case of the next turn, measure it, tell `turns` how long it sampled; a case that needs
    no second turn is done (`on_measured(its index, what it gave)`). A failure ends the run:
    no GPU takes another turn."""
    while (turn := turns.take(gpu)) is not None:
        try:
            measured = measure_one(cases[turn.index], turn)
        except BaseException:
            turns.stop()
            raise
        turns.done(turn, measured.sampling_seconds, measured.unfinished, gpu)
        if measured.unfinished is None:
            on_measured(turn.index, measured)


def measure_sides(
    sides: Sides, measurement: Measurement, on_progress: Callable[[str, int], None] = lambda label, steps: None
) -> dict[str, Results]:
    """Measure the suites on every side, case by case; one Results per side. With two sides this
    is an A/B run: each case's benchmarks of both sides alternate sample by sample on one GPU,
    for `settings.samples` rounds or, with `stopping`, until each pair is decided."""
    settings, stopping = measurement.settings, measurement.stopping
    before = collect_environment().gpu_state
    cases = single_cases(measurement.suites)
    turns = sequential.Turns(len(cases), sequential.Budget(stopping.seconds, len(cases)) if stopping else None)
    done: list[Measured] = [Measured() for _ in cases]
    with GpuMonitor() as monitor:

        def measure_one(case: Suite, turn: sequential.Turn) -> Measured:
            return measure_case(sides, case, settings, monitor, on_progress, stopping, turn)

        take_turns(turns, cases, measure_one, done.__setitem__)
    measured = Measured()
    for one in done:
        measured.add(one)
    states = GpuStates(before.after, collect_environment().gpu_state.after)
    return results_by_side(describe_sides(sides), measurement, measured, states)


def describe_sides(sides: Sides) -> Described:
    """The sides as their results describe them."""
    return Described(sides.names, sides.environments(), sides.described(), sides.timing)


class LocalSides:
    """Every side's subject loaded in this process, timed on its GPU (`measure.GraphTimer`)."""

    timing = f"one CUDA-graph replay per sample, {measure.L2_FLUSH}, implementations interleaved"

    def __init__(self, subjects: dict[str, Loaded], settings: RunSettings, fixed: alignment.Fixed | None = None):
        """`fixed`: the autotune picks each benchmark is to run (a confirming round: its first
        round's, alignment.fix); None: each side tunes, and the head is aligned to the base."""
        self.device = gpu_device()  # where inputs are made, and the kernels run
        toolchain.pin_toolchain()  # before any side's kernel compiles
        self.subjects, self.settings, self.fixed = subjects, settings, fixed
        # The base's picks by benchmark name, where this process holds the head alone (worker.py).
        self.against: dict[str, list[AutotunePick]] | None = None
        self.names = tuple(subjects)
        self.generator: torch.Generator | None = None  # made at the first case, once the GPU is known
        self.ready: list[_Ready] = []
        self.judge: Subject | None = None
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
            self.generator = torch.Generator(device=self.device).manual_seed(self.settings.seed)
        # Which side's implementations run first (and so compile, and are loaded, first) is drawn
        # too; the inputs and references stay the first listed side's, the round keeps its order.
        sides = self.placement.sample(list(self.subjects), len(self.subjects))
        checked = sorted(group, key=lambda planned: sides.index(planned.side))
        before = set(sys.modules)
        self.judge = self.subjects[group[0].side].subject  # whose inputs and references judge the case
        # Each call into the subject within an hour: a call that never ends is refused, exit 2.
        self.ready, failed = check_group(checked, self.generator, self.judge, guard.MEASURED_CALL_LIMIT_S)
        if len(self.subjects) > 1:
            _refuse_late_imports(set(sys.modules) - before, self.subjects)
        # The autotuner is part of the side: both sides at the configs they are judged at.
        if self.fixed is not None:
            arms = alignment.fix(self.ready, self.fixed)
        else:
            arms = alignment.align(self.ready, self.against) if len(self.subjects) > 1 or self.against else []
        failed += record_compiled(
            self.ready, self.device, guard.MEASURED_CALL_LIMIT_S, keep_sass=self.settings.keep_sass
        )
        # Found once the check has run: a subject may import a module of kernels at its first call.
        found = {
            id(k): k
            for loaded in self.subjects.values()
            for k in loads.triton_kernels(loaded.module, loaded.modules.values())
        }
        self.kernels = list(found.values())
        listed = {id(planned): at for at, planned in enumerate(group)}
        self.ready.sort(key=lambda ready: listed[id(ready.planned)])
        self.ready += alignment.kept(arms, self.ready)
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
        for r in self.ready:
            if r.planned.key in keys and (problem := measure.graph_problem(self.captured[r.planned.key], r.launches)):
                raise WrongResult(f"{r.planned.key}, captured again for a block of rounds: {problem}")

    def finish(
        self, samples: dict[str, list[float]], throttled: list[int]
    ) -> tuple[list[tuple[str, Benchmark]], list[tuple[str, Failure]]]:
        timed, wrong = finish_group(self.ready, self.captured, samples, throttled)
        kept = [r for r in self.ready if samples.get(r.planned.key)]
        fresh = recheck_fresh(kept, self.captured, self.judge, self.device) if self.judge is not None else {}
        if fresh:  # wrong on fresh inputs: a failure, not a benchmark
            reasons = {(r.planned.side, r.planned.name): fresh[r.planned.key] for r in kept if r.planned.key in fresh}
            wrong += [(side, failure_of(b, reasons[(side, b.name)])) for side, b in timed if (side, b.name) in reasons]
            timed = [(side, b) for side, b in timed if (side, b.name) not in reasons]
        done = (timed, wrong)
        self.ready, self.captured = [], {}
        self.held = []  # the graphs that called into them are gone
        if self.device == "cuda":
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
