"""How Triton 3.9 lowers a Gluon TMA load with multicast=True on a 2-CTA cluster, read in the
PTX it compiles for sm_90 on a machine without a GPU:  python probe_multicast.py  (Triton 3.9).

It prints the cluster, barrier and copy lines. What they showed on 2026-12-02: only the CTA of
rank 0 in the cluster issues the broadcast tile (`setp.eq.b32 %p, %cluster_ctarank, 0` guards
`cp.async.bulk.tensor...multicast::cluster` with CTA mask 3), into both CTAs' shared memory and
onto each CTA's barrier at the same offset; each CTA loads its own rows of the split operand."""

import re

import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma, warpgroup_mma


@gluon.jit
def _one_tile(w_desc, x_desc, o_desc):
    w = gl.allocate_shared_memory(w_desc.dtype, w_desc.block_shape, w_desc.layout)
    x = gl.allocate_shared_memory(x_desc.dtype, x_desc.block_shape, x_desc.layout)
    bar = mbarrier.allocate_mbarrier()
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, w_desc.nbytes_per_cta + x_desc.nbytes_per_cta)
    tma.async_load(w_desc, [0, 0], bar, w, multicast=True)
    tma.async_load(x_desc, [0, 0], bar, x)
    mbarrier.wait(bar, phase=0, deps=[w, x])
    layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 128, 16], cga_layout=[[1, 0]]
    )
    acc = warpgroup_mma(x, w.permute((1, 0)), gl.zeros([256, 128], gl.float32, layout))
    o = gl.allocate_shared_memory(o_desc.dtype, o_desc.block_shape, o_desc.layout)
    o.store(acc.to(gl.bfloat16))
    fence_async_shared()
    tma.async_store(o_desc, [0, 0], o)
    tma.store_wait(0)


if __name__ == "__main__":
    same = gl.NVMMASharedLayout.get_default_for([128, 64], gl.bfloat16, cga_layout=[[0, 0]])
    split = gl.NVMMASharedLayout.get_default_for([256, 64], gl.bfloat16, cga_layout=[[1, 0]])
    out = gl.NVMMASharedLayout.get_default_for([256, 128], gl.bfloat16, cga_layout=[[1, 0]])
    signature = {
        "w_desc": f"tensordesc<bf16[128,64],{same!r}>",
        "x_desc": f"tensordesc<bf16[256,64],{split!r}>",
        "o_desc": f"tensordesc<bf16[256,128],{out!r}>",
    }
    compiled = triton.compile(
        GluonASTSource(_one_tile, signature), target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_ctas": 2}
    )
    for line in compiled.asm["ptx"].splitlines():
        if not line.strip().startswith(".loc") and re.search(r"multicast|mbarrier|cluster_ctarank|setp.eq", line):
            print(line.strip())
