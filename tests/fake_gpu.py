"""The GPU's primitives replaced, for the orchestration tests on the CPU: CUDA-graph capture calls
the function (the kernels run for real: Triton's in its interpreter, the project fixture's fused
stand-in in PyTorch), and timing returns a given function of the benchmark, so the statistics
downstream see known slowdowns."""

import random
import sys

import torch
from triton.runtime.autotuner import Autotuner

from perfbot.compiling import tuning
from perfbot.measuring import loads, measure, runner


class FakeGpu:
    """Capture calls the function; timing returns `ms(name, call)` for each sample, times
    `context(name, previous, captured)`: a factor from what ran before it in the round (the
    round's lead-in replays its last benchmark first, as measure.GraphTimer does) and from the
    captures (`captured[key].graph` numbers each capture in the order they were made; `modules`
    gives, by that number, the module of the function captured: which import of a subject it ran,
    and `loads` which load of that subject's kernels).

    Triton's loads are modelled too: each imported subject has one stand-in kernel (what
    loads.triton_kernels finds), which a capture's first call loads, as Triton loads a kernel at
    its first call, if nothing has been loaded since loads.forget_compiled emptied its caches.

    With `trace` set, `ran` gives, by capture number, the files of the Python code the captured
    call ran: a timing can then depend on which code a benchmark really runs.

    Triton's autotuner tunes on the CPU too: each candidate runs once (in the interpreter) and is
    timed `tune(autotuner, config)` times a noise of `tune_noise`, drawn from `rng`; `picks` gives,
    by capture number, the configs the captured call ran (records.autotune.AutotunePick), and a
    sample is timed `picked(name, picks)` times more."""

    def __init__(self):
        self.ms = lambda name, call: 1.0
        self.context = lambda name, previous, captured: 1.0
        self.calls: dict[str, int] = {}
        self.rng = random.Random(0)
        self.captures = 0
        self.functions: dict = {}  # by capture number, the call each captured
        self.modules: dict[int, str] = {}
        self.kernels: dict[str, StandInKernel] = {}  # by package
        self.loads: dict[int, int] = {}  # capture -> the load its kernels ran from (0: none found)
        self.loaded = 0
        self.trace = False
        self.ran: dict[int, frozenset[str]] = {}
        self.tune = lambda tuner, config: 1.0
        self.tune_noise = 0.0
        self.picks: dict[int, list] = {}
        self.picked = lambda name, picks: 1.0

    def bench(self, original):
        """In place of Autotuner._bench: the candidate runs once (its hooks around it), and is
        timed `tune(autotuner, config)` with noise."""
        gpu = self

        def bench(tuner, *args, config, **meta):
            tuner.__dict__["do_bench"] = lambda call, quantiles=None, **_: (call(), [0.0, 0.0, 0.0])[1]
            try:
                original(tuner, *args, config=config, **meta)
            finally:
                tuner.__dict__.pop("do_bench", None)
            ms = gpu.tune(tuner, tuning.config_record(config))
            ms *= 1 + gpu.tune_noise * gpu.rng.gauss(0, 1)
            return [ms, ms, ms]

        return bench

    def triton_kernels(self, package, imported=()):
        return [self.kernels.setdefault(package, StandInKernel())]

    def capture(self, fn, warmup_calls, offset_bytes=0):
        module = getattr(getattr(fn, "func", fn), "__module__", "")
        kernel = next((k for p, k in self.kernels.items() if module == p or module.startswith(p + ".")), None)
        if kernel is not None and not kernel.device_caches:
            self.loaded += 1
            kernel.device_caches[0] = self.loaded
        for _ in range(warmup_calls):
            fn()
        self.captures += 1
        self.functions[self.captures] = fn
        self.modules[self.captures] = module
        self.loads[self.captures] = kernel.device_caches[0] if kernel is not None else 0
        files: set[str] = set()
        previous = sys.getprofile()
        if self.trace:
            sys.setprofile(lambda frame, event, arg: files.add(frame.f_code.co_filename))
        try:
            with tuning.session() as noted:
                output = fn()
        finally:
            sys.setprofile(previous)
        self.picks[self.captures] = list(noted.picks.values())
        if not self.trace:
            return measure.Captured(graph=self.captures, output=output)
        self.ran[self.captures] = frozenset(files)
        return measure.Captured(graph=self.captures, output=output)

    def replay(self, captured):
        """In place of measure.replay: the captured call again (a Staged call's `before` too, as
        measure.replay replays its graph first), its result written where the graph's output is
        (a graph replays into the buffers it captured)."""
        output = self.functions[captured.graph]()
        if isinstance(captured.output, torch.Tensor) and output is not captured.output:
            captured.output.copy_(output)
        if isinstance(captured.output, tuple) and isinstance(output, tuple) and len(output) == len(captured.output):
            for kept, new in zip(captured.output, output, strict=True):
                if isinstance(kept, torch.Tensor) and new is not kept:
                    kept.copy_(new)
        return captured.output

    def timer(self, captured):
        """In place of measure.GraphTimer: the real interleaving loop asks it for each sample."""
        gpu = self

        class Timer:
            previous = None

            def begin_round(self, order):
                self.previous = order[-1]

            def sample(self, name):
                gpu.calls[name] = gpu.calls.get(name, 0) + 1
                ms = gpu.ms(name, gpu.calls[name]) * (1 + 0.002 * gpu.rng.gauss(0, 1))
                ms *= gpu.context(name, self.previous, captured)
                ms *= gpu.picked(name, gpu.picks.get(captured[name].graph, []))
                self.previous = name
                return lambda: ms

            def end_round(self, order):
                pass

        return Timer()


