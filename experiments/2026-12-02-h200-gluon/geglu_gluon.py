"""The fused GeGLU forward in Gluon (Triton 3.9), for the H200's large shapes, issue 35:

    [z1 | z2] = x @ weight.T,  out = z1 * gelu(z2)     x: [M, K], weight: [2N, K], out: [M, N]

What Triton 3.6 cannot express and cuBLAS uses on these shapes: CTA clusters with TMA multicast.
With CLUSTER = 2, a program is a cluster of two CTAs on two SMs that share one column block of the
weight: each CTA multiplies its own 128 rows of x, and the weight tiles (both halves) are loaded
once from L2 and multicast into both CTAs' shared memory, halving the weight's L2 traffic.
CLUSTER = 1 is the same kernel without the cluster, to tell what multicast buys.

The loop is one software pipeline over every (tile, K step) of a persistent program, STAGES
deep, as kernels/geglu.py's flattened loop: the loads of the next tile are in flight while this
tile's epilogue runs. Two warpgroups (8 warps) share the 128 rows, each product 128 x BLOCK_N for
each half, accumulated in fp32 registers; the epilogue applies kernels/geglu.py's GELU gate in
registers and stores through TMA.

Synchronization with CLUSTER = 2, from how Triton 3.9 lowers a multicast load (the PTX of
`probe_multicast.py`): only the cluster's first CTA issues a weight tile, into both CTAs' shared
memory and onto each CTA's own `ready` barrier. So before it refills a stage, the first CTA must
know that both CTAs are done reading it: each CTA arrives on the pair's `empty` barrier, which
lives in the first CTA and which only the first CTA waits on. Each CTA's x loads go into its own
memory, issued after its own products that read the stage have retired.

Not part of the package: the 3.6 kernel stays the default (docs/kernel.md says what this reached).
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

WARPS = 8
ROWS_PER_CTA = 128


@gluon.jit
def _gelu(z, APPROXIMATE_TANH: gl.constexpr):
    # kernels/geglu.py's gate, z F(z) = max(z, 0) - |z| F(-|z|), the tail 2^p fitted per GELU.
    if APPROXIMATE_TANH:
        t = gl.minimum(gl.abs(z), 5.0, propagate_nan=tl.PropagateNan.ALL)
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
        t = gl.minimum(gl.abs(z), 5.3, propagate_nan=tl.PropagateNan.ALL)
        p = -1.7218363746463674e-06 * t + 5.974687801065765e-05
        p = p * t - 0.0009189766990633564
        p = p * t + 0.008474007720349912
        p = p * t - 0.053914114257328095
        p = p * t - 0.4584866112156438
        p = p * t - 1.1512515872978706
        p = p * t - 0.9999950450774119
    return gl.maximum(z, 0.0) - t * gl.exp2(p)


@gluon.jit
def _tile(tile_id, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    # Grouped order: GROUP_M row blocks share each weight column block while it is in L2.
    in_group = GROUP_M * num_pid_n
    first_m = (tile_id // in_group) * GROUP_M
    group_m = gl.minimum(num_pid_m - first_m, GROUP_M)
    return first_m + (tile_id % in_group) % group_m, (tile_id % in_group) // group_m


@gluon.jit
def _issue_loads(
    step,
    pid,
    k_tiles,
    num_pid_m,
    num_pid_n,
    x_desc,
    w1_desc,
    w2_desc,
    x_bufs,
    w1_bufs,
    w2_bufs,
    ready,
    empty,
    NUM_PROGRAMS: gl.constexpr,
    GROUP_M: gl.constexpr,
    STAGES: gl.constexpr,
    CLUSTER: gl.constexpr,
):
    s = step % STAGES
    pid_m, pid_n = _tile(pid + (step // k_tiles) * NUM_PROGRAMS, num_pid_m, num_pid_n, GROUP_M)
    off_k = (step % k_tiles) * x_desc.block_type.shape[1]
    if CLUSTER > 1:
        # Both CTAs have read this stage's previous tiles (the first pass through the stages
        # waits for nothing: parity 1 of a fresh barrier counts as completed).
        mbarrier.wait(empty.index(s), ((step // STAGES) & 1) ^ 1)
    mbarrier.expect(ready.index(s), x_desc.nbytes_per_cta + w1_desc.nbytes_per_cta + w2_desc.nbytes_per_cta)
    tma.async_load(x_desc, [pid_m * x_desc.block_type.shape[0], off_k], ready.index(s), x_bufs.index(s))
    off_n = pid_n * w1_desc.block_type.shape[0]
    tma.async_load(w1_desc, [off_n, off_k], ready.index(s), w1_bufs.index(s), multicast=CLUSTER > 1)
    tma.async_load(w2_desc, [off_n, off_k], ready.index(s), w2_bufs.index(s), multicast=CLUSTER > 1)


@gluon.jit
def _geglu_gluon_kernel(
    # Tensor descriptors: x [M, K] (a cluster's rows), the halves of weight [N, K] each, out [M, N]
    x_desc,
    w1_desc,
    w2_desc,
    out_desc,
    # Matrix dimensions
    M,
    N,
    K,
    # Meta-parameters
    NUM_PROGRAMS: gl.constexpr,
    GROUP_M: gl.constexpr,
    STAGES: gl.constexpr,
    CLUSTER: gl.constexpr,
    APPROXIMATE_TANH: gl.constexpr,
    acc_layout: gl.constexpr,
):
    BLOCK_M: gl.constexpr = x_desc.block_type.shape[0]  # the cluster's rows
    BLOCK_K: gl.constexpr = x_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = w1_desc.block_type.shape[0]
    dtype: gl.constexpr = x_desc.dtype

    x_bufs = gl.allocate_shared_memory(dtype, [STAGES] + x_desc.block_type.shape, x_desc.layout)
    w1_bufs = gl.allocate_shared_memory(dtype, [STAGES] + w1_desc.block_type.shape, w1_desc.layout)
    w2_bufs = gl.allocate_shared_memory(dtype, [STAGES] + w2_desc.block_type.shape, w2_desc.layout)
    out_smem = gl.allocate_shared_memory(dtype, out_desc.block_type.shape, out_desc.layout)
    ready = mbarrier.allocate_mbarrier(batch=STAGES)  # one per CTA: its tiles have landed
    empty = mbarrier.allocate_mbarrier(batch=STAGES, two_ctas=CLUSTER > 1)  # one per pair, in the first CTA
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)

    pid = gl.program_id(0)
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    my_tiles = gl.cdiv(num_pid_m * num_pid_n - pid, NUM_PROGRAMS)
    total = my_tiles * k_tiles

    for j in gl.static_range(STAGES - 1):
        if j < total:
            _issue_loads(
                j,
                pid,
                k_tiles,
                num_pid_m,
                num_pid_n,
                x_desc,
                w1_desc,
                w2_desc,
                x_bufs,
                w1_bufs,
                w2_bufs,
                ready,
                empty,
                NUM_PROGRAMS,
                GROUP_M,
                STAGES,
                CLUSTER,
            )

    z1 = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, acc_layout)
    z2 = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, acc_layout)
    for step in range(total):
        s = step % STAGES
        kk = step % k_tiles
        mbarrier.wait(ready.index(s), (step // STAGES) & 1)
        w1 = w1_bufs.index(s).permute((1, 0))
        w2 = w2_bufs.index(s).permute((1, 0))
        z1 = warpgroup_mma(x_bufs.index(s), w1, z1, use_acc=kk != 0, is_async=True)
        z2 = warpgroup_mma(x_bufs.index(s), w2, z2, use_acc=kk != 0, is_async=True)
        # The previous step's products have retired: its stage (at step 0, the one stage the
        # prologue left empty) takes the loads of step + STAGES - 1.
        z1, z2 = warpgroup_mma_wait(num_outstanding=2, deps=(z1, z2))
        if CLUSTER > 1:
            if step > 0:
                mbarrier.arrive(empty.index((step - 1) % STAGES))
        if step + STAGES - 1 < total:
            _issue_loads(
                step + STAGES - 1,
                pid,
                k_tiles,
                num_pid_m,
                num_pid_n,
                x_desc,
                w1_desc,
                w2_desc,
                x_bufs,
                w1_bufs,
                w2_bufs,
                ready,
                empty,
                NUM_PROGRAMS,
                GROUP_M,
                STAGES,
                CLUSTER,
            )
        if kk == k_tiles - 1:
            z1, z2 = warpgroup_mma_wait(num_outstanding=0, deps=(z1, z2))
            out = (z1 * _gelu(z2, APPROXIMATE_TANH)).to(dtype)
            pid_m, pid_n = _tile(pid + (step // k_tiles) * NUM_PROGRAMS, num_pid_m, num_pid_n, GROUP_M)
            tma.store_wait(pendings=0)  # the previous tile's store has read out_smem
            out_smem.store(out)
            fence_async_shared()
            tma.async_store(out_desc, [pid_m * BLOCK_M, pid_n * BLOCK_N], out_smem)
    tma.store_wait(pendings=0)


def layouts(cluster: int, block_n: int, block_k: int, dtype) -> dict:
    """The shared and register layouts of one configuration: x and out split by rows across the
    cluster's CTAs, the weight tiles the same in every CTA (multicast)."""
    rows = cluster * ROWS_PER_CTA
    split = [[1, 0]] if cluster == 2 else []
    same = [[0, 0]] if cluster == 2 else []
    return {
        "x": gl.NVMMASharedLayout.get_default_for([rows, block_k], dtype, cga_layout=split),
        "w": gl.NVMMASharedLayout.get_default_for([block_n, block_k], dtype, cga_layout=same),
        "out": gl.NVMMASharedLayout.get_default_for([rows, block_n], dtype, cga_layout=split),
        # 8 warps down the 128 rows of a CTA, one 16 x BLOCK_N x 16 wgmma atom each.
        "acc": gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[WARPS, 1], instr_shape=[16, block_n, 16], cga_layout=split
        ),
    }


