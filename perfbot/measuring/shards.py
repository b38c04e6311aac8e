"""A run spread across the GPUs of one host: one worker process per GPU (worker.py), pinned to it
with CUDA_VISIBLE_DEVICES, each loading the subjects itself and answering in JSON lines, so that
no subject's code runs in, or sends objects to, the process that decides. Cases are handed out one at a time from
one queue, so a GPU that finishes early takes the next; a case is the unit, so both sides of an
A/B pair are always timed on the same GPU, interleaved as on one. The records merge into one
Results per side, in the suites' order, each benchmark naming the GPU that measured it. An A/B
whose sides need two Tritons gets two worker processes per GPU instead, one per side as on one
GPU (worker.py), driven from this process.

GPUs of different models time the same code differently, so a run refuses to mix them unless
asked. The time budget of sequential sampling counts GPU-seconds: with two GPUs, the run's
sampling may take twice the budget's seconds of GPU time, shared out case by case.
"""

from __future__ import annotations

import dataclasses
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Protocol

from ..errors import BadInput, EnvironmentFailure, PerfbotError
from ..loading.subject import Suite
from ..records.autotune import AutotunePick
from ..records.run import GpuStates, Results
from .environment import GpuMonitor, collect_environment, stability_across
from .planning import RunSettings, case_steps, single_cases
from .recording import Described, Measured, Measurement, results_by_side
from .runner import Sides, describe_sides, measure_case, take_turns
from .sequential import Budget, Stopping, Turn, Turns
from .worker import BOTH
from .worker_sides import WorkerProcess, WorkerSides, both_sides, workers


@dataclass(frozen=True)
class Gpu:
    index: int  # NVML's number, what CUDA_VISIBLE_DEVICES takes
    name: str
    uuid: str = ""

    @property
    def label(self) -> str:
        return f"{self.index}: {self.name}"

    @property
    def cuda_visible(self) -> str:
        """What CUDA_VISIBLE_DEVICES pins a process to it by: its UUID, since a number would be
        CUDA's (fastest first), which need not be NVML's."""
        return self.uuid or str(self.index)


def visible_gpus() -> list[Gpu]:
    """The host's GPUs as NVML lists them (no CUDA context is made), cut down to
    CUDA_VISIBLE_DEVICES when it is set (numbers or GPU-UUIDs). Empty without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 -- no NVML (or no driver): no GPU to shard across
        return []
    try:
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            gpus.append(Gpu(index, str(pynvml.nvmlDeviceGetName(handle)), str(pynvml.nvmlDeviceGetUUID(handle))))
    finally:
        pynvml.nvmlShutdown()
    return restrict_to_visible(gpus, os.environ.get("CUDA_VISIBLE_DEVICES"))


def restrict_to_visible(gpus: list[Gpu], visible: str | None) -> list[Gpu]:
    """The GPUs CUDA_VISIBLE_DEVICES lets CUDA see, in its order."""
    if visible is None:
        return gpus
    chosen = []
    for entry in filter(None, (part.strip() for part in visible.split(","))):
        match = [g for g in gpus if str(g.index) == entry or (g.uuid and g.uuid.startswith(entry))]
        if not match:
            break  # CUDA stops at the first entry it cannot find
        chosen.append(match[0])
    return chosen


def choose(gpus: Sequence[Gpu], count: int | None, mixed: bool = False) -> list[Gpu]:
    """The GPUs a run uses: the first `count` visible, all of one model unless `mixed`; by default
    every visible GPU of the first one's model (every visible GPU with `mixed`)."""
    if count is not None and count < 1:
        raise BadInput(f"--gpus must be at least 1, got {count}")
    if count is not None and count > len(gpus):
        raise BadInput(f"--gpus {count}: only {len(gpus)} GPU(s) visible")
    chosen = list(gpus[:count] if count is not None else gpus)
    if count is None and not mixed:  # by default, those of the first GPU's model
        chosen = [gpu for gpu in chosen if gpu.name == chosen[0].name] if chosen else []
    models = sorted({gpu.name for gpu in chosen})
    if len(models) > 1 and not mixed:
        raise BadInput(
            f"the GPUs are of different models ({', '.join(models)}): their timings do not compare. "
            "Pick one model with --gpus or CUDA_VISIBLE_DEVICES, or pass --mixed-gpus to shard across them anyway"
        )
    return chosen


@dataclass(frozen=True)
class Job:
    """What every worker process measures: each side's kernels package, and how."""

    kernels: dict[str, Path]
    settings: RunSettings
    stopping: Stopping | None = None
    fixed: dict[str, list[AutotunePick]] | None = None  # the picks each benchmark runs (alignment.fix)


