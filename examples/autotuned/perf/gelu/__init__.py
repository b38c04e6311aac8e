"""The GELU of tunedkernels/gelu.py (tanh form, autotuned over BLOCK_SIZE) against PyTorch's
F.gelu, called as its users call it: through its autograd.Function. What is checked and timed is
the forward."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from tunedkernels.gelu import Gelu

from perfbot import Case, Subject

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def make_inputs(case: Case, generator: torch.Generator) -> tuple[torch.Tensor]:
    """Activations of an MLP, rows (tokens) × cols (its width); the kernel reads them flat."""
    x = torch.randn(case.rows, case.cols, generator=generator, device=generator.device)
    return (x.to(DTYPES[case.dtype]),)


def gelu_float64(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x.double(), approximate="tanh")


def moved(case: Case) -> int:
    """The fewest bytes an elementwise GELU moves: x read once, y written once."""
    return 2 * case.rows * case.cols * torch.finfo(DTYPES[case.dtype]).bits // 8


subject = Subject(
    name="gelu",
    inputs=make_inputs,
    reference=gelu_float64,
    # One rounding of the output to the dtype (bf16 2^-8, fp16 2^-11 relative), computed in fp32.
    tolerance={"bfloat16": 1e-2, "float16": 2e-3, "float32": 1e-5},
    bytes=moved,
    default_case=("pr", "4096x4096"),
)


@subject.implementation("triton", under_test=True)
def triton_gelu(x: torch.Tensor) -> torch.Tensor:
    return Gelu.apply(x)


@subject.implementation("torch")
def torch_gelu(x: torch.Tensor) -> torch.Tensor:
    """PyTorch's own GELU, its tanh form."""
    return F.gelu(x, approximate="tanh")


@subject.implementation("copy", bound=True, reference=lambda x: x.double(), bytes=moved)
def copy_x(x: torch.Tensor) -> torch.Tensor:
    """A device-to-device copy of x: the same bytes as the GELU and no arithmetic, its ceiling."""
    return x.clone()