GL_DTYPES = {"torch.bfloat16": gl.bfloat16, "torch.float16": gl.float16}


def geglu_gluon(
    x, weight, out=None, *, approximate="none", cluster=2, block_n=128, block_k=64, stages=4, group_m=8, num_sms=None
):
    """out = z1 * gelu(z2) for 16-bit x [M, K] and weight [2N, K] on a Hopper GPU, Triton 3.9."""
    import torch

    M, K = x.shape
    N = weight.shape[0] // 2
    if out is None:
        out = torch.empty(M, N, dtype=x.dtype, device=x.device)
    dtype = GL_DTYPES[str(x.dtype)]
    lay = layouts(cluster, block_n, block_k, dtype)
    rows = cluster * ROWS_PER_CTA
    x_desc = TensorDescriptor.from_tensor(x, [rows, block_k], lay["x"])
    w1_desc = TensorDescriptor.from_tensor(weight[:N], [block_n, block_k], lay["w"])
    w2_desc = TensorDescriptor.from_tensor(weight[N:], [block_n, block_k], lay["w"])
    out_desc = TensorDescriptor.from_tensor(out, [rows, block_n], lay["out"])
    if num_sms is None:
        num_sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    tiles = triton.cdiv(M, rows) * triton.cdiv(N, block_n)
    key = (cluster, block_n, block_k, stages, approximate, str(x.dtype))
    # Clusters must fit whole in a GPC, so fewer than num_sms / 2 may be resident at once: a
    # persistent launch takes as many as the driver says fit (learnt at the first launch).
    programs = min(RESIDENT_CLUSTERS.get(key, num_sms // cluster), tiles)
    compiled = _geglu_gluon_kernel[(programs,)](
        x_desc,
        w1_desc,
        w2_desc,
        out_desc,
        M,
        N,
        K,
        NUM_PROGRAMS=programs,
        GROUP_M=group_m,
        STAGES=stages,
        CLUSTER=cluster,
        APPROXIMATE_TANH=approximate == "tanh",
        acc_layout=lay["acc"],
        num_warps=WARPS,
        num_ctas=cluster,
    )
    if cluster > 1 and key not in RESIDENT_CLUSTERS:
        try:
            compiled._init_handles()
            utils = triton.runtime.driver.active.utils
            resident = utils.cuOccupancyMaxActiveClusters(compiled.function, compiled.metadata.shared, cluster)
        except Exception:  # noqa: BLE001 -- unknown: keep one cluster per two SMs
            resident = num_sms // cluster
        RESIDENT_CLUSTERS[key] = max(1, resident)
    return out


RESIDENT_CLUSTERS: dict = {}  # (cluster, block_n, block_k, stages, approximate, dtype) -> clusters resident at once
