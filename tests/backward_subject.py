"""A generated repository of a training kernel, as the field writes one: `gradlib/ops.py` holds an
elementwise product `y = x * w`, its forward and its backward each a `@triton.autotune`d Triton
kernel, called through a `torch.autograd.Function`; `perf/` is its perfbot subject, whose suites
time it in the three modes. Options plant a wrong gradient, or take the backward away."""

from __future__ import annotations

from pathlib import Path

OPS = '''\
"""y = x * w, elementwise; dx = dy * w, dw = dy * x."""

import torch
import triton
import triton.language as tl

CONFIGS = [triton.Config({{"BLOCK": b}}, num_warps=1) for b in (16, 32)]


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def _mul_kernel(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    x = tl.load(x_ptr + offsets, mask=inside)
    w = tl.load(w_ptr + offsets, mask=inside)
    tl.store(y_ptr + offsets, x * w, mask=inside)


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def _mul_backward_kernel(dy_ptr, x_ptr, w_ptr, dx_ptr, dw_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    dy = tl.load(dy_ptr + offsets, mask=inside)
    x = tl.load(x_ptr + offsets, mask=inside)
    w = tl.load(w_ptr + offsets, mask=inside)
    tl.store(dx_ptr + offsets, dy * w * {dx_factor}, mask=inside)
    tl.store(dw_ptr + offsets, dy * x, mask=inside)


def _grid(n):
    return lambda meta: (triton.cdiv(n, meta["BLOCK"]),)


def _forward(x, w):
    y = torch.empty_like(x)
    _mul_kernel[_grid(x.numel())](x, w, y, x.numel())
    return y
{autograd}'''

# The autograd.Function, and `mul` through it; without it, `mul` launches the forward alone.
AUTOGRAD = """

class Mul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return _forward(x, w)

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        dy = dy.contiguous()
        dx, dw = torch.empty_like(x), torch.empty_like(w)
        _mul_backward_kernel[_grid(x.numel())](dy, x, w, dx, dw, x.numel())
        return dx, dw


def mul(x, w):
    return Mul.apply(x, w)
"""
NO_AUTOGRAD = """

def mul(x, w):
    return _forward(x, w)
"""

SUBJECT = """\
import torch

from perfbot import Subject
from gradlib.ops import mul


def make_inputs(case, generator):
    dtype = getattr(torch, case.dtype)
    x = torch.randn(case.n, generator=generator, device=generator.device)
    w = torch.randn(case.n, generator=generator, device=generator.device)
    return (x.to(dtype), w.to(dtype))


def reference(x, w):
    return x.double() * w.double()


def flops(case):
    # One multiply per element forward, two backward (dx and dw).
    return case.n * {"forward": 1, "backward": 2, "forward+backward": 3}[case.mode]


subject = Subject(
    name="mul",
    inputs=make_inputs,
    reference=reference,
    tolerance={"float32": 1e-6, "float16": 1e-3},
    grad_tolerance={"float32": 1e-6, "float16": 1e-3},
    flops=flops,
)


@subject.implementation("triton", under_test=True)
def triton_mul(x, w):
    return mul(x, w)


@subject.implementation("torch")
def torch_mul(x, w):
    return x * w


@subject.implementation("copy", bound=True, reference=lambda x, w: x.double(), bytes=lambda case: 8 * case.n)
def copy(x, w):
    return x.clone()
"""

SUITES = """\
quick:
  about: each mode, small enough for Triton's interpreter
  dtype: float32
  mode: [forward, backward, forward+backward]
  implementations: [triton, torch]
  cases:
    - {name: odd, n: 45}
    - {name: half, n: 37, dtype: float16, mode: backward}
pr:
  about: every implementation, the bound in the forward alone
  dtype: float32
  mode: [forward, backward]
  cases:
    - {name: odd, n: 45}
"""


def backward_repository(root: Path, dx_factor: str = "1", backward: bool = True) -> Path:
    """The repository at `root`: the kernels, their subject, its pyproject. `dx_factor` multiplies
    the backward's dx (a wrong gradient, other than 1); without `backward`, `mul` launches the
    forward kernel without an autograd.Function: its output does not require grad."""
    (root / "gradlib").mkdir(parents=True)
    (root / "gradlib" / "__init__.py").write_text("")
    ops = OPS.format(dx_factor=dx_factor, autograd=AUTOGRAD if backward else NO_AUTOGRAD)
    (root / "gradlib" / "ops.py").write_text(ops)
    (root / "perf").mkdir()
    (root / "perf" / "__init__.py").write_text(SUBJECT)
    (root / "perf" / "suites.yaml").write_text(SUITES)
    (root / "pyproject.toml").write_text('[tool.perfbot]\nkernels = "perf"\ntriton-commit = "' + 40 * "0" + '"\n')
    (root / ".gitignore").write_text("__pycache__/\n")
    return root