class StandInKernel:
    """A Triton JIT function as loads.forget_compiled sees it: its compiled kernels by device."""

    def __init__(self):
        self.device_caches: dict[int, int] = {}


def listed_places(count, round_index, seed=0):
    """In place of measure.side_places: every pair in the places it is listed in (the base first in
    the forward rounds), flipped every other pair of rounds: the order before the places were drawn."""
    return [(round_index // 2) % 2] * count


def fake_gpu(monkeypatch) -> FakeGpu:
    fake = FakeGpu()
    monkeypatch.setattr(runner, "gpu_device", lambda command=None: "cpu")
    monkeypatch.setattr(measure, "capture", fake.capture)
    monkeypatch.setattr(measure, "replay", fake.replay)
    monkeypatch.setattr(measure, "GraphTimer", fake.timer)
    monkeypatch.setattr(loads, "triton_kernels", fake.triton_kernels)
    monkeypatch.setattr(Autotuner, "_bench", fake.bench(Autotuner._bench))
    return fake


def install_in_worker():
    """shards.measure_sharded's `setup` for the CPU tests, run first in each worker
    process: the GPU's primitives replaced as above. Every sample takes 1 ms plus 0.1 ms per
    index of the GPU the worker was pinned to (CUDA_VISIBLE_DEVICES), with the head side 2%
    slower on GPU 1 only: a timing shows where it was taken. Setting DIE_IN_WORKER kills the
    worker on GPU 1 at its first sample, as a crashing kernel would; NOISY_GEMM_IN_WORKER spreads
    gemm's samples by 5%; HANG_IN_WORKER=DIR makes every worker leave its pid in DIR and hang at
    its first sample."""
    import os

    from perfbot.measuring import shards

    pinned = os.environ["CUDA_VISIBLE_DEVICES"]
    assert pinned == shards._worker["gpu"].uuid  # the worker is pinned by UUID
    index = shards._worker["gpu"].index
    fake = FakeGpu()
    die = os.environ.get("DIE_IN_WORKER") and index == 1
    noisy = os.environ.get("NOISY_GEMM_IN_WORKER")  # gemm's samples spread by 5%: slow to decide

    hang = os.environ.get("HANG_IN_WORKER")

    def ms(name, call):
        if die:
            os._exit(9)
        if hang:
            import time
            from pathlib import Path

            (Path(hang) / str(os.getpid())).touch()
            while True:
                time.sleep(0.1)
        spread = 1 + 0.05 * fake.rng.gauss(0, 1) if noisy and name.endswith(":gemm") else 1.0
        return (1 + index / 10) * (1.02 if index == 1 and name.startswith("head:") else 1.0) * spread

    fake.ms = ms
    runner.gpu_device = lambda command=None: "cpu"
    measure.capture = fake.capture
    measure.replay = fake.replay
    measure.GraphTimer = fake.timer


def install_selftest_in_worker():
    """The same for a selftest's worker: a 0.55 ms kernel whose rounds share a jitter, and a
    sleep kernel that costs 1 us plus 0.5 ns a cycle, so that calibrated injections land where
    asked (as tests/test_selftest.py measures them in one process)."""
    import torch

    install_in_worker()
    rng = random.Random(0)
    slept = []
    torch.cuda._sleep = lambda cycles: slept.append(cycles)

    def capture(fn, warmup_calls, offset_bytes=0):
        slept.clear()
        fn()
        return measure.Captured(graph=slept[-1] if slept else None, output=None)

    def ms(graph, shared):
        return 0.55 * shared + (0.001 + 0.5e-6 * graph if graph is not None else 0.0)

    def time_interleaved(captured, samples, on_round=None, monitor=None):
        rounds = [1 + 0.0005 * rng.gauss(0, 1) for _ in range(samples)]
        return measure.Timings({k: [ms(c.graph, r) for r in rounds] for k, c in captured.items()}, [])

    class Timer:
        def __init__(self, captured):
            self.captured = captured

        def begin_round(self, order):
            self.shared = 1 + 0.0005 * rng.gauss(0, 1)

        def sample(self, key):
            value = ms(self.captured[key].graph, self.shared)
            return lambda: value

        def end_round(self, order):
            pass

    measure.capture, measure.time_interleaved, measure.GraphTimer = capture, time_interleaved, Timer
