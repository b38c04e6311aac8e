"""The row softmax of tunedkernels/softmax.py (autotuned over num_warps) against torch.softmax,
called as its users call it: through its autograd.Function. What is checked and timed is the
forward."""

from __future__ import annotations

import torch
from tunedkernels.softmax import Softmax

from perfbot import Case, Subject

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def make_inputs(case: Case, generator: torch.Generator) -> tuple[torch.Tensor]:
    """Logits, rows × cols: attention scores (rows of a sequence's length) or a vocabulary's."""
    x = torch.randn(case.rows, case.cols, generator=generator, device=generator.device)
    return (x.to(DTYPES[case.dtype]),)


def softmax_float64(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.double(), dim=-1)


def moved(case: Case) -> int:
    """The fewest bytes a softmax moves: x read once, y written once."""
    return 2 * case.rows * case.cols * torch.finfo(DTYPES[case.dtype]).bits // 8


subject = Subject(
    name="softmax",
    inputs=make_inputs,
    reference=softmax_float64,
    # One rounding of the output to the dtype (bf16 2^-8, fp16 2^-11 relative), statistics in fp32.
    tolerance={"bfloat16": 1e-2, "float16": 2e-3, "float32": 1e-5},
    bytes=moved,
    default_case=("pr", "4096x4096"),
)


@subject.implementation("triton", under_test=True)
def triton_softmax(x: torch.Tensor) -> torch.Tensor:
    return Softmax.apply(x)


@subject.implementation("torch")
def torch_softmax(x: torch.Tensor) -> torch.Tensor:
    """PyTorch's own softmax operator."""
    return torch.softmax(x, dim=-1)


@subject.implementation("copy", bound=True, reference=lambda x: x.double(), bytes=moved)
def copy_x(x: torch.Tensor) -> torch.Tensor:
    """A device-to-device copy of x: the same bytes as a softmax and no arithmetic, its ceiling."""
    return x.clone()
