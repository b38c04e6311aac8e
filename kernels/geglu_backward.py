"""Fused GeGLU backward: the gradients of x and weight, from grad_out and the forward's factors.

    h   = [gelu(z2) | z1 gelu'(z2)]     [M, 2N], saved by the forward or recomputed (geglu.py)
    dz  = [g h1 | g h2]                 g = grad_out [M, N]: the gradient of [z1 | z2]
    dx  = dz @ weight                   [M, 2N] @ [2N, K]
    dW  = dz.T @ x                      [2N, M] @ [M, K]

The forward saves h, not z: with it, dz costs two products a column instead of a GELU and its
derivative. Two plans (`plan_for`):

- ``split`` (the default): `_geglu_dz_kernel` writes dz in one pass (reads g and h, writes dz:
  5 M N elements), then cuBLAS computes dx and dW. The pass is memory-bound and runs alone: its
  time is the whole cost over the two matmuls.
- ``fused``: `_geglu_dx_kernel` is the dx matmul with dz formed in its prologue: each program
  loads tiles of g, h1 and h2, multiplies them in registers and feeds the products to `tl.dot`
  against the matching rows of both halves of weight; the programs of the first column block of
  dx also store dz, once, for cuBLAS's dW. No pass of its own, but on an H100 this pointer-loaded
  kernel took 1.9x cuBLAS's time for dx (experiments/2026-12-07-geglu-backward, probe 1): it is
  kept as the starting point of a TMA, warp-specialized version, and chosen only where asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch
import triton
import triton.language as tl

PLANS = ("fused", "split")
# The plan every call takes, where not None: the benchmark times each plan at every shape
# (experiments/2026-12-07-geglu-backward).
FORCE_PLAN: str | None = None
# The plan a call takes where neither `plan_for`'s caller nor FORCE_PLAN says.
DEFAULT_PLAN = "split"


@triton.jit
def _geglu_dx_kernel(  # type: ignore[no-untyped-def]
    # Pointers to matrices: g [M, N]; h and dz [M, 2N], contiguous; weight [2N, K]; dx [M, K]
    g_ptr,
    h_ptr,
    w_ptr,
    dx_ptr,
    dz_ptr,
    # Matrix dimensions
    M,
    N,
    K,
    stride_gm,
    stride_gn,
    stride_wn,
    stride_wk,
    stride_dxm,
    # Meta-parameters: BLOCK_K columns of dx per program, BLOCK_N columns of each half of dz a step
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    """dx = dz1 @ weight[:N] + dz2 @ weight[N:], dz1 = g h1 and dz2 = g h2 formed in registers;
    the programs of column block 0 store dz."""
    pid_m, pid_k = _tile_coords(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(K, BLOCK_K), GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    offs_n = tl.arange(0, BLOCK_N)
    # Rows and columns past the edge wrap around instead of being masked (as in geglu.py's
    # pointer kernel): the loads stay in bounds and the stores drop those results. Only the
    # reduction over N is masked, with zeros.
    rows = (offs_m % M).to(tl.int64)
    cols = offs_k % K
    g_ptrs = g_ptr + rows[:, None] * stride_gm + offs_n[None, :] * stride_gn
    h1_ptrs = h_ptr + rows[:, None] * (2 * N) + offs_n[None, :]
    w1_ptrs = w_ptr + offs_n[:, None] * stride_wn + cols[None, :] * stride_wk
    store_dz = pid_k == 0
    dz1_ptrs = dz_ptr + offs_m[:, None].to(tl.int64) * (2 * N) + offs_n[None, :]
    in_rows = offs_m[:, None] < M

    # Accumulate into fp32 for accuracy; dz is rounded to the input dtype before its products,
    # the dz that dW reads.
    acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    for n in range(tl.cdiv(N, BLOCK_N)):
        in_n = offs_n < N - n * BLOCK_N
        g = tl.load(g_ptrs, mask=in_n[None, :], other=0.0).to(tl.float32)
        dz1 = (g * tl.load(h1_ptrs, mask=in_n[None, :], other=0.0).to(tl.float32)).to(w_ptr.dtype.element_ty)
        dz2 = (g * tl.load(h1_ptrs + N, mask=in_n[None, :], other=0.0).to(tl.float32)).to(w_ptr.dtype.element_ty)
        w1 = tl.load(w1_ptrs, mask=in_n[:, None], other=0.0)
        w2 = tl.load(w1_ptrs + N * stride_wn, mask=in_n[:, None], other=0.0)
        acc = tl.dot(dz1, w1, acc, input_precision=INPUT_PRECISION)
        acc = tl.dot(dz2, w2, acc, input_precision=INPUT_PRECISION)
        if store_dz:
            tl.store(dz1_ptrs, dz1, mask=in_rows & in_n[None, :])
            tl.store(dz1_ptrs + N, dz2, mask=in_rows & in_n[None, :])
        g_ptrs += BLOCK_N * stride_gn
        h1_ptrs += BLOCK_N
        w1_ptrs += BLOCK_N * stride_wn
        dz1_ptrs += BLOCK_N

    dx_ptrs = dx_ptr + offs_m[:, None].to(tl.int64) * stride_dxm + offs_k[None, :]
    tl.store(dx_ptrs, acc.to(dx_ptr.dtype.element_ty), mask=in_rows & (offs_k[None, :] < K))


@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):  # type: ignore[no-untyped-def]
    # Grouped order, as geglu.py's (Triton tutorial 03): GROUP_M row blocks of dz share each
    # column block of weight while it is in L2. A copy, not an import: geglu.py imports this
    # module, so that the files a run records for `fused` include it.
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((tile_id % num_pid_in_group) % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _geglu_dz_kernel(  # type: ignore[no-untyped-def]
    # Pointers to matrices: g [M, N]; h and dz [M, 2N], contiguous
    g_ptr,
    h_ptr,
    dz_ptr,
    # Matrix dimensions
    M,
    N,
    stride_gm,
    stride_gn,
    # Meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """dz = [g h1 | g h2], one BLOCK_M x BLOCK_N tile of each half per program."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    rows = offs_m[:, None].to(tl.int64)
    g = tl.load(g_ptr + rows * stride_gm + offs_n[None, :] * stride_gn, mask=mask).to(tl.float32)
    h1_ptrs = h_ptr + rows * (2 * N) + offs_n[None, :]
    dz1_ptrs = dz_ptr + rows * (2 * N) + offs_n[None, :]
    tl.store(dz1_ptrs, (g * tl.load(h1_ptrs, mask=mask).to(tl.float32)).to(dz_ptr.dtype.element_ty), mask=mask)
    tl.store(dz1_ptrs + N, (g * tl.load(h1_ptrs + N, mask=mask).to(tl.float32)).to(dz_ptr.dtype.element_ty), mask=mask)


