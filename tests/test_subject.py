"""The kernels package loads by path, and its suites say what the issue asked for."""

from pathlib import Path

import pytest

from perfbot.errors import BadInput
from perfbot.subject import load_subject, load_suites
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def subject():
    return load_subject(ROOT / "kernels")


def test_implementations(subject):
    assert set(subject.implementations) >= {"fused", "eager", "compiled", "gemm"}
    assert subject.implementations["gemm"].computes == "matmul"


def test_a100_suite_is_the_seed_sweep(subject):
    suite = subject.suites["a100"]
    assert [(c.M, c.K, c.N, c.dtype) for c in suite.cases] == [
        (d, d, 4 * d, "float16") for d in (512, 1024, 2048, 4096)
    ]


def test_models_suite(subject):
    cases = {(c.K, c.N) for c in subject.suites["models"].cases}
    assert cases == {
        (2048, 16384),
        (3072, 24576),
        (2560, 10240),
        (3840, 15360),
        (5376, 21504),
        (2048, 5120),
        (4096, 10240),
    }
    assert {(c.M, c.dtype) for c in subject.suites["models"].cases} == {(8192, "bfloat16")}


def test_decode_suite(subject):
    cases = {(c.M, c.K, c.N, c.dtype) for c in subject.suites["decode"].cases}
    assert cases == {(m, k, n, "bfloat16") for m in (1, 16, 64) for k, n in ((3072, 24576), (5376, 21504))}


def test_two_checkouts_load_side_by_side(project: Path, subject):
    other = load_subject(project / "kernels")
    assert other.module is not subject.module
    assert other.module.__name__ != subject.module.__name__


@pytest.mark.parametrize(
    "text,words",
    [
        ("pr: [1, 2]", "pr: should be a mapping (an object), got [1, 2]"),
        ("pr:\n  cases: []\n", "pr.cases: List should have at least 1 item"),
        ("pr:\n  colour: red\n  cases: [{name: a, M: 1, K: 1, N: 1, dtype: float16}]\n", "pr.colour: unknown key"),
        (
            "pr:\n  cases: [{name: a, M: 1, K: 1, N: 1, dtype: float64}]\n",
            "pr.cases[0].dtype: should be 'float16', 'bfloat16' or 'float32', got 'float64'",
        ),
        (
            "pr:\n  dtype: float16\n  cases: [{name: a, M: 1, K: 1.5, N: 1}]\n",
            "pr.cases[0].K: should be a valid integer, got 1.5",
        ),
        (
            "pr:\n  dtype: float16\n  kernels: [cutlass]\n  cases: [{name: a, M: 1, K: 1, N: 1}]\n",
            "unknown kernel 'cutlass'",
        ),
        (
            "pr:\n  dtype: float16\n  cases: [{name: a, M: 1, K: 1, N: 1}, {name: a, M: 2, K: 1, N: 1}]\n",
            "appears twice",
        ),
        ("pr: {cases: [{M: 1, K: 1, N: 1, dtype: float16}]}\n", "pr.cases[0].name: missing"),
        ("{{{", "cannot read"),
    ],
)
def test_bad_suites_are_bad_input(tmp_path: Path, text: str, words: str):
    path = tmp_path / "suites.yaml"
    path.write_text(text)
    with pytest.raises(BadInput) as error:
        load_suites(path, {"fused", "eager"})
    assert words in str(error.value)


def test_compiled_baselines_never_fall_back_to_eager_past_dynamos_recompile_limit():
    """Twelve variants of one function (more than dynamo's default limit of 8) stay compiled once
    an implementation built on torch.compile exists; the default would run the 9th eagerly."""
    import torch
    from torch._dynamo.utils import counters

    subject = load_subject(ROOT / "kernels")
    subject.implementations["compiled"].build("none")
    torch._dynamo.reset()
    counters.clear()

    def variant(x, scale: float):
        return x * scale

    compiled = torch.compile(variant, backend="eager", dynamic=False)
    for n in range(12):
        compiled(torch.ones(n + 1), float(n))
    assert counters["frames"]["ok"] == 12
    assert torch._dynamo.config.fail_on_recompile_limit_hit
