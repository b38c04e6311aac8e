"""Fused GeGLU forward: one matmul, split in two halves, gated by GELU.

    [z1 | z2] = x @ weight.T        x: [..., K], weight: [2N, K] (torch.nn.Linear layout)
    out       = z1 * gelu(z2)       out: [..., N]

Each program computes one BLOCK_M x BLOCK_N tile of `out`, so it accumulates the matching
tiles of z1 (rows n of weight) and z2 (rows N + n) side by side. The grid covers the N output
columns, not the 2N columns of the matmul: the seed issue's kernel launched a program for every
column of [z1 | z2] and half of them did work that was thrown away.
"""

from __future__ import annotations

import math
import os

import torch
import triton
import triton.language as tl

APPROXIMATIONS = ("none", "tanh")
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


@triton.jit
def _gelu(z, APPROXIMATE_TANH: tl.constexpr):
    if APPROXIMATE_TANH:
        # 0.5 z (1 + tanh(u)) == z * sigmoid(2u), with u = sqrt(2/pi) (z + 0.044715 z^3)
        u = 0.7978845608028654 * (z + 0.044715 * z * z * z)
        return z * tl.sigmoid(2.0 * u)
    else:
        # 0.5 z (1 + erf(z / sqrt(2)))
        return 0.5 * z * (1.0 + tl.math.erf(z * 0.7071067811865476))


@triton.jit
def _geglu_kernel(
    # Pointers to matrices
    x_ptr, w_ptr, out_ptr,
    # Matrix dimensions
    M, N, K,
    stride_xm, stride_xk,
    stride_wn, stride_wk,
    stride_om, stride_on,
    # Meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    APPROXIMATE_TANH: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    # Grouped tile order: GROUP_M row-blocks share each column-block of weight while it is
    # still in L2 (Triton tutorial 03).
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    # Rows and columns past the edge wrap around instead of being masked: the loads stay in
    # bounds and the store below drops those results.
    rows_x = offs_m % M
    rows_w = offs_n % N
    x_ptrs = x_ptr + rows_x[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w1_ptrs = w_ptr + offs_k[:, None] * stride_wk + rows_w[None, :] * stride_wn
    w2_ptrs = w1_ptrs + N * stride_wn

    # Accumulate into fp32 for accuracy, whatever the input dtype.
    z1 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    z2 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        x = tl.load(x_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        w1 = tl.load(w1_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        w2 = tl.load(w2_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        z1 = tl.dot(x, w1, z1, input_precision=INPUT_PRECISION)
        z2 = tl.dot(x, w2, z2, input_precision=INPUT_PRECISION)
        x_ptrs += BLOCK_K * stride_xk
        w1_ptrs += BLOCK_K * stride_wk
        w2_ptrs += BLOCK_K * stride_wk

    out = z1 * _gelu(z2, APPROXIMATE_TANH)
    out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptrs, out.to(out_ptr.dtype.element_ty), mask=mask)


def kernel_config(x: torch.Tensor, weight: torch.Tensor) -> dict:
    """The launch configuration `geglu` uses for these inputs (recorded with every result)."""
    _check_inputs(x, weight, "none")
    return _pointer_config(math.prod(x.shape[:-1]), weight.shape[0] // 2, x.dtype)


def _pointer_config(M: int, N: int, dtype: torch.dtype) -> dict:
    # Two accumulators of BLOCK_M x BLOCK_N make the register footprint of one
    # BLOCK_M x 2*BLOCK_N matmul tile. fp32 operands are twice the bytes: halve BLOCK_K so the
    # pipelined stages still fit in shared memory.
    block_m = 128 if M > 64 else max(16, triton.next_power_of_2(M))
    return {
        "path": "pointer",
        "BLOCK_M": block_m,
        "BLOCK_N": 64,
        "BLOCK_K": 32 if dtype == torch.float32 else 64,
        "GROUP_M": 8,
        "num_warps": 8 if block_m >= 128 else 4,
        "num_stages": 3,
    }


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


def _check_inputs(x: torch.Tensor, weight: torch.Tensor, approximate: str) -> None:
    if not isinstance(x, torch.Tensor) or not isinstance(weight, torch.Tensor):
        raise ValueError(
            f"geglu: x and weight must be tensors, got {type(x).__name__} and {type(weight).__name__}"
        )
    if approximate not in APPROXIMATIONS:
        raise ValueError(f"geglu: approximate must be one of {APPROXIMATIONS}, got {approximate!r}")
    if x.ndim < 1 or weight.ndim != 2:
        raise ValueError(
            f"geglu: expected x [..., K] and weight [2N, K], got x {tuple(x.shape)} "
            f"and weight {tuple(weight.shape)}"
        )
    if weight.shape[1] != x.shape[-1] or weight.shape[0] % 2:
        raise ValueError(
            f"geglu: weight must be [2N, K] with K = x.shape[-1] = {x.shape[-1]}, "
            f"got weight {tuple(weight.shape)} for x {tuple(x.shape)}"
        )
    if x.dtype != weight.dtype or x.dtype not in SUPPORTED_DTYPES:
        raise ValueError(
            f"geglu: x and weight must share one dtype of float16, bfloat16, float32; "
            f"got x {x.dtype} and weight {weight.dtype}"
        )
    if x.device != weight.device:
        raise ValueError(f"geglu: x is on {x.device} but weight is on {weight.device}")
    if x.device.type != "cuda" and not _interpreting():
        raise ValueError(
            f"geglu: tensors must be on a CUDA device (or run with TRITON_INTERPRET=1), got {x.device}"
        )


def geglu(
    x: torch.Tensor,
    weight: torch.Tensor,
    *,
    approximate: str = "none",
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """out = z1 * gelu(z2, approximate) with [z1 | z2] = x @ weight.T.

    `out`, if given, receives the result and must be a contiguous [..., N] tensor of x's dtype.
    """
    _check_inputs(x, weight, approximate)
    K = x.shape[-1]
    N = weight.shape[0] // 2
    out_shape = (*x.shape[:-1], N)
    if out is None:
        out = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    elif out.shape != out_shape or out.dtype != x.dtype or out.device != x.device or not out.is_contiguous():
        raise ValueError(
            f"geglu: out must be a contiguous {x.dtype} tensor of shape {out_shape} on {x.device}, "
            f"got {out.dtype} {tuple(out.shape)} on {out.device}"
        )
    M = math.prod(x.shape[:-1])
    if M == 0 or N == 0:
        return out
    if K == 0:
        return out.zero_()
    x2d = x.reshape(M, K)
    out2d = out.view(M, N)

    config = _pointer_config(M, N, x.dtype)
    grid = (triton.cdiv(M, config["BLOCK_M"]) * triton.cdiv(N, config["BLOCK_N"]),)
    _geglu_kernel[grid](
        x2d, weight, out2d,
        M, N, K,
        x2d.stride(0), x2d.stride(1),
        weight.stride(0), weight.stride(1),
        out2d.stride(0), out2d.stride(1),
        BLOCK_M=config["BLOCK_M"], BLOCK_N=config["BLOCK_N"], BLOCK_K=config["BLOCK_K"],
        GROUP_M=config["GROUP_M"],
        APPROXIMATE_TANH=approximate == "tanh",
        # Full fp32 products for fp32 inputs, as torch does by default (no TF32).
        INPUT_PRECISION="ieee",
        num_warps=config["num_warps"], num_stages=config["num_stages"],
    )
    return out
