"""Impossible times (perfbot/deciding/credible.py): a row of the subject's own faster than its
roofline allows, the best rates the run's bounds reached (or the GPU's nominal peaks), is not
credible; one at the best rate, as the fused kernel runs on decode shapes, is."""

from __future__ import annotations

import pytest

from perfbot.deciding import credible
from perfbot.records.run import Benchmark


def _bench(kernel: str, ms: float, flops: int = 0, moved: int = 0) -> Benchmark:
    return Benchmark(kernel=kernel, shape={"M": 1}, dtype="bfloat16", samples_ms=[ms] * 5, flops=flops, bytes=moved)


# gemm: 1e12 flops in 2 ms, 500 TFLOP/s; copy: 4e9 bytes in 1 ms, 4000 GB/s
RUN = [_bench("gemm", 2.0, flops=10**12), _bench("copy", 1.0, moved=4 * 10**9), _bench("gemm", 4.0, flops=10**12)]


def test_the_ceiling_is_the_fastest_bound_of_each_kind():
    top = credible.ceiling(RUN, {"gemm", "copy"}, "NVIDIA H200")
    assert top.flops_per_s == pytest.approx(5e14) and top.bytes_per_s == pytest.approx(4e12)
    assert top.source == "the fastest flops-counting bound and the fastest bytes-only bound"


def test_without_bounds_the_gpus_nominal_peaks_and_for_an_unknown_gpu_nothing():
    assert credible.ceiling(RUN, set(), "NVIDIA H200 NVL") == credible.Ceiling(
        3958e12, 4.8e12, "nominal FLOP/s and nominal bandwidth"
    )
    top = credible.ceiling(RUN, set(), "Some GPU")
    assert top == credible.Ceiling(None, None, "nothing")
    assert credible.not_credible(_bench("fused", 1e-9, flops=10**12), top) is None


@pytest.mark.parametrize(
    "ms,credible_",
    [
        (2.0, True),  # at gemm's rate
        (2.0 / 1.02, True),  # 2% faster than the fastest gemm: the fused kernel on decode shapes
        (2.0 / credible.MOST_OVER_BEST, True),  # exactly the most that is credible
        (2.0 / credible.MOST_OVER_BEST * 0.999, False),
        (2.0 / 500, False),  # the cached result of issue 52: 500 times compiled
    ],
)
def test_a_row_past_the_most_credible_rate_is_not_credible(ms: float, credible_: bool):
    top = credible.ceiling(RUN, {"gemm", "copy"}, None)
    why = credible.not_credible(_bench("fused", ms, flops=10**12, moved=10**6), top)
    assert (why is None) == credible_, why
    if why:
        assert why.startswith(f"not credible: {ms:.4g} ms is faster than its roofline allows (2 ms for 1e+12 flops")


def test_the_bytes_floor_decides_where_it_is_the_higher():
    top = credible.ceiling(RUN, {"gemm", "copy"}, None)
    # 8e9 bytes need 2 ms at 4000 GB/s; its flops, almost none
    why = credible.not_credible(_bench("fused", 1.0, flops=10**6, moved=8 * 10**9), top)
    assert why is not None and "(2 ms for 8e+09 bytes at 4000 GB/s" in why
    assert credible.not_credible(_bench("fused", 1.7, flops=10**6, moved=8 * 10**9), top) is None


def test_a_run_whose_fused_row_beats_every_bound_by_far_fails_naming_it(gpu, project, tmp_path):
    """On the fake GPU every benchmark takes 1 ms but the fused one, timed as nothing (0.01 ms),
    as a graph that holds none of its work would be: a wrong result (exit 1), not a speed-up;
    the baselines and bounds are kept."""
    import json

    from click.testing import CliRunner

    from perfbot.cli import perfbot
    from tests.test_runner_cpu import _subject

    _subject(project)
    out = tmp_path / "run.json"
    gpu.ms = lambda name, call: 0.01 if name == "fused" else 1.0
    arguments = ["run", "--project", str(project), "--suite", "tiny", "--samples", "10", "--out", str(out)]
    done = CliRunner().invoke(perfbot, arguments)
    assert done.exit_code == 1, done.output
    run = json.loads(out.read_text())
    assert {f["kernel"] for f in run["failures"]} == {"fused"} and len(run["failures"]) == 2
    assert all(
        "not credible: 0.0099" in f["reason"] and "faster than its roofline allows" in f["reason"]
        for f in run["failures"]
    ), run["failures"]
    assert {b["kernel"] for b in run["benchmarks"]} == {"eager", "gemm", "copy"}
    gpu.ms = lambda name, call: 0.9 if name == "fused" else 1.0  # faster than gemm by 10%: credible
    again = CliRunner().invoke(perfbot, [*arguments, "--overwrite"])
    assert again.exit_code == 0, again.output
    assert {b["kernel"] for b in json.loads(out.read_text())["benchmarks"]} == {"fused", "eager", "gemm", "copy"}