@dataclass(frozen=True)
class BackwardPlan:
    """How `backward` computes the gradients: "fused" (dz in the dx kernel's prologue) or "split"
    (a dz pass, then cuBLAS), with the dx kernel's launch config (the dz pass's for "split")."""

    plan: str
    BLOCK_M: int
    BLOCK_N: int
    BLOCK_K: int
    GROUP_M: int
    num_warps: int
    num_stages: int

    def record(self) -> dict[str, Any]:
        return {"plan": self.plan, **{k: v for k, v in vars(self).items() if k != "plan"}}


# dx's tiles: 128 x 128 of dx, 32 columns of each half of dz a step. A stage holds three
# 128 x 32 tiles (g, h1, h2) and two 32 x 128 (the halves of weight): 40 KiB in 16 bits.
_FUSED_16 = BackwardPlan("fused", BLOCK_M=128, BLOCK_N=32, BLOCK_K=128, GROUP_M=8, num_warps=8, num_stages=4)
# fp32 takes full-precision FMA dots (as the forward): smaller tiles.
_FUSED_32 = BackwardPlan("fused", BLOCK_M=64, BLOCK_N=32, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=3)
_SPLIT = BackwardPlan("split", BLOCK_M=16, BLOCK_N=256, BLOCK_K=0, GROUP_M=1, num_warps=4, num_stages=1)


