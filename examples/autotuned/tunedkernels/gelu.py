"""GELU in Triton, the tanh form (as GPT-2 and Gemma use it), elementwise:
y = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).

Any shape, read as one flat vector; one program per BLOCK_SIZE elements, computed in fp32. The
block size is tuned: `@triton.autotune` times each candidate the first time it meets a number of
elements (and dtype), and keeps the fastest for the process.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.language.extra.libdevice import tanh

DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_ELEMENTS = 2**31 - 2**20  # offsets are int32: the last block's must not overflow

SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)
CUBIC = tl.constexpr(0.044715)

# From 64 to 1,024 elements a program, four warps each: small blocks launch more programs, large
# ones give each thread more to do; on large tensors the largest few often time alike.
CONFIGS = [triton.Config({"BLOCK_SIZE": block}) for block in (64, 128, 256, 512, 1024)]


@triton.autotune(configs=CONFIGS, key=["n_elements"])
@triton.jit
def _gelu_kernel(
    # Pointers to vectors
    x_ptr,
    y_ptr,
    # Vector size
    n_elements,
    # Meta-parameters
    BLOCK_SIZE: tl.constexpr,
):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    inside = offsets < n_elements
    # fp32 whatever the input: libdevice's tanh takes float32 and float64 only
    x = tl.load(x_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    # gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    inner = SQRT_2_OVER_PI * (x + CUBIC * x * x * x)
    y = 0.5 * x * (1.0 + tanh(inner))
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=inside)


def gelu_forward(x: torch.Tensor) -> torch.Tensor:
    """GELU (tanh form) of every element of x, in x's dtype and shape."""
    if x.dtype not in DTYPES:
        raise ValueError(f"gelu: x must be float16, bfloat16 or float32, got {x.dtype}")
    n_elements = x.numel()
    if n_elements > MAX_ELEMENTS:
        raise ValueError(f"gelu: at most {MAX_ELEMENTS} elements (int32 offsets), got {n_elements}")
    x = x.contiguous()
    y = torch.empty_like(x)
    if n_elements == 0:
        return y
    _gelu_kernel[lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)](x, y, n_elements)
    return y


class Gelu(torch.autograd.Function):
    """GELU (tanh form), differentiable: the forward in Triton, the backward in torch,
    dx = dy * (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)), t = tanh(inner)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return gelu_forward(x)

    @staticmethod
    def backward(ctx, dy: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        x32 = x.float()
        k = SQRT_2_OVER_PI.value
        t = torch.tanh(k * (x32 + CUBIC.value * x32.pow(3)))
        slope = 0.5 * (1 + t) + 0.5 * x32 * (1 - t * t) * k * (1 + 3 * CUBIC.value * x32 * x32)
        return (dy.float() * slope).to(x.dtype)


def gelu(x: torch.Tensor) -> torch.Tensor:
    """F.gelu(x, approximate="tanh") through the Triton kernel, with autograd."""
    return Gelu.apply(x)
