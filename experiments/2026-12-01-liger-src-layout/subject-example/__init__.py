"""perfbot's subject for Liger-Kernel's GeGLU forward (src/liger_kernel/ops/geglu.py).

Liger computes c = gelu_tanh(a) * b (the tanh form of GELU on `a`, times `b`), row by row, one
Triton program per row. Found by perfbot through `[tool.perfbot] kernels = "perfbot_bench"`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from perfbot import Case, Subject, Suite

from liger_kernel.ops.geglu import LigerGELUMulFunction

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def make_inputs(case: Case, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    dtype, device = DTYPES[case.dtype], generator.device
    a = torch.randn(case.rows, case.cols, generator=generator, device=device).to(dtype)
    b = torch.randn(case.rows, case.cols, generator=generator, device=device).to(dtype)
    return a, b


def geglu_float64(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """As Liger's kernel computes it: 0.5·a·(1 + tanh(√(2/π)·(a + 0.044715·a³)))·b, in float64."""
    a, b = a.double(), b.double()
    return 0.5 * a * (1 + torch.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a**3))) * b


def moved(case: Case) -> int:
    """a and b read once, c written once."""
    return 3 * case.rows * case.cols * torch.finfo(DTYPES[case.dtype]).bits // 8


QUICK = (
    Case("quick", "tiny", {"rows": 4, "cols": 64}, "float32"),
    Case("quick", "odd", {"rows": 37, "cols": 200}, "float32"),
)
PR = (
    Case("pr", "llama-3-8b-mlp", {"rows": 4096, "cols": 14336}, "bfloat16"),
    Case("pr", "gemma-2b-mlp", {"rows": 4096, "cols": 16384}, "bfloat16"),
)

subject = Subject(
    name="liger-geglu",
    inputs=make_inputs,
    reference=geglu_float64,
    tolerance={"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2},
    bytes=moved,
    suites={
        "quick": Suite("quick", "small, for perfbot check in Triton's interpreter", ("liger", "torch"), QUICK),
        "pr": Suite("pr", "every pull request", ("liger", "torch"), PR),
    },
)


@subject.implementation("liger", under_test=True)
def liger_geglu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return LigerGELUMulFunction.apply(a, b)


@subject.implementation("torch")
def torch_geglu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.gelu(a, approximate="tanh") * b
