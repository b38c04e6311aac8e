"""The orchestration of `perfbot run` on the CPU: planning, checking, timing interleaved,
splitting an A/B run into its two sides. Only the GPU's primitives are replaced (CUDA-graph
capture, CUDA-event timing, the no-GPU check); the kernels run for real, the fused one in
Triton's interpreter."""

import time
from pathlib import Path

import pytest

from perfbot import measure, runner
from perfbot.subject import load_subject

TINY = """
tiny:
  about: small enough for the interpreter
  dtype: float16
  kernels: [fused, eager, gemm, copy]
  cases:
    - {name: odd, M: 33, K: 40, N: 24}
    - {name: square, M: 64, K: 64, N: 64}
"""


@pytest.fixture
def fake_gpu(monkeypatch):
    def capture(fn, warmup_calls):
        for _ in range(warmup_calls):
            fn()
        return measure.Captured(graph=None, output=fn()), fn

    def time_interleaved(captured, samples, on_round=None, monitor=None):
        names = list(captured)
        timings = {name: [] for name in names}
        rounds = []
        for index in range(samples):
            for name in names[index % len(names):] + names[:index % len(names)]:
                start = time.perf_counter()
                captured[name][1]()
                timings[name].append(1000 * (time.perf_counter() - start))
            rounds.append(monitor.read() if monitor else measure.Round())
            if on_round:
                on_round()
        return measure.Timings(timings, rounds)

    monkeypatch.setattr(runner, "DEVICE", "cpu")
    monkeypatch.setattr(runner, "require_gpu", lambda: None)
    monkeypatch.setattr(measure, "capture", lambda fn, warmup_calls: _Pair(*capture(fn, warmup_calls)))
    monkeypatch.setattr(measure, "time_interleaved", lambda captured, samples, on_round=None, monitor=None:
                        time_interleaved({k: (v.captured, v.fn) for k, v in captured.items()}, samples, on_round, monitor))


class _Pair:
    def __init__(self, captured, fn):
        self.captured, self.fn, self.output = captured, fn, captured.output


def _subject(project: Path):
    (project / "kernels" / "suites.yaml").write_text(TINY)
    return load_subject(project / "kernels")


def test_a_plain_run_checks_times_and_records(fake_gpu, project: Path):
    subject = _subject(project)
    steps = []
    results = runner.run(subject, [subject.suites["tiny"]], runner.RunSettings(samples=10),
                         on_progress=lambda label, n: steps.append(n))
    assert {(b.case, b.kernel) for b in results.benchmarks} == {
        (c, k) for c in ("odd", "square") for k in ("fused", "eager", "gemm", "copy")}
    assert all(len(b.samples_ms) == 10 and b.relative_error <= b.error_bound for b in results.benchmarks)
    assert results.failures == []
    assert sum(steps) == runner.progress_steps(runner.plan(subject, [subject.suites["tiny"]], runner.RunSettings(samples=10)),
                                               runner.RunSettings(samples=10))
    assert results.environment["throttled_rounds"] == 0
    fused = [b for b in results.benchmarks if b.kernel == "fused"][0]
    assert fused.config["path"] == "pointer" and fused.throttled_samples == []


def test_an_ab_run_splits_into_two_sides(fake_gpu, project: Path, tmp_path: Path):
    import shutil

    head = _subject(project)
    base_dir = tmp_path / "base"
    shutil.copytree(project, base_dir)
    geglu = base_dir / "kernels" / "geglu.py"
    text = geglu.read_text()
    right = "out = z1 * _gelu(z2, APPROXIMATE_TANH)"
    assert right in text
    geglu.write_text(text.replace(right, "out = z2 * _gelu(z1, APPROXIMATE_TANH)"))  # a wrong base
    base = load_subject(base_dir / "kernels")
    sides = runner.run_sides({"base": base, "head": head}, [head.suites["tiny"]], runner.RunSettings(samples=10),
                             extra_settings={"ab_run": "r1"})
    assert set(sides) == {"base", "head"}
    assert {f.kernel for f in sides["base"].failures} == {"fused"}
    assert sides["head"].failures == []
    assert {b.kernel for b in sides["head"].benchmarks} == {"fused", "eager", "gemm", "copy"}
    assert sides["base"].settings["ab_run"] == sides["head"].settings["ab_run"] == "r1"
    assert (sides["base"].settings["side"], sides["head"].settings["side"]) == ("base", "head")