def plan_for(
    M: int,
    K: int,
    dtype: torch.dtype,
    num_sms: int,
    plan: str | None = None,
    config: dict[str, int] | None = None,
) -> BackwardPlan:
    """The backward's plan for dx [M, K]: `plan`, else FORCE_PLAN, else DEFAULT_PLAN; where the
    fused plan is asked for and dx has fewer tiles than the GPU has SMs (decode, small shapes),
    the split plan: the fused kernel's few programs would each walk all 2N columns while most SMs
    idle, where cuBLAS splits the reduction. `config` overrides the launch config's sizes (the
    tests' small tiles)."""
    plan = plan or FORCE_PLAN or DEFAULT_PLAN
    if plan not in PLANS:
        raise ValueError(f"geglu backward: plan must be one of {PLANS}, got {plan!r}")
    fused = _FUSED_32 if dtype == torch.float32 else _FUSED_16
    if plan == "fused" and config is None:
        tiles = triton.cdiv(M, fused.BLOCK_M) * triton.cdiv(K, fused.BLOCK_K)
        plan = "fused" if tiles >= num_sms else "split"
    base = _SPLIT if plan == "split" else fused
    if config:
        unknown = sorted(set(config) - {k for k in vars(base) if k != "plan"})
        if unknown:
            raise ValueError(f"geglu backward: unknown launch option(s) {unknown}")
        sizes: dict[str, Any] = dict(config)
        base = replace(base, **sizes)
    return base


def backward(
    g: torch.Tensor,
    h: torch.Tensor,
    x2d: torch.Tensor,
    weight: torch.Tensor,
    *,
    need_dx: bool = True,
    need_dw: bool = True,
    plan: BackwardPlan,
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """(dx [M, K], dW [2N, K]) from g [M, N] (any strides), h [M, 2N] and the forward's inputs;
    None for a gradient not needed. Launches only: no host sync, fresh outputs each call (safe to
    capture in a CUDA graph and replay)."""
    M, K = x2d.shape
    N = weight.shape[0] // 2
    if h.shape != (M, 2 * N) or not h.is_contiguous() or g.shape != (M, N):
        raise ValueError(
            f"geglu backward: expected g [{M}, {N}] and a contiguous h [{M}, {2 * N}], "
            f"got g {tuple(g.shape)} and h {tuple(h.shape)}"
        )
    dz = torch.empty(M, 2 * N, dtype=x2d.dtype, device=x2d.device)
    dx = None
    if need_dx and plan.plan == "fused":
        dx = torch.empty(M, K, dtype=x2d.dtype, device=x2d.device)
        _launch_dx(g, h, weight, dx, dz, plan)
    else:
        _launch_dz(g, h, dz, plan if plan.plan == "split" else _SPLIT)
        if need_dx:
            dx = dz @ weight
    dw = dz.T @ x2d if need_dw else None
    return dx, dw


def _launch_dx(
    g: torch.Tensor, h: torch.Tensor, weight: torch.Tensor, dx: torch.Tensor, dz: torch.Tensor, plan: BackwardPlan
) -> Any:
    M, K = dx.shape
    N = g.shape[1]
    grid = (triton.cdiv(M, plan.BLOCK_M) * triton.cdiv(K, plan.BLOCK_K),)
    return _geglu_dx_kernel[grid](
        g,
        h,
        weight,
        dx,
        dz,
        M,
        N,
        K,
        g.stride(0),
        g.stride(1),
        weight.stride(0),
        weight.stride(1),
        dx.stride(0),
        BLOCK_M=plan.BLOCK_M,
        BLOCK_N=plan.BLOCK_N,
        BLOCK_K=plan.BLOCK_K,
        GROUP_M=plan.GROUP_M,
        # Full fp32 products for fp32 inputs, as torch does by default (no TF32).
        INPUT_PRECISION="ieee",
        num_warps=plan.num_warps,
        num_stages=plan.num_stages,
    )


def _launch_dz(g: torch.Tensor, h: torch.Tensor, dz: torch.Tensor, plan: BackwardPlan) -> Any:
    M, N = g.shape
    grid = (triton.cdiv(M, plan.BLOCK_M), triton.cdiv(N, plan.BLOCK_N))
    return _geglu_dz_kernel[grid](
        g,
        h,
        dz,
        M,
        N,
        g.stride(0),
        g.stride(1),
        BLOCK_M=plan.BLOCK_M,
        BLOCK_N=plan.BLOCK_N,
        num_warps=plan.num_warps,
    )
