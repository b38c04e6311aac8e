"""Row softmax in Triton: y = exp(x - max(x)) / sum(exp(x - max(x))), over the last dimension.

One program per row; the whole row is loaded into one block (BLOCK_SIZE, the next power of two
of the columns), statistics in fp32 whatever the input dtype. The only thing tuned is how many
warps share a row: `@triton.autotune` times each candidate the first time it meets a number of
columns (and dtype), and keeps the fastest for the process.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# The longest row kept in one block: beyond it, one program's registers spill to local memory.
MAX_COLS = 65536
DTYPES = (torch.float16, torch.bfloat16, torch.float32)

# One to 32 warps (1,024 threads, the most a block may have) per row: few suit narrow rows, many
# wide ones, and between them several often time within noise of each other.
CONFIGS = [triton.Config({}, num_warps=warps) for warps in (1, 2, 4, 8, 16, 32)]


@triton.autotune(configs=CONFIGS, key=["n_cols"])
@triton.jit
def _softmax_kernel(
    # Pointers to matrices
    x_ptr,
    y_ptr,
    # The stride of a row, in elements
    x_row_stride,
    y_row_stride,
    # Matrix dimensions
    n_cols,
    # Meta-parameters
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)  # rows * stride may pass 2^31
    cols = tl.arange(0, BLOCK_SIZE)
    inside = cols < n_cols
    # -inf past the row's end: it changes neither the max nor, as exp(-inf) = 0, the sum.
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=inside, other=-float("inf")).to(tl.float32)
    # softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m), m = max_j x_j: subtracting the max keeps
    # exp from overflowing and changes nothing else.
    numerator = tl.exp(x - tl.max(x, axis=0))
    y = numerator / tl.sum(numerator, axis=0)
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=inside)


def softmax_forward(x: torch.Tensor) -> torch.Tensor:
    """The softmax of x over its last dimension (any leading dimensions), in x's dtype."""
    if x.dtype not in DTYPES:
        raise ValueError(f"softmax: x must be float16, bfloat16 or float32, got {x.dtype}")
    if x.dim() == 0:
        raise ValueError("softmax: x must have at least one dimension, got a scalar")
    n_cols = x.shape[-1]
    if n_cols > MAX_COLS:
        raise ValueError(f"softmax: rows of at most {MAX_COLS} columns fit in one block, got {n_cols}")
    if x.numel() == 0:  # no row, or rows of nothing: no program to launch
        return torch.empty_like(x)
    x2d = x.reshape(-1, n_cols)
    if x2d.stride(-1) != 1:
        x2d = x2d.contiguous()
    y = torch.empty_like(x2d)
    n_rows = x2d.shape[0]
    _softmax_kernel[(n_rows,)](
        x2d,
        y,
        x2d.stride(0),
        y.stride(0),
        n_cols,
        BLOCK_SIZE=triton.next_power_of_2(n_cols),
    )
    return y.view(x.shape)


class Softmax(torch.autograd.Function):
    """softmax(x) over the last dimension, differentiable: the forward in Triton, the backward in
    torch, dx = y * (dy - sum(dy * y)) row by row."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        y = softmax_forward(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        y32, dy32 = y.float(), dy.float()
        return (y32 * (dy32 - (dy32 * y32).sum(dim=-1, keepdim=True))).to(y.dtype)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """softmax(x, dim=-1) through the Triton kernel, with autograd."""
    return Softmax.apply(x)
