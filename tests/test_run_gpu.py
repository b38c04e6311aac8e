"""`perfbot run` end to end on the GPU: correctness first, then timing, then the results file."""

import json
from pathlib import Path
from statistics import median

import pytest
import torch
from click.testing import CliRunner

from kernels import configs
from perfbot.cli import perfbot
from perfbot.loading.package import load_subject
from perfbot.measuring import measure
from perfbot.records import results

pytestmark = pytest.mark.gpu

TINY_SUITES = """
tiny:
  about: two small cases
  dtype: bfloat16
  kernels: [fused, fused-pointer, eager, compiled, gemm, copy]
  cases:
    - {name: odd,   M: 333, K: 257, N: 190}
    - {name: fp16,  M: 1024, K: 512, N: 1024, dtype: float16}
"""


def test_run_checks_times_and_writes_every_sample(project: Path, tmp_path: Path):
    (project / "kernels" / "suites.yaml").write_text(TINY_SUITES)
    out = tmp_path / "r.json"
    result = CliRunner().invoke(
        perfbot,
        [
            "run",
            "--project",
            str(project),
            "--suite",
            "tiny",
            "--samples",
            "12",
            "--variant",
            "approximate=none",
            "--variant",
            "approximate=tanh",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    loaded = results.load(out)
    kernels = {b.name for b in loaded.benchmarks}
    assert kernels == {
        "fused",
        "fused[approximate=tanh]",
        "fused-pointer",
        "fused-pointer[approximate=tanh]",
        "eager",
        "eager[approximate=tanh]",
        "compiled",
        "compiled[approximate=tanh]",
        "gemm",
        "copy",
    }
    assert all(len(b.samples_ms) == 12 and min(b.samples_ms) > 0 for b in loaded.benchmarks)
    assert all(b.relative_error <= b.error_bound for b in loaded.benchmarks)
    assert all(b.config["path"] == "pointer" for b in loaded.benchmarks if b.kernel.startswith("fused-pointer"))
    env = json.loads(out.read_text())["environment"]
    # The configs tuned for this GPU where kernels/tuned_configs.yaml holds it (the H200), else
    # the ones the kernel's own autotuning picked in this process, never the untuned default.
    source = "tuned" if env["gpu_name"] in configs.tuned_table() else "autotuned"
    assert all(b.config["source"] == source for b in loaded.benchmarks if b.kernel.startswith("fused"))
    assert env["gpu_name"] and env["gpu_sm_count"] > 0
    assert env["gpu_state"]["before"] is not None, env["nvml_error"]
    # Every implementation the subject puts under test, whichever of them the suite times.
    declared = load_subject(project / "kernels").implementations
    assert loaded.settings.subject == "geglu"
    assert loaded.settings.under_test == [name for name, i in declared.items() if i.under_test]
    assert "M=333 K=257 N=190" in result.output and "% gemm" in result.output


def test_a_wrong_kernel_is_reported_and_never_timed(project: Path, tmp_path: Path):
    (project / "kernels" / "suites.yaml").write_text(TINY_SUITES)
    geglu = project / "kernels" / "geglu.py"
    # Sabotage: gate with the wrong half.
    text = geglu.read_text()
    for right in ("out = z1 * _gelu(z2, APPROXIMATE_TANH)", "out = (z1 * _gelu(z2, APPROXIMATE_TANH))"):
        assert right in text
        text = text.replace(right, right.replace("z1 * _gelu(z2", "z2 * _gelu(z1"))
    geglu.write_text(text)
    out = tmp_path / "r.json"
    result = CliRunner().invoke(
        perfbot, ["run", "--project", str(project), "--suite", "tiny", "--samples", "10", "--out", str(out)]
    )
    assert result.exit_code == 1, result.output
    loaded = results.load(out)
    assert {f.kernel for f in loaded.failures} == {"fused", "fused-pointer"}
    assert all(f.reason == "wrong result" for f in loaded.failures)
    assert "fused" not in {b.kernel for b in loaded.benchmarks}


def test_timing_engine_sees_a_kernel_that_takes_twice_as_long():
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    once = measure.capture(lambda: a @ a, warmup_calls=2)
    twice = measure.capture(lambda: (a @ a) @ a, warmup_calls=2)
    timings = measure.time_interleaved({"once": once, "twice": twice}, samples=15).samples
    ratio = sorted(timings["twice"])[7] / sorted(timings["once"])[7]
    assert 1.8 < ratio < 2.2


def test_selftest_injects_what_it_reports():
    from perfbot.deciding.thresholds import load_policy
    from perfbot.measuring import selftest

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    policy = load_policy(Path(__file__).parents[1] / "thresholds.yaml")
    checks = selftest.measure_checks(lambda: a @ a, (5.0,), checks=3, first=48, most=400, policy=policy)
    slowed, unslowed = selftest.slowed(5.0), selftest.unslowed(5.0)
    ratios = [median(check[slowed]) / median(check[unslowed][: len(check[slowed])]) for check in checks]
    assert all(1.03 < ratio < 1.07 for ratio in ratios), ratios


def test_interference_check_slows_one_benchmark_and_measures_every_other(project: Path):
    from perfbot.deciding.thresholds import load_policy
    from perfbot.loading.package import load_subject
    from perfbot.measuring import interference

    # a 0.13 ms case between two small ones: long enough that 48 rounds place the injection
    big = "    - {name: big, M: 4096, K: 1024, N: 4096}\n"
    suites = TINY_SUITES.replace("    - {name: fp16", big + "    - {name: fp16")
    (project / "kernels" / "suites.yaml").write_text(suites)
    loaded = load_subject(project / "kernels")
    policy = load_policy(project / "thresholds.yaml")
    crossed = interference.measure_interference(
        loaded, loaded.case("tiny", "big"), "fused", 10, 48, policy, skipped=("compiled",)
    )
    assert 8 < crossed.slowed.percent < 12, crossed.slowed
    kernels = ("fused", "fused-pointer", "eager", "gemm", "copy")
    names = {(m.case, m.benchmark) for m in crossed.others}
    assert names == {(c, k) for c in ("odd", "big", "fp16") for k in kernels} - {("big", "fused")}


def test_throttle_monitor_reads_the_gpu():
    from perfbot.measuring.environment import GpuMonitor

    with GpuMonitor() as monitor:
        state = monitor.read()
    assert state.sm_clock_mhz and state.sm_clock_mhz > 0
