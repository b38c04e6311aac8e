"""`python -m perfbot.measuring.worker` for the CPU tests: the real protocol, the subject's kernels
(a project's fused one in Triton's interpreter, or its PyTorch stand-in: tests/stub_geglu.py),
only the GPU's primitives replaced. Each sample takes `perfbot_test_speed.SCALE` ms (with 0.2%
jitter): a module the tests put in the side's Triton environment, so a timing shows which
environment the worker really imported (where it names IMPLEMENTATIONS, only their samples take
SCALE ms, the others' 1 ms). If that module sets DIE_AT_SAMPLE, the worker dies at that sample,
as a crashing kernel would take it down. Pinned to a stand-in GPU of tests/test_shards.py
(CUDA_VISIBLE_DEVICES), a worker runs 10% faster (GPU-aaa) or slower (GPU-bbb), so a timing also
shows which GPU it was pinned to; DIE_ON_GPU in the module keeps DIE_AT_SAMPLE to the worker
pinned to that GPU. Triton's autotuner tunes here too, each candidate run once: the base's side
times BLOCK 16 fastest, the head's BLOCK 64, so that the two sides of an autotuned kernel always
pick apart."""

import os
import random
import sys
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # perfbot from this checkout

from triton.runtime.autotuner import Autotuner

from perfbot.measuring import measure, runner, worker

try:
    import perfbot_test_speed as speed  # type: ignore[import-not-found]
except ImportError:  # a side with no environment of its own
    speed = type("Speed", (), {"SCALE": 1.0})
jitter = random.Random(os.getpid())
pinned = os.environ.get("CUDA_VISIBLE_DEVICES")
gpu_scale = {"GPU-aaa": 0.9, "GPU-bbb": 1.1}.get(pinned or "", 1.0)
taken = 0


class Replays:
    """A graph's stand-in: a replay runs the captured call again into the captured output."""

    def __init__(self, fn, output):
        self.fn, self.output = fn, output

    def replay(self):
        again = self.fn()
        if again is not self.output:
            self.output.copy_(again)


def capture(fn, warmup_calls, offset_bytes=0):
    for _ in range(warmup_calls):
        fn()
    output = fn()
    return measure.Captured(graph=Replays(fn, output), output=output)


def replay(captured):
    captured.graph.replay()
    return captured.output


def time_once(captured, flush):
    global taken
    taken += 1
    if taken == getattr(speed, "DIE_AT_SAMPLE", None) and getattr(speed, "DIE_ON_GPU", pinned) == pinned:
        os._exit(9)
    return _scale(captured) * gpu_scale * (1 + 0.002 * jitter.gauss(0, 1))


def _scale(captured):
    only = getattr(speed, "IMPLEMENTATIONS", None)
    return speed.SCALE if only is None or _implementation(captured.graph.fn) in only else 1.0


def _implementation(call):
    """The name of the subject's function a captured call runs: a guarded partial of it, or that
    partial held at the pinned configs (compiling/tuning.under)."""
    while not hasattr(call, "func"):
        call = next(cell.cell_contents for cell in call.__closure__ if callable(cell.cell_contents))
    return call.func.__name__


class GraphTimer:
    """measure.GraphTimer's stand-in, for a worker that times whole rounds (`perfbot run`, an A/B
    of one Triton): each sample as `time_once` takes it, the graph replayed first."""

    def __init__(self, captured):
        self.captured = captured

    def begin_round(self, order):
        pass

    def sample(self, key):
        self.captured[key].graph.replay()
        ms = time_once(self.captured[key], None)
        return lambda: ms

    def end_round(self, order):
        pass


def bench(tuner, *args, config, **meta):
    tuner.__dict__["do_bench"] = lambda call, quantiles=None, **_: (call(), [0.0, 0.0, 0.0])[1]
    try:
        original_bench(tuner, *args, config=config, **meta)
    finally:
        tuner.__dict__.pop("do_bench", None)
    fastest = 16 if sys.argv[sys.argv.index("--side") + 1] in ("base", "base+head") else 64
    ms = 0.5 if config.kwargs.get("BLOCK") == fastest else 1.0
    return [ms, ms, ms]


original_bench = Autotuner._bench
Autotuner._bench = bench
runner.gpu_device = lambda command=None: "cpu"
measure.capture, measure.replay, measure.time_once, measure.L2Flush = capture, replay, time_once, lambda: None
measure.GraphTimer = GraphTimer
worker.main()