# A worker process's own state: the GPU it is pinned to, and its sides once loaded.
_worker: dict[str, Any] = {}


def _pin(gpu: Gpu, setup: Callable[[], None] | None) -> None:
    """Runs first in each worker process, before anything touches CUDA."""
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu.cuda_visible
    # A Ctrl-C reaches the whole process group; the driving process alone decides (_interruptible).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker["gpu"] = gpu
    if setup is not None:
        setup()  # the CPU tests put their stand-in for the GPU here


def _quiet(label: str, steps: int) -> None:
    """A case's own progress: the driving process reports progress, case by case."""


def _measured_on(gpu: Gpu, sides: Sides, job: Job, case: Suite, turn: Turn, monitor: GpuMonitor) -> Measured:
    """One case measured on `gpu`, each benchmark naming it."""
    with monitor:
        measured = measure_case(sides, case, job.settings, monitor, _quiet, job.stopping, turn)
    measured.benchmarks = [(side, dataclasses.replace(b, gpu=gpu.label)) for side, b in measured.benchmarks]
    return measured


class _OnGpu(Protocol):
    """Where one GPU's cases are measured."""

    def measure(self, case: Suite, turn: Turn) -> Measured: ...

    def describe(self) -> Described: ...


@contextmanager
def _naming(gpu: Gpu) -> Iterator[None]:
    """A worker's error, with the GPU it was pinned to."""
    try:
        yield
    except PerfbotError as error:
        raise type(error)(f"GPU {gpu.label}: {error}") from None


@dataclass(frozen=True)
class _WorkerPair:
    """The GPU's two worker processes, one per side with its own Triton, asked sample by sample
    from this process (worker_sides.WorkerSides), as on one GPU."""

    gpu: Gpu
    sides: WorkerSides
    job: Job

    def measure(self, case: Suite, turn: Turn) -> Measured:
        with _naming(self.gpu):
            monitor = GpuMonitor(nvml_gpu=self.gpu.uuid or self.gpu.index)
            return _measured_on(self.gpu, self.sides, self.job, case, turn, monitor)

    def describe(self) -> Described:
        return describe_sides(self.sides)


def measure_sharded(
    job: Job,
    suites: Sequence[Suite],
    gpus: Sequence[Gpu],
    on_progress: Callable[[str, int], None] = lambda label, steps: None,
    extra_settings: dict[str, Any] | None = None,
    setup: Callable[[], None] | None = None,
    worker_specs: dict[str, tuple[Path, Path | None, str | None]] | None = None,
) -> dict[str, Results]:
    """runner.measure_sides across `gpus`, one worker process each (worker.py), holding every
    side; `setup` runs first in a forked worker (the CPU tests' stand-in GPU). With
    `worker_specs` (an A/B whose sides need two Tritons: ab_tritons.worker_specs), two workers
    per GPU, one per side."""
    if not gpus:
        raise EnvironmentFailure("no GPU to measure on")
    before = collect_environment().gpu_state
    cases = single_cases(suites)
    budget = Budget(job.stopping.seconds, len(cases), parallel=len(gpus)) if job.stopping is not None else None
    turns = Turns(len(cases), budget)
    steps = case_steps(job.settings, job.stopping)
    done: list[tuple[Gpu, Measured] | None] = [None] * len(cases)
    with ExitStack() as stack:
        on_gpu: dict[Gpu, _OnGpu] = {}
        if worker_specs:  # every pair started before any is asked for its hello: they load at once
            pinned = {gpu: stack.enter_context(workers(worker_specs, gpu=gpu.cuda_visible)) for gpu in gpus}
            for gpu in gpus:
                with _naming(gpu):
                    on_gpu[gpu] = _WorkerPair(gpu, WorkerSides(pinned[gpu], job.settings, job.fixed), job)
            stop_workers = [process.kill for pair in pinned.values() for process in pair.values()]
        else:  # one Triton: each GPU's worker holds every side, timed a round at a time
            held = {gpu: _all_sides(stack, job, gpu, setup) for gpu in gpus}
            for gpu in gpus:
                with _naming(gpu):
                    on_gpu[gpu] = _WorkerPair(gpu, WorkerSides(held[gpu], job.settings, job.fixed), job)
            stop_workers = [process.kill for one in held.values() for process in one.values()]

        def drive(gpu: Gpu) -> None:
            def finished(index: int, measured: Measured) -> None:
                done[index] = gpu, measured
                (case,) = cases[index].cases
                on_progress(f"{case.suite}/{case.name} on GPU {gpu.index}", steps)

            take_turns(turns, cases, on_gpu[gpu].measure, finished, gpu)

        with ThreadPoolExecutor(len(gpus)) as threads, _interruptible(turns.stop, *stop_workers):
            for future in [threads.submit(drive, gpu) for gpu in gpus]:
                future.result()  # a worker's error, raised here
        described = on_gpu[gpus[0]].describe()
    measured = Measured()
    rounds_of: dict[Gpu, list[Any]] = {gpu: [] for gpu in gpus}
    for gpu, part in filter(None, done):
        measured.add(part)
        rounds_of[gpu] += part.rounds
    extra = {**(extra_settings or {}), "gpus": [gpu.label for gpu in gpus]}
    states = GpuStates(before.after, collect_environment().gpu_state.after)
    stable = stability_across(list(rounds_of.values()))
    return results_by_side(described, Measurement(suites, job.settings, job.stopping, extra), measured, states, stable)


