"""RMSNorm forward in Triton: y = x / sqrt(mean(x^2) + eps) * (offset + weight), row by row.

One program per row. A row that fits in one block (up to 64 KiB of it) is read once, kept in
registers, and written normalized; a longer row is read twice, block by block: once for its
sum of squares, once to write it. Statistics in fp32 whatever the input dtype. `offset` 1 is
Gemma's form, where the weight stores its difference from one.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

MAX_BLOCK_BYTES = 65536  # the longest row kept in registers whole


@triton.jit
def _rmsnorm_kernel(
    x_ptr,
    weight_ptr,
    y_ptr,
    x_row_stride,
    y_row_stride,
    cols,
    eps,
    offset,
    BLOCK: tl.constexpr,
    ONE_PASS: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    if ONE_PASS:
        columns = tl.arange(0, BLOCK)
        inside = columns < cols
        x = tl.load(x_row + columns, mask=inside, other=0.0).to(tl.float32)
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / cols + eps)
        weight = tl.load(weight_ptr + columns, mask=inside, other=0.0).to(tl.float32)
        tl.store(y_row + columns, (x * rstd * (weight + offset)).to(y_ptr.dtype.element_ty), mask=inside)
    else:
        squares = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, cols, BLOCK):
            columns = start + tl.arange(0, BLOCK)
            x = tl.load(x_row + columns, mask=columns < cols, other=0.0).to(tl.float32)
            squares += x * x
        rstd = tl.rsqrt(tl.sum(squares, axis=0) / cols + eps)
        for start in range(0, cols, BLOCK):
            columns = start + tl.arange(0, BLOCK)
            inside = columns < cols
            x = tl.load(x_row + columns, mask=inside, other=0.0).to(tl.float32)
            weight = tl.load(weight_ptr + columns, mask=inside, other=0.0).to(tl.float32)
            tl.store(y_row + columns, (x * rstd * (weight + offset)).to(y_ptr.dtype.element_ty), mask=inside)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6, offset: float = 0.0) -> torch.Tensor:
    """RMSNorm over the last dimension of x (any leading dimensions), scaled by offset + weight."""
    cols = x.shape[-1]
    if weight.shape != (cols,):
        raise ValueError(f"rmsnorm: weight must have shape ({cols},), got {tuple(weight.shape)}")
    x2d = x.reshape(-1, cols)
    if x2d.stride(-1) != 1:
        x2d = x2d.contiguous()
    y = torch.empty_like(x2d)
    rows = x2d.shape[0]
    if rows == 0 or cols == 0:
        return y.view(x.shape)
    whole = triton.next_power_of_2(cols)
    longest = MAX_BLOCK_BYTES // x.element_size()
    block = min(whole, longest)
    _rmsnorm_kernel[(rows,)](
        x2d,
        weight.contiguous(),
        y,
        x2d.stride(0),
        y.stride(0),
        cols,
        eps,
        offset,
        BLOCK=block,
        ONE_PASS=whole <= longest,
        num_warps=min(max(block // 256, 1), 16),
    )
    return y.view(x.shape)
