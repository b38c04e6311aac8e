"""Fused GeGLU forward: one matmul, split in two halves, gated by GELU.

    [z1 | z2] = x @ weight.T        x: [..., K], weight: [2N, K] (torch.nn.Linear layout)
    out       = z1 * gelu(z2)       out: [..., N]

Each tile of `out` accumulates the matching tiles of z1 (rows n of weight) and z2 (rows N + n)
side by side and applies the epilogue in registers, so z never reaches memory. The grid covers
the N output columns, not the 2N columns of the matmul: the seed issue's kernel launched a
program for every column of [z1 | z2] and half of them did work that was thrown away.

Three paths, chosen per call (see `plan_for`):
- ``tma`` (Hopper and newer, 16-bit inputs): a persistent kernel, one program per SM (or two)
  walking the tiles in grouped order; x and both halves of weight arrive through TMA
  descriptors, out leaves through one; optionally warp-specialized (producer warps load,
  consumer warps multiply). Decode shapes with too few column tiles for the SMs split K across
  programs instead (`_geglu_split_k_kernel`): fp32 partials through memory, the last part of a
  tile to arrive adds them and applies the epilogue.
- ``pointer`` (everything else: A100, fp32, shapes TMA cannot describe): the tutorial-03 style
  kernel with pointer arithmetic, one program per tile.
- ``epilogue``: z written by cuBLAS in x's dtype, as eager's matmul writes it, then one
  elementwise kernel (`_geglu_epilogue_kernel`); taken where the fused TMA launch is predicted to
  lose to it (`configs.unfused_reason`), or when asked for (``path="epilogue"``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import torch
import triton
import triton.language as tl
from torch.autograd.function import once_differentiable
from triton.tools.tensor_descriptor import TensorDescriptor

from . import configs, geglu_backward

APPROXIMATIONS = ("none", "tanh")
PATHS = ("tma", "pointer", "epilogue")
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)

# Triton reads a jit function's annotations: tl.constexpr marks a meta-parameter, and a type
# would fix what it specializes on. So the other arguments go without, and mypy is told so.


@triton.jit
def _gelu(z, APPROXIMATE_TANH: tl.constexpr):  # type: ignore[no-untyped-def]
    """gelu(z) = z * F(z), F the gate: Phi, the normal CDF, = 0.5 (1 + erf(z / sqrt(2))); or, with
    APPROXIMATE_TANH, 0.5 (1 + tanh(u)) = sigmoid(2u) with u = sqrt(2/pi) (z + 0.044715 z^3).

    Both gates satisfy F(z) = 1 - F(-z), so z F(z) = max(z, 0) - |z| F(-|z|) for either sign, and
    only the tail F(-t), t = |z| held at most T, is computed, as 2^p: p is a polynomial fitted to
    log2 F(-t) on [0, T] (erf: degree 7 in t, T = 5.3; tanh: degree 9 in s = 0.4 t - 1, T = 5,
    as a degree-9 polynomial in t loses 6e-6 of p to fp32 rounding). One exp2 and eight (erf) or
    eleven (tanh) FMAs, no division, no select and no branch: the epilogue runs between the tiles
    of the matmul, so each instruction of it shows in the kernel's time (libdevice's erff made the
    erf rows measurably slower than tanh; docs/kernel.md). Relative error below 1e-5 wherever |gelu| > 1e-6
    and absolute error below 1e-6 (tests/test_geglu.py), where 0.5 z (1 + erf(z / sqrt(2))) in
    fp32 loses its relative accuracy in the negative tail, as 1 + erf cancels. Past T the tail
    stays at F(-T) (erf 5.8e-8, tanh 4.6e-8): +inf stays inf, -inf gives -T F(-T), within 3e-7
    of gelu's limit 0, and no select is needed; a NaN stays NaN (propagate_nan).
    """
    if APPROXIMATE_TANH:
        t = tl.minimum(tl.abs(z), 5.0, propagate_nan=tl.PropagateNan.ALL)
        s = t * 0.4 - 1.0
        p = 0.017775888937773113 * s - 0.010106165140165857
        p = p * s - 0.0773497697889739
        p = p * s + 0.0800399411315828
        p = p * s + 0.1348424499419755
        p = p * s - 0.3578045739038399
        p = p * s - 1.247525385747581
        p = p * s - 5.028852821460668
        p = p * s - 10.51721521813701
        p = p * s - 7.372743017771502
    else:
        t = tl.minimum(tl.abs(z), 5.3, propagate_nan=tl.PropagateNan.ALL)
        p = -1.7218363746463674e-06 * t + 5.974687801065765e-05
        p = p * t - 0.0009189766990633564
        p = p * t + 0.008474007720349912
        p = p * t - 0.053914114257328095
        p = p * t - 0.4584866112156438
        p = p * t - 1.1512515872978706
        p = p * t - 0.9999950450774119
    return tl.maximum(z, 0.0) - t * tl.exp2(p)


@triton.jit
def _gelu_tail(z, APPROXIMATE_TANH: tl.constexpr):  # type: ignore[no-untyped-def]
    """(t, F(-t)) with t = |z| held at most T: the tail of the gate, `_gelu`'s polynomials. `_gelu`
    keeps its own copy: calling this from it changed the forward's SASS, which the no-grad path
    must keep (experiments/2026-12-07-geglu-backward); a test holds the two equal bit for bit."""
    if APPROXIMATE_TANH:
        t = tl.minimum(tl.abs(z), 5.0, propagate_nan=tl.PropagateNan.ALL)
        s = t * 0.4 - 1.0
        p = 0.017775888937773113 * s - 0.010106165140165857
        p = p * s - 0.0773497697889739
        p = p * s + 0.0800399411315828
        p = p * s + 0.1348424499419755
        p = p * s - 0.3578045739038399
        p = p * s - 1.247525385747581
        p = p * s - 5.028852821460668
        p = p * s - 10.51721521813701
        p = p * s - 7.372743017771502
    else:
        t = tl.minimum(tl.abs(z), 5.3, propagate_nan=tl.PropagateNan.ALL)
        p = -1.7218363746463674e-06 * t + 5.974687801065765e-05
        p = p * t - 0.0009189766990633564
        p = p * t + 0.008474007720349912
        p = p * t - 0.053914114257328095
        p = p * t - 0.4584866112156438
        p = p * t - 1.1512515872978706
        p = p * t - 0.9999950450774119
    return t, tl.exp2(p)


@triton.jit
def _gelu_and_grad(z, APPROXIMATE_TANH: tl.constexpr):  # type: ignore[no-untyped-def]
    """(gelu(z), gelu'(z)), gelu'(z) = F(z) + z F'(z), for the backward's saved factors.

    F(z) is 1 - F(-t) for z >= 0 and F(-t) below, from `_gelu_tail`'s 2^p. F' is, for erf, the
    normal density exp(-z^2 / 2) / sqrt(2 pi) (one more exp2); for tanh, with F = sigmoid(2u),
    F' = 2 F (1 - F) u' = 2 F(-t) (1 - F(-t)) sqrt(2/pi) (1 + 3 * 0.044715 z^2), no
    transcendental; past T, where the tail is held, that slope is set to 0 (|z F'(z)| < 2e-6 there).
    """
    t, tail = _gelu_tail(z, APPROXIMATE_TANH)
    gelu = tl.maximum(z, 0.0) - t * tail
    gate = tl.where(z >= 0.0, 1.0 - tail, tail)
    if APPROXIMATE_TANH:
        slope = 2.0 * tail * (1.0 - tail) * 0.7978845608028654 * (1.0 + 0.134145 * z * z)
        slope = tl.where(t < 5.0, slope, 0.0)
    else:
        # exp(-z^2 / 2) = 2^(-z^2 / (2 ln 2))
        slope = tl.exp2(z * z * -0.7213475204444817) * 0.3989422804014327
    return gelu, gate + z * slope


@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):  # type: ignore[no-untyped-def]
    # Grouped order: GROUP_M row-blocks of x share each column-block of weight while it is
    # still in L2 (Triton tutorial 03).
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((tile_id % num_pid_in_group) % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _geglu_pointer_kernel(  # type: ignore[no-untyped-def]
    # Pointers to matrices
    x_ptr,
    w_ptr,
    out_ptr,
    h_ptr,  # None, or the saved factors [M, 2N] (contiguous): see _store_h
    # Matrix dimensions
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wn,
    stride_wk,
    stride_om,
    stride_on,
    # Meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    APPROXIMATE_TANH: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    pid_m, pid_n = _tile_coords(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
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
    for k in range(tl.cdiv(K, BLOCK_K)):
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
    if h_ptr is not None:
        _store_h(h_ptr, z1, z2, offs_m, offs_n, M, N, APPROXIMATE_TANH)


@triton.jit
def _store_h(h_ptr, z1, z2, offs_m, offs_n, M, N, APPROXIMATE_TANH: tl.constexpr):  # type: ignore[no-untyped-def]
    """The factors the backward needs, h = [gelu(z2) | z1 gelu'(z2)] ([M, 2N], the layout of z),
    so that dz = [g h1 | g h2] (geglu_backward.py) costs two products per column. The
    no-grad forward passes h_ptr = None and compiles without this."""
    gelu, slope = _gelu_and_grad(z2, APPROXIMATE_TANH)
    h1_ptrs = h_ptr + offs_m[:, None].to(tl.int64) * (2 * N) + offs_n[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(h1_ptrs, gelu.to(h_ptr.dtype.element_ty), mask=mask)
    tl.store(h1_ptrs + N, (z1 * slope).to(h_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _geglu_epilogue_kernel(  # type: ignore[no-untyped-def]
    z_ptr,  # [M, 2N] = [z1 | z2] in x's dtype, x @ weight.T as cuBLAS wrote it
    out_ptr,
    h_ptr,  # None, or the saved factors [M, 2N] (contiguous): see _store_h
    M,
    N,
    stride_zm,
    stride_om,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    APPROXIMATE_TANH: tl.constexpr,
):
    """The epilogue path's one kernel: out = z1 * gelu(z2) over the z that cuBLAS computed, read
    once, and out written once (with the backward's factors, where asked)."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    z1_ptrs = z_ptr + offs_m[:, None].to(tl.int64) * stride_zm + offs_n[None, :]
    z1 = tl.load(z1_ptrs, mask=mask, other=0.0).to(tl.float32)
    z2 = tl.load(z1_ptrs + N, mask=mask, other=0.0).to(tl.float32)
    out = z1 * _gelu(z2, APPROXIMATE_TANH)
    out_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :]
    tl.store(out_ptrs, out.to(out_ptr.dtype.element_ty), mask=mask)
    if h_ptr is not None:
        _store_h(h_ptr, z1, z2, offs_m, offs_n, M, N, APPROXIMATE_TANH)


@triton.jit
def _geglu_tma_kernel(  # type: ignore[no-untyped-def]
    # Tensor descriptors: x [M, K], the halves of weight [N, K] each, out [M, N]
    x_desc,
    w1_desc,
    w2_desc,
    out_desc,
    # None, or descriptors of the saved factors' halves (_store_h): [M, N] each, rows 2N apart
    h1_desc,
    h2_desc,
    # Matrix dimensions
    M,
    N,
    K,
    # Meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
    APPROXIMATE_TANH: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
    EPILOGUE_SUBTILE: tl.constexpr,
    ONE_DOT: tl.constexpr,
    FLATTEN: tl.constexpr,
):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    # Persistent: one or two programs per SM, each walking tiles NUM_PROGRAMS apart. TMA
    # zero-fills loads past the edges of x and weight and clips the store at the edges of out, so
    # no masks are needed.
    # FLATTEN merges the tile loop and the K loop into one software pipeline, so the loads of the
    # next tile are in flight while this tile's epilogue runs (Triton tutorial 09). The store's
    # coordinates come from a second counter one tile behind, recomputed after the K loop, so
    # that the epilogue does not depend on the values the next tile's prologue overwrites.
    tile_id_c = tl.program_id(0) - NUM_PROGRAMS
    for tile_id in tl.range(
        tl.program_id(0), num_pid_m * num_pid_n, NUM_PROGRAMS, flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE
    ):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        offs_m = pid_m * BLOCK_M
        offs_n = pid_n * BLOCK_N
        z1 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        z2 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        if ONE_DOT:
            # weight seen as [2, N, K]: one load brings the matching rows of both halves, and
            # one BLOCK_M x 2*BLOCK_N product computes [z1 | z2] for the tile.
            z = tl.zeros((BLOCK_M, 2 * BLOCK_N), dtype=tl.float32)
            for ki in range(k_tiles):
                offs_k = ki * BLOCK_K
                x = x_desc.load([offs_m, offs_k])
                w = tl.reshape(w1_desc.load([0, offs_n, offs_k]), (2 * BLOCK_N, BLOCK_K))
                z = tl.dot(x, w.T, z)
            z1, z2 = tl.split(tl.permute(tl.reshape(z, (BLOCK_M, 2, BLOCK_N)), (0, 2, 1)))
        else:
            for ki in range(k_tiles):
                offs_k = ki * BLOCK_K
                x = x_desc.load([offs_m, offs_k])
                z1 = tl.dot(x, w1_desc.load([offs_n, offs_k]).T, z1)
                z2 = tl.dot(x, w2_desc.load([offs_n, offs_k]).T, z2)
        tile_id_c += NUM_PROGRAMS
        pid_m, pid_n = _tile_coords(tile_id_c, num_pid_m, num_pid_n, GROUP_M)
        offs_m = pid_m * BLOCK_M
        offs_n = pid_n * BLOCK_N
        out = (z1 * _gelu(z2, APPROXIMATE_TANH)).to(out_desc.dtype)
        if EPILOGUE_SUBTILE:
            # Two half-width stores: half the shared memory for the epilogue, left for stages.
            left, right = tl.split(tl.permute(tl.reshape(out, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1)))
            out_desc.store([offs_m, offs_n], left)
            out_desc.store([offs_m, offs_n + BLOCK_N // 2], right)
        else:
            out_desc.store([offs_m, offs_n], out)
        if h1_desc is not None:
            gelu, slope = _gelu_and_grad(z2, APPROXIMATE_TANH)
            _store_tile(h1_desc, offs_m, offs_n, gelu.to(h1_desc.dtype), BLOCK_M, BLOCK_N, EPILOGUE_SUBTILE)
            _store_tile(h2_desc, offs_m, offs_n, (z1 * slope).to(h2_desc.dtype), BLOCK_M, BLOCK_N, EPILOGUE_SUBTILE)


@triton.jit
def _store_tile(desc, offs_m, offs_n, tile, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SUBTILE: tl.constexpr):  # type: ignore[no-untyped-def]
    if SUBTILE:
        left, right = tl.split(tl.permute(tl.reshape(tile, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1)))
        desc.store([offs_m, offs_n], left)
        desc.store([offs_m, offs_n + BLOCK_N // 2], right)
    else:
        desc.store([offs_m, offs_n], tile)


@triton.jit
def _geglu_split_k_kernel(  # type: ignore[no-untyped-def]
    # Tensor descriptors: x [M, K]; weight seen as [2, N, K]
    x_desc,
    w_desc,
    # Pointers: fp32 partial sums [SPLIT_K, tiles, M, 2 * BLOCK_N], arrival counts [tiles] (zeros),
    # out [M, N]
    partial_ptr,
    counter_ptr,
    out_ptr,
    h_ptr,  # None, or the saved factors [M, 2N] (_store_h)
    # Matrix dimensions
    M,
    N,
    K,
    stride_om,
    # Meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SPLIT_K: tl.constexpr,
    APPROXIMATE_TANH: tl.constexpr,
):
    """Decode with few column tiles: each tile's K is split into SPLIT_K parts, one program each,
    so that SPLIT_K times as many SMs read the weight. One block of rows holds every row
    (BLOCK_M >= M). Each part stores its fp32 [z1 | z2] and counts itself in; the tile's last part
    to arrive adds the SPLIT_K partials and applies the epilogue, so the others end at their store.
    """
    tiles = tl.cdiv(N, BLOCK_N)
    # Neighbouring programs take different tiles: the first wave reads as much of weight as it can.
    tile = tl.program_id(0) % tiles
    split = tl.program_id(0) // tiles
    k_tiles = tl.cdiv(K, BLOCK_K)
    chunk = tl.cdiv(k_tiles, SPLIT_K)
    offs_n = tile * BLOCK_N
    # As in _geglu_tma_kernel's ONE_DOT: one load brings the rows of both halves, one product
    # computes [z1 | z2]. TMA zero-fills past K. A part may have no K steps (k_tiles = 5,
    # SPLIT_K = 4): it still stores its zeros and counts itself in.
    z = tl.zeros((BLOCK_M, 2 * BLOCK_N), dtype=tl.float32)
    for ki in range(split * chunk, tl.minimum(split * chunk + chunk, k_tiles)):
        offs_k = ki * BLOCK_K
        x = x_desc.load([0, offs_k])
        w = tl.reshape(w_desc.load([0, offs_n, offs_k]), (2 * BLOCK_N, BLOCK_K))
        z = tl.dot(x, w.T, z)

    # Rows past M are neither stored nor read back: the workspace has M rows per part.
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, 2 * BLOCK_N)
    in_rows = rows[:, None] < M
    offs = rows[:, None] * (2 * BLOCK_N) + cols[None, :]
    part_size = M * 2 * BLOCK_N
    tl.store(partial_ptr + (split * tiles + tile).to(tl.int64) * part_size + offs, z, mask=in_rows)
    # Every thread's stores are issued before one thread releases them with the count; the last
    # part's acquire then makes all SPLIT_K partials visible to it.
    tl.debug_barrier()
    count = tl.atomic_add(counter_ptr + tile, 1, sem="acq_rel", scope="gpu")
    if count == SPLIT_K - 1:
        # The partials are added in the order of the parts, whichever arrived last, so that a
        # launch gives the same bits every time. ".cg" reads them from L2: an SM's L1 is not
        # kept coherent with the other SMs' stores.
        z = tl.zeros((BLOCK_M, 2 * BLOCK_N), dtype=tl.float32)
        for s in range(SPLIT_K):
            part_ptr = partial_ptr + (s * tiles + tile).to(tl.int64) * part_size
            z += tl.load(part_ptr + offs, mask=in_rows, other=0.0, cache_modifier=".cg")
        z1, z2 = tl.split(tl.permute(tl.reshape(z, (BLOCK_M, 2, BLOCK_N)), (0, 2, 1)))
        out = z1 * _gelu(z2, APPROXIMATE_TANH)
        out_cols = offs_n + tl.arange(0, BLOCK_N)
        out_ptrs = out_ptr + rows[:, None] * stride_om + out_cols[None, :]
        tl.store(out_ptrs, out.to(out_ptr.dtype.element_ty), mask=in_rows & (out_cols[None, :] < N))
        if h_ptr is not None:
            _store_h(h_ptr, z1, z2, rows, out_cols, M, N, APPROXIMATE_TANH)
        # Back to zero: the next launch on this stream counts on the same buffer
        # (_arrival_counters), which nothing else zeroes.
        tl.store(counter_ptr + tile, 0)


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


def _compiling_only() -> bool:
    """Whether Triton compiles for a GPU that is not here (`perfbot explain` on a machine without
    one, perfbot/compiling/offline.py): tensors stay on the CPU, nothing is launched, and Triton's
    driver names the GPU. Asked without creating a driver, which would need CUDA."""
    return bool(getattr(getattr(triton.runtime.driver, "_active", None), "compile_only", False))


def _check_inputs(x: torch.Tensor, weight: torch.Tensor, approximate: str) -> None:
    if not isinstance(x, torch.Tensor) or not isinstance(weight, torch.Tensor):
        raise ValueError(f"geglu: x and weight must be tensors, got {type(x).__name__} and {type(weight).__name__}")
    if approximate not in APPROXIMATIONS:
        raise ValueError(f"geglu: approximate must be one of {APPROXIMATIONS}, got {approximate!r}")
    if x.ndim < 1 or weight.ndim != 2:
        raise ValueError(
            f"geglu: expected x [..., K] and weight [2N, K], got x {tuple(x.shape)} and weight {tuple(weight.shape)}"
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
    if x.device.type != "cuda" and not _interpreting() and not _compiling_only():
        raise ValueError(f"geglu: tensors must be on a CUDA device (or run with TRITON_INTERPRET=1), got {x.device}")


def _tma_capable(x2d: torch.Tensor, weight: torch.Tensor, N: int) -> bool:
    """TMA needs 16-bit inputs here (fp32 takes full-precision FMA dots either way), rows of
    contiguous elements whose strides are multiples of 16 bytes (a row may be padded: a view of a
    wider buffer), and 16-byte-aligned bases for both halves and for out."""
    if x2d.dtype not in (torch.float16, torch.bfloat16):
        return False
    size = x2d.element_size()
    K = x2d.shape[1]
    # Rows that do not overlap (a broadcast row has stride 0), padded or not.
    rows_ok = all(t.stride(1) == 1 and t.stride(0) >= K and (t.stride(0) * size) % 16 == 0 for t in (x2d, weight))
    return rows_ok and (N * size) % 16 == 0 and x2d.data_ptr() % 16 == 0 and weight.data_ptr() % 16 == 0


# From this many rows x's reads weigh enough in the launch for aligned rows to pay for the copy
# (measured gains at 5722 to 14735 rows; with fewer rows the weight's reads dominate).
ALIGN_ROWS_FROM = 1024


def _aligned_rows(x2d: torch.Tensor) -> torch.Tensor:
    """x with rows 32-byte aligned: a copy into a buffer whose rows are a multiple of 16 elements
    long, seen at its true width. TMA reads rows that are only 16-byte aligned slowly, and the
    copy costs less than it saves (experiments/2026-11-30-h200-unseen-shapes/probe_alignment.txt
    and run7/ there); a copy of weight per call would cost more than it saves."""
    M, K = x2d.shape
    buffer = torch.empty(M, -(-K // 16) * 16, dtype=x2d.dtype, device=x2d.device)
    buffer[:, :K].copy_(x2d)
    return buffer[:, :K]


def _device_info(device: torch.device) -> tuple[str, int, bool]:
    """(GPU name, SM count, has TMA); the interpreter counts as an unknown GPU without TMA, and a
    GPU compiled for without one (_compiling_only) is the one Triton's driver names."""
    if device.type != "cuda" and _compiling_only():
        driver = triton.runtime.driver.active
        props = driver.utils.get_device_properties(0)
        return props["name"], props["multiprocessor_count"], driver.get_current_target().arch >= 90
    if device.type != "cuda":
        return "interpreter", 4, False
    props = torch.cuda.get_device_properties(device)
    return props.name, props.multi_processor_count, props.major >= 9


# The tile and pipeline sizes every launch config holds.
_SIZES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")


@dataclass(frozen=True)
class LaunchConfig:
    """A launch config: tile and pipeline sizes, and options that a config may leave out, off by
    default. `named`: the options the config gave, which are the ones its record holds."""

    BLOCK_M: int
    BLOCK_N: int
    BLOCK_K: int
    GROUP_M: int
    num_warps: int
    num_stages: int
    warp_specialize: bool = False
    epilogue_subtile: bool = False
    one_dot: bool = False
    flatten: bool = False
    programs_per_sm: int = 1
    maxnreg: int | None = None
    num_ctas: int = 1
    # Above 1: _geglu_split_k_kernel, one program per part of K and tile, always one dot.
    split_k: int = 1
    named: frozenset[str] = frozenset()

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> LaunchConfig:
        """A config as configs.py and tuned_configs.yaml write it: every size, and any options."""
        _refuse_unknown(config)
        missing = [name for name in _SIZES if name not in config]
        if missing:
            raise ValueError(f"geglu: a launch config needs {missing}, got {sorted(config)}")
        return cls(**config, named=frozenset(config) & frozenset(_OPTIONS))

    def over(self, config: Mapping[str, Any]) -> LaunchConfig:
        """`config` over this one's sizes. An option `config` leaves out is off, never this one's
        value: a tuned `programs_per_sm` or `maxnreg` must not leak into a candidate that says
        nothing of them."""
        _refuse_unknown(config)
        sizes = {name: getattr(self, name) for name in _SIZES}
        return LaunchConfig(**{**sizes, **config}, named=frozenset(_OPTIONS))

    def record(self) -> dict[str, Any]:
        """Its sizes and the options it names."""
        return {name: getattr(self, name) for name in (*_SIZES, *_OPTIONS) if name in _SIZES or name in self.named}


# The options, in the order a record lists them.
_OPTIONS = tuple(f.name for f in fields(LaunchConfig) if f.name not in (*_SIZES, "named"))


def _refuse_unknown(config: Mapping[str, Any]) -> None:
    """An option the kernel does not know is refused, not ignored (a probe written for a removed
    option would otherwise time the plain kernel)."""
    unknown = sorted(set(config) - {*_SIZES, *_OPTIONS})
    if unknown:
        raise ValueError(f"geglu: unknown launch option(s) {unknown}; a config may hold {sorted({*_SIZES, *_OPTIONS})}")


@dataclass(frozen=True)
class LaunchPlan:
    """The path and launch config `geglu` uses for some inputs, and where the config came from."""

    path: str  # "tma", "pointer" or "epilogue" (cuBLAS's matmul, then _geglu_epilogue_kernel)
    gpu: str
    shape_class: str  # configs.shape_class
    num_sms: int
    config: LaunchConfig
    source: str  # "tuned", "by waves", "fixed", "untuned", "autotuned", "given", "stands in", ...
    one_group: bool = False  # GROUP_M holds every row block (configs.one_group), not the tuned one
    align_x: bool = False  # geglu copies x into 32-byte-aligned rows first (_aligned_rows)
    reason: str | None = None  # why the epilogue path stands in for the fused launch (source "stands in")

    def record(self) -> dict[str, Any]:
        """The plan as results record it (the subject's `config`): one_group, align_x and reason
        only where they hold."""
        flags = {name: True for name in ("one_group", "align_x") if getattr(self, name)}
        why = {"reason": self.reason} if self.reason is not None else {}
        where = {"path": self.path, "gpu": self.gpu, "shape_class": self.shape_class, "num_sms": self.num_sms}
        return {**where, **self.config.record(), "source": self.source, **flags, **why}


def launch_plan(
    x: torch.Tensor, weight: torch.Tensor, path: str | None = None, *, stand_in: bool = True
) -> dict[str, Any]:
    """The plan `geglu` uses for these inputs, as results record it (`plan_for`)."""
    return plan_for(x, weight, path, stand_in=stand_in).record()


def plan_for(x: torch.Tensor, weight: torch.Tensor, path: str | None = None, *, stand_in: bool = True) -> LaunchPlan:
    """The path and launch config `geglu` uses for these inputs.

    `path` forces "tma", "pointer" or "epilogue"; by default TMA is used wherever it can be,
    except where its fused launch is predicted to lose to the epilogue path (cuBLAS's matmul into
    z, then one elementwise kernel): misaligned weight rows, few column tiles, a long K whose
    tiles fill the waves poorly (configs.unfused_reason). `stand_in=False` keeps the fused launch
    there: a caller that gives a launch config means the fused kernel's.
    """
    _check_inputs(x, weight, "none")
    if path is not None and path not in PATHS:
        raise ValueError(f"geglu: path must be one of {PATHS}, got {path!r}")
    K, N = x.shape[-1], weight.shape[0] // 2
    M = math.prod(x.shape[:-1])
    x2d = x.reshape(M, K) if M and K else x
    gpu, num_sms, has_tma = _device_info(x.device)
    if path == "epilogue":
        return _epilogue_plan(gpu, configs.shape_class(M, K, N, num_sms), num_sms, "fixed")
    can_tma = (has_tma or _interpreting()) and M > 0 and K > 0 and _tma_capable(x2d, weight, N)
    if path == "tma" and not can_tma:
        raise ValueError(
            f"geglu: the TMA path needs a Hopper GPU, 16-bit contiguous inputs and K, N multiples of 8; "
            f"got x {tuple(x.shape)} {x.dtype} and weight {tuple(weight.shape)} on {x.device}"
        )
    shape_class = configs.shape_class(M, K, N, num_sms)
    preferred = configs.preferred_path(gpu, shape_class)
    if path is not None:
        chosen = path
    elif preferred is not None and (preferred != "tma" or can_tma):
        chosen = preferred
    else:
        chosen = "tma" if can_tma and has_tma else "pointer"
    looked_up = configs.lookup(gpu, chosen, shape_class, x.dtype)
    source = looked_up["source"]
    config = LaunchConfig.of({name: value for name, value in looked_up.items() if name != "source"})
    plan = _fit_rows(LaunchPlan(chosen, gpu, shape_class, num_sms, config, source), M)
    if chosen == "tma" and shape_class in configs.ALL_ROWS_CLASSES and source != "fixed":
        plan = _decode_plan(plan, K, N, num_sms)
    elif chosen == "tma" and shape_class == "large" and source != "fixed" and _aligned(x2d, weight):
        plan = _prefill_plan(plan, M, N, num_sms)
    if chosen == "tma" and M >= ALIGN_ROWS_FROM and not _aligned(x2d):
        plan = replace(plan, align_x=True)
    if path is None and stand_in and chosen == "tma":
        return _unfused_where_fused_loses(plan, M, K, N, weight)
    return plan


def _unfused_where_fused_loses(plan: LaunchPlan, M: int, K: int, N: int, weight: torch.Tensor) -> LaunchPlan:
    """The epilogue path where the fused launch of `plan` is predicted to lose to it
    (configs.unfused_reason), the plan itself elsewhere. The record names the reason."""
    # Where autotuning picks the tiles (a GPU with no tuned configs), the large class's default
    # 128 x 128 decides instead: the pick, made at the first call, must not move the shape to
    # another path at the next, between the call perfbot checks and the calls it times.
    autotuned = plan.source in ("untuned", "autotuned")
    block_m, block_n = (128, 128) if autotuned else (plan.config.BLOCK_M, plan.config.BLOCK_N)
    reason = configs.unfused_reason(M, K, N, plan.shape_class, block_m, block_n, plan.num_sms, _aligned(weight))
    if reason is None:
        return plan
    return _epilogue_plan(plan.gpu, plan.shape_class, plan.num_sms, "stands in", reason)


def _epilogue_plan(gpu: str, shape_class: str, num_sms: int, source: str, reason: str | None = None) -> LaunchPlan:
    """The epilogue path's plan: its one fixed config (configs.EPILOGUE), asked for or standing in."""
    return LaunchPlan("epilogue", gpu, shape_class, num_sms, LaunchConfig.of(configs.EPILOGUE), source, reason=reason)


def _decode_plan(plan: LaunchPlan, K: int, N: int, num_sms: int) -> LaunchPlan:
    """Decode is chosen by the shape's waves on this GPU, not tuned per class (configs.py); where
    its tiles are too few for the SMs, K is split across programs (_geglu_split_k_kernel)."""
    config = plan.config.over(configs.decode_by_waves(plan.config.BLOCK_M, N, num_sms))
    tiles, k_tiles = triton.cdiv(N, config.BLOCK_N), triton.cdiv(K, config.BLOCK_K)
    split_k = configs.decode_split_k(tiles, k_tiles, config.num_stages, num_sms)
    if split_k > 1:
        # One program per part and tile, not persistent, so no pipeline across tiles either.
        config = replace(config, split_k=split_k, programs_per_sm=1, flatten=False)
    return replace(plan, config=config, source="by waves")


def _prefill_plan(plan: LaunchPlan, M: int, N: int, num_sms: int) -> LaunchPlan:
    """A few hundred rows: 64-row tiles where they fill the rows and waves enough better; up to
    16 row blocks, all in one group, so that weight is read from memory once."""
    rows = configs.prefill_by_waves(M, N, num_sms)
    if rows is not None:
        plan = replace(plan, config=plan.config.over(rows), source="by waves")
    group_m = configs.one_group(M, plan.config.BLOCK_M, plan.config.GROUP_M)
    if group_m == plan.config.GROUP_M:
        return plan
    return replace(plan, config=replace(plan.config, GROUP_M=group_m), one_group=True)  # not the tuned GROUP_M


def _aligned(*tensors: torch.Tensor) -> bool:
    """Rows that start 32-byte aligned, which TMA reads at full speed."""
    return all((t.stride(0) * t.element_size()) % 32 == 0 and t.data_ptr() % 32 == 0 for t in tensors)


def _with_config(plan: LaunchPlan, config: Mapping[str, Any], M: int, source: str) -> LaunchPlan:
    """The plan with `config` over its launch config (LaunchConfig.over): the config's GROUP_M
    rules, so the plan no longer says one_group."""
    return _fit_rows(replace(plan, config=plan.config.over(config), source=source, one_group=False), M)


def _fit_rows(plan: LaunchPlan, M: int) -> LaunchPlan:
    if plan.shape_class not in configs.ALL_ROWS_CLASSES:
        return plan
    # One block of rows holds every row, so weight is read from memory once.
    return replace(plan, config=replace(plan.config, BLOCK_M=max(16, triton.next_power_of_2(M))))


def geglu(
    x: torch.Tensor,
    weight: torch.Tensor,
    *,
    approximate: str = "none",
    out: torch.Tensor | None = None,
    path: str | None = None,
    config: dict | None = None,
    recompute: bool | None = None,
    stand_in: bool = True,
) -> torch.Tensor:
    """out = z1 * gelu(z2, approximate) with [z1 | z2] = x @ weight.T.

    `out`, if given, receives the result and must be a contiguous [..., N] tensor of x's dtype.
    `path` forces a path ("tma", "pointer" or "epilogue"); `config` overrides the tuned launch
    configuration (used by the tuner). Either keeps the fused launch where the plan would send
    the shape to the epilogue path (`plan_for`), as `stand_in=False` does.

    Differentiable: where grad is enabled and x or weight requires it, the call goes through
    `GeGLUFunction`, whose backward is geglu_backward.py's. `recompute` says whether the backward
    recomputes the factors h it needs (one more matmul) instead of the forward saving them
    (M x 2N elements held until the backward); None takes the module's RECOMPUTE. Otherwise the
    call launches what it always did, and `recompute` is ignored.
    """
    _check_inputs(x, weight, approximate)
    if torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad):
        if out is not None:
            raise ValueError("geglu: out= is for calls without autograd; x or weight requires grad here")
        asked = _Asked(approximate, path, config, stand_in)
        return _differentiable(x, weight, asked, RECOMPUTE if recompute is None else recompute)
    return _forward(x, weight, _Asked(approximate, path, config, stand_in), out)


@dataclass(frozen=True)
class _Asked:
    """What a call of geglu asked for, beside its tensors: what the forward launches from, and
    what a recomputing backward launches again."""

    approximate: str
    path: str | None
    config: dict | None
    stand_in: bool


def _forward(
    x: torch.Tensor,
    weight: torch.Tensor,
    asked: _Asked,
    out: torch.Tensor | None,
    h: torch.Tensor | None = None,
) -> torch.Tensor:
    """geglu's launches, on checked inputs; `h` [M, 2N] also receives the backward's factors."""
    approximate, path, config = asked.approximate, asked.path, asked.config
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
    plan = plan_for(x2d, weight, path, stand_in=asked.stand_in and config is None)
    if plan.align_x:
        x2d = _aligned_rows(x2d)
    # TMA stores need a 16-byte-aligned base: an out that has none is written through a fresh one.
    target = torch.empty_like(out2d) if plan.path == "tma" and out2d.data_ptr() % 16 else out2d
    tanh = approximate == "tanh"
    if config is not None:
        plan = _with_config(plan, config, M, "given")
    elif plan.source == "untuned" and x.device.type == "cuda":
        key = (plan.gpu, plan.path, plan.shape_class, x.dtype)
        best = configs.autotune(
            key, lambda c: _launch(x2d, weight, target, _with_config(plan, c, M, "autotuning"), tanh)
        )
        plan = _with_config(plan, best, M, "autotuned")
    _launch(x2d, weight, target, plan, tanh, h)
    if target is not out2d:
        out2d.copy_(target)
    return out


# Whether a differentiable geglu recomputes h in the backward (True) or saves it in the forward
# (False), where its caller does not say: the benchmark flips it (experiments/2026-12-07-geglu-backward).
RECOMPUTE = False


class GeGLUFunction(torch.autograd.Function):
    """geglu with its gradients: the forward launches geglu's kernel with h (_store_h) saved, or
    without it when recomputing; the backward (geglu_backward.py) forms dz = [g h1 | g h2] and the
    two matmuls dx = dz @ weight and dW = dz.T @ x."""

    @staticmethod
    def forward(
        ctx: Any,
        x: torch.Tensor,
        weight: torch.Tensor,
        asked: _Asked,
        recompute: bool,
    ) -> torch.Tensor:
        h = None if recompute else _empty_h(x, weight)
        out = _forward(x, weight, asked, None, h)
        ctx.save_for_backward(x, weight, h)
        ctx.asked = asked
        return out

    @staticmethod
    @once_differentiable  # the kernels' gradients have no graph: create_graph=True is refused
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight, h = ctx.saved_tensors
        need_dx, need_dw = ctx.needs_input_grad[:2]
        K, N = x.shape[-1], weight.shape[0] // 2
        M = math.prod(x.shape[:-1])
        if M == 0 or N == 0 or K == 0:
            dx = torch.zeros_like(x) if need_dx else None
            return dx, torch.zeros_like(weight) if need_dw else None, None, None
        if h is None:
            # Recompute: the forward's kernel again, its out thrown away, h kept.
            h = _empty_h(x, weight)
            _forward(x, weight, ctx.asked, None, h)
        x2d = x.reshape(M, K)
        plan = geglu_backward.plan_for(M, K, x.dtype, _device_info(x.device)[1])
        dx, dw = geglu_backward.backward(
            grad_out.reshape(M, N), h, x2d, weight, need_dx=need_dx, need_dw=need_dw, plan=plan
        )
        return dx.view(x.shape) if dx is not None else None, dw, None, None


def _empty_h(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return torch.empty(math.prod(x.shape[:-1]), weight.shape[0], dtype=x.dtype, device=x.device)


@torch.compiler.disable
def _differentiable(x: torch.Tensor, weight: torch.Tensor, asked: _Asked, recompute: bool) -> torch.Tensor:
    # torch.compile runs this call as it is (a graph break), as it does the no-grad path's
    # launches: dynamo does not trace the plan's Python.
    out: torch.Tensor = GeGLUFunction.apply(x, weight, asked, recompute)
    return out


def _launch(
    x2d: torch.Tensor,
    weight: torch.Tensor,
    out2d: torch.Tensor,
    plan: LaunchPlan,
    tanh: bool,
    h: torch.Tensor | None = None,
) -> Any:
    """Launch the plan's kernel; returns Triton's compiled kernel (its registers and shared
    memory are what `python -m kernels.tune` reports). `h`, a contiguous [M, 2N] tensor, also
    receives the factors the backward needs (_store_h); without it the kernels compile as they
    did before the backward existed."""
    launch = {"tma": _launch_tma, "pointer": _launch_pointer, "epilogue": _launch_epilogue}[plan.path]
    return launch(x2d, weight, out2d, plan, tanh, h)


def _launch_epilogue(
    x2d: torch.Tensor,
    weight: torch.Tensor,
    out2d: torch.Tensor,
    plan: LaunchPlan,
    tanh: bool,
    h: torch.Tensor | None = None,
) -> Any:
    """z = x @ weight.T by cuBLAS, then the epilogue kernel; BLOCK_K, GROUP_M and num_stages of
    the plan's config are not used, and an option (split_k, ...) is refused. z is in x's dtype,
    as eager's and torch.compile's matmul writes it: the path stands in for the fused launch
    where that would be slower than those two, so it moves no more bytes than they do, and it
    has their precision, not the fused kernels' fp32 accumulators (docs/kernel.md, "The epilogue
    path"). fp32 inputs go to cuBLAS as PyTorch is set (no TF32 unless the caller allowed it)."""
    config = plan.config
    if replace(config, named=frozenset()) != LaunchConfig.of({name: getattr(config, name) for name in _SIZES}):
        raise ValueError(f"geglu: the epilogue path takes no launch options, got {config.record()}")
    M, N = out2d.shape
    z = _z(x2d, weight)
    grid = (triton.cdiv(M, config.BLOCK_M), triton.cdiv(N, config.BLOCK_N))
    return _geglu_epilogue_kernel[grid](
        z,
        out2d,
        h,
        M,
        N,
        z.stride(0),
        out2d.stride(0),
        BLOCK_M=config.BLOCK_M,
        BLOCK_N=config.BLOCK_N,
        APPROXIMATE_TANH=tanh,
        num_warps=config.num_warps,
    )


def _launch_pointer(
    x2d: torch.Tensor,
    weight: torch.Tensor,
    out2d: torch.Tensor,
    plan: LaunchPlan,
    tanh: bool,
    h: torch.Tensor | None = None,
) -> Any:
    config = plan.config
    M, K = x2d.shape
    N = out2d.shape[1]
    grid = (triton.cdiv(M, config.BLOCK_M) * triton.cdiv(N, config.BLOCK_N),)
    return _geglu_pointer_kernel[grid](
        x2d,
        weight,
        out2d,
        h,
        M,
        N,
        K,
        x2d.stride(0),
        x2d.stride(1),
        weight.stride(0),
        weight.stride(1),
        out2d.stride(0),
        out2d.stride(1),
        BLOCK_M=config.BLOCK_M,
        BLOCK_N=config.BLOCK_N,
        BLOCK_K=config.BLOCK_K,
        GROUP_M=config.GROUP_M,
        APPROXIMATE_TANH=tanh,
        # Full fp32 products for fp32 inputs, as torch does by default (no TF32).
        INPUT_PRECISION="ieee",
        num_warps=config.num_warps,
        num_stages=config.num_stages,
    )


def _launch_tma(
    x2d: torch.Tensor,
    weight: torch.Tensor,
    out2d: torch.Tensor,
    plan: LaunchPlan,
    tanh: bool,
    h: torch.Tensor | None = None,
) -> Any:
    options = plan.config  # a tuned config may leave options out: they are off
    if options.split_k != 1:
        return _launch_split_k(x2d, weight, out2d, options, tanh, h)
    M, K = x2d.shape
    N = out2d.shape[1]
    bm, bn, bk = options.BLOCK_M, options.BLOCK_N, options.BLOCK_K
    x_desc = TensorDescriptor(x2d, [M, K], [x2d.stride(0), 1], [bm, bk])
    row = weight.stride(0)  # K, or more where the caller padded the rows
    if options.one_dot:
        w1_desc = w2_desc = _both_halves(weight, N, bn, bk)
    else:
        w1_desc = TensorDescriptor(weight[:N], [N, K], [row, 1], [bn, bk])
        w2_desc = TensorDescriptor(weight[N:], [N, K], [row, 1], [bn, bk])
    subtile = options.epilogue_subtile
    out_desc = TensorDescriptor(out2d, [M, N], [N, 1], [bm, bn // 2 if subtile else bn])
    # One descriptor per half of h, so that a tile at the edge of N is clipped there.
    h1_desc = h2_desc = None
    if h is not None:
        h1_desc, h2_desc = (
            TensorDescriptor(half, [M, N], [2 * N, 1], [bm, bn // 2 if subtile else bn])
            for half in (h[:, :N], h[:, N:])
        )
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    # Two programs per SM (configs small enough in registers and shared memory): while one runs
    # its epilogue, the other's matmul keeps the tensor cores busy. A program on a cluster of
    # num_ctas CTAs takes that many SMs.
    programs = min(options.programs_per_sm * plan.num_sms // options.num_ctas, tiles)
    limits = {"maxnreg": options.maxnreg} if options.maxnreg else {}
    if options.num_ctas != 1:
        limits["num_ctas"] = options.num_ctas
    return _geglu_tma_kernel[(programs,)](
        x_desc,
        w1_desc,
        w2_desc,
        out_desc,
        h1_desc,
        h2_desc,
        M,
        N,
        K,
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_K=bk,
        GROUP_M=options.GROUP_M,
        NUM_PROGRAMS=programs,
        APPROXIMATE_TANH=tanh,
        WARP_SPECIALIZE=options.warp_specialize,
        EPILOGUE_SUBTILE=subtile,
        ONE_DOT=options.one_dot,
        FLATTEN=options.flatten,
        num_warps=options.num_warps,
        num_stages=options.num_stages,
        **limits,
    )


# Arrival counts of the split-K kernel: one zeroed buffer per device and stream. Invariant: every
# count in it is zero between launches, as each tile's last part leaves it.
_COUNTERS: dict[tuple[str, int | None], torch.Tensor] = {}


def _z(x2d: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """x @ weight.T in x's dtype, by cuBLAS (the CPU's mm under the interpreter). Compiling
    without a GPU (_compiling_only) computes nothing: z is only allocated."""
    if _compiling_only():
        return torch.empty(x2d.shape[0], weight.shape[0], dtype=x2d.dtype, device=x2d.device)
    return torch.mm(x2d, weight.t())


def _capturing(device: torch.device) -> bool:
    return device.type == "cuda" and torch.cuda.is_current_stream_capturing()


def _counters_key(device: torch.device) -> tuple[str, int | None]:
    """The device and its current stream's handle (None off CUDA: the interpreter runs one launch
    at a time)."""
    return str(device), torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else None


def _arrival_counters(device: torch.device, tiles: int) -> torch.Tensor:
    """`tiles` zeroed int32 arrival counts for a split-K launch on the device's current stream.
    The kernel's last part of each tile sets its count back to zero, so one buffer serves every
    later launch on the same stream, which runs after it, and a call launches no fill kernel to
    zero them. Launches on two streams may overlap, so each stream has its own. Under CUDA graph
    capture the counts are zeroed in the graph: a buffer of the graph's private memory must not
    be cached, nor a cached one used by replays that eager launches do not wait for."""
    if _capturing(device):
        return torch.zeros(tiles, dtype=torch.int32, device=device)
    key = _counters_key(device)
    held = _COUNTERS.get(key)
    if held is None or held.numel() < tiles:
        size = max(tiles, 2 * held.numel()) if held is not None else tiles
        held = _COUNTERS[key] = torch.zeros(size, dtype=torch.int32, device=device)
    return held[:tiles]


def _both_halves(weight: torch.Tensor, N: int, bn: int, bk: int) -> TensorDescriptor:
    """weight seen as [2, N, K]: one load brings the matching rows of both halves."""
    row = weight.stride(0)  # K, or more where the caller padded the rows
    return TensorDescriptor(weight, [2, N, weight.shape[1]], [N * row, row, 1], [2, bn, bk])


def _launch_split_k(
    x2d: torch.Tensor,
    weight: torch.Tensor,
    out2d: torch.Tensor,
    options: LaunchConfig,
    tanh: bool,
    h: torch.Tensor | None = None,
) -> Any:
    M, K = x2d.shape
    N = out2d.shape[1]
    split_k, bm, bn, bk = options.split_k, options.BLOCK_M, options.BLOCK_N, options.BLOCK_K
    if split_k < 1:
        raise ValueError(f"geglu: split_k must be at least 1, got {split_k}")
    if bm < M:
        raise ValueError(
            f"geglu: split_k = {split_k} needs one block of rows holding all {M} rows, got BLOCK_M = {bm}; "
            f"set BLOCK_M to at least {triton.next_power_of_2(M)} or split_k to 1"
        )
    if options.num_ctas != 1:
        raise ValueError(f"geglu: split_k = {split_k} runs one CTA per program, got num_ctas = {options.num_ctas}")
    # What the split kernel does not do is refused, not ignored: one program per part and tile.
    ignored = [name for name in ("warp_specialize", "epilogue_subtile", "flatten") if getattr(options, name)]
    if options.programs_per_sm != 1:
        ignored.append(f"programs_per_sm = {options.programs_per_sm}")
    if ignored:
        raise ValueError(f"geglu: split_k = {split_k} runs one program per part and tile, without {', '.join(ignored)}")
    tiles = triton.cdiv(N, bn)
    x_desc = TensorDescriptor(x2d, [M, K], [x2d.stride(0), 1], [bm, bk])
    w_desc = _both_halves(weight, N, bn, bk)
    counters = _arrival_counters(x2d.device, tiles)
    partials = torch.empty(split_k * tiles * M * 2 * bn, dtype=torch.float32, device=x2d.device)
    limits = {"maxnreg": options.maxnreg} if options.maxnreg else {}
    try:
        return _geglu_split_k_kernel[(tiles * split_k,)](
            x_desc,
            w_desc,
            partials,
            counters,
            out2d,
            h,
            M,
            N,
            K,
            out2d.stride(0),
            BLOCK_M=bm,
            BLOCK_N=bn,
            BLOCK_K=bk,
            SPLIT_K=split_k,
            APPROXIMATE_TANH=tanh,
            num_warps=options.num_warps,
            num_stages=options.num_stages,
            **limits,
        )
    except BaseException:
        # A launch stopped partway (an error, Ctrl-C in the interpreter) may leave counts that
        # would finish the next launch's tiles early: that buffer is not used again.
        if not _capturing(x2d.device):
            _COUNTERS.pop(_counters_key(x2d.device), None)
        raise