def _all_sides(stack: ExitStack, job: Job, gpu: Gpu, setup: Callable[[], None] | None) -> dict[str, WorkerProcess]:
    """The GPU's one worker, pinned to it, holding every side of the job (both sides of an A/B:
    worker.BOTH); stopped when `stack` closes. `setup` runs first in a forked worker (the CPU
    tests' stand-in GPU)."""
    before = partial(_pin, gpu, setup)
    if set(job.kernels) == {"base", "head"}:
        return {BOTH: stack.enter_context(both_sides(job.kernels, gpu.cuda_visible, before))}
    ((side, kernels),) = job.kernels.items()
    started = stack.enter_context(
        workers({side: (kernels, None, None)}, gpu=gpu.cuda_visible, fork=True, before=before)
    )
    return started


def _workers(stack: ExitStack, gpus: Sequence[Gpu], setup: Callable[[], None] | None) -> list[ProcessPoolExecutor]:
    """One spawned pool process per GPU, pinned to it (`_pin`), stopped when `stack` closes: for
    `on_each_gpu`, which a selftest's child runs (its results come back pickled, to that child)."""
    context = get_context("spawn")
    return [
        stack.enter_context(ProcessPoolExecutor(1, mp_context=context, initializer=_pin, initargs=(gpu, setup)))
        for gpu in gpus
    ]


@contextmanager
def _interruptible(*stops: Callable[[], None]) -> Iterator[None]:
    """Ctrl-C while the GPUs' threads wait on their workers: hand out no more cases and stop the
    workers now (they ignore SIGINT, _pin), so that the threads end and the interrupt goes on up
    (exit 130), rather than every case being waited for."""
    try:
        yield
    except KeyboardInterrupt:
        for stop in stops:
            stop()
        raise


def _terminate(pool: ProcessPoolExecutor) -> None:
    """The pool's worker processes killed at once; what they were asked fails as a broken pool."""
    # ProcessPoolExecutor has no public way to stop a running call before Python 3.14.
    for process in list((pool._processes or {}).values()):
        process.kill()
    pool.shutdown(wait=False, cancel_futures=True)


def _ask(gpu: Gpu, pool: ProcessPoolExecutor, fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` in the GPU's worker process. Its perfbot errors come back as they are; a
    worker that died (a crashed kernel, a setup that failed) is the environment's failure."""
    try:
        return pool.submit(fn, *args).result()
    except BrokenProcessPool:
        raise EnvironmentFailure(f"GPU {gpu.label}: its worker process died (see its output above)") from None


def on_each_gpu(
    gpus: Sequence[Gpu],
    fn: Callable[..., Any],
    arguments: Sequence[tuple[Any, ...]],
    on_done: Callable[[Gpu], None] = lambda gpu: None,
    setup: Callable[[], None] | None = None,
) -> list[Any]:
    """`fn(*arguments[i])` in the worker process of `gpus[i]`, all at once; the results in the
    GPUs' order (a selftest's checks shared out). A failure on one GPU ends them all."""
    with ExitStack() as stack:
        pools = _workers(stack, gpus, setup)

        def one(index: int) -> Any:
            result = _ask(gpus[index], pools[index], fn, *arguments[index])
            on_done(gpus[index])
            return result

        with ThreadPoolExecutor(len(gpus)) as threads, _interruptible(*(partial(_terminate, p) for p in pools)):
            return list(threads.map(one, range(len(gpus))))
