"""What perfbot measures in this repository: the Triton RMSNorm of kernel.py against PyTorch's.

perfbot finds this package through `[tool.perfbot] kernels` in pyproject.toml and reads
`subject` from it.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from perfbot import Case, Subject

from .kernel import rmsnorm

EPS = 1e-6
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def make_inputs(case: Case, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Activations of a model's residual stream (rows = tokens, cols = hidden size) and a weight."""
    dtype, device = DTYPES[case.dtype], generator.device
    x = torch.randn(case.rows, case.cols, generator=generator, device=device).to(dtype)
    weight = (0.5 + torch.rand(case.cols, generator=generator, device=device)).to(dtype)
    return x, weight


def rmsnorm_float64(x: torch.Tensor, weight: torch.Tensor, offset: str = "0") -> torch.Tensor:
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * (float(offset) + weight.double())


def moved(case: Case) -> int:
    """The fewest bytes an RMSNorm moves: x read once, y written once, the weight read once."""
    return (2 * case.rows * case.cols + case.cols) * torch.finfo(DTYPES[case.dtype]).bits // 8


subject = Subject(
    name="rmsnorm",
    inputs=make_inputs,
    reference=rmsnorm_float64,
    # One rounding of the output to the dtype, and eager's one more (bf16 2^-8, fp16 2^-11 relative).
    tolerance={"bfloat16": 1e-2, "float16": 2e-3, "float32": 1e-5},
    bytes=moved,
    variants={"offset": ("0", "1")},  # 1: Gemma's (1 + weight)
    default_case=("pr", "llama-3-8b"),
)


@subject.implementation("triton", under_test=True)
def triton_rmsnorm(x: torch.Tensor, weight: torch.Tensor, offset: str = "0") -> torch.Tensor:
    return rmsnorm(x, weight, EPS, float(offset))


@subject.implementation("torch")
def torch_rmsnorm(x: torch.Tensor, weight: torch.Tensor, offset: str = "0") -> torch.Tensor:
    """PyTorch's own RMSNorm operator."""
    scale = weight if offset == "0" else weight + float(offset)
    return F.rms_norm(x, (x.shape[-1],), scale, EPS)


@subject.implementation("eager")
def eager_rmsnorm(x: torch.Tensor, weight: torch.Tensor, offset: str = "0") -> torch.Tensor:
    """As Hugging Face's Llama and Gemma modules write it: statistics in fp32, op by op."""
    variance = x.float().pow(2).mean(-1, keepdim=True)
    normed = (x.float() * torch.rsqrt(variance + EPS)).to(x.dtype)
    return (weight + float(offset)) * normed if offset != "0" else weight * normed


@functools.cache
def _compiled():
    # dynamo keeps one cache per function and, past 8 recompiles (a new shape, dtype or offset
    # each), silently runs it eagerly: a "compiled" row would time eager. Raise the limit past
    # any suite, and make reaching it an error.
    torch._dynamo.config.recompile_limit = 1024
    torch._dynamo.config.accumulated_recompile_limit = 4096
    torch._dynamo.config.fail_on_recompile_limit_hit = True
    return torch.compile(eager_rmsnorm)


@subject.implementation("compiled")
def compiled_rmsnorm(x: torch.Tensor, weight: torch.Tensor, offset: str = "0") -> torch.Tensor:
    """torch.compile of eager: what a user gets without writing a kernel."""
    return _compiled()(x, weight, offset)


@subject.implementation(
    "copy",
    bound=True,
    variants=(),
    reference=lambda x, weight: x.double(),
    bytes=lambda case: 2 * case.rows * case.cols * torch.finfo(DTYPES[case.dtype]).bits // 8,
)
def copy_x(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """A device-to-device copy of x: the same bytes as RMSNorm and no arithmetic, its ceiling."""
    return x.clone()
