"""Compiles geglu_gluon.py's kernel for the H200 (sm_90) with Triton 3.9 on a machine without a
GPU, and prints each configuration's registers, spills and shared memory, read from the cubin
with Triton's cuobjdump:  python compile_check.py  (Triton 3.9, Python 3.12; no PyTorch needed)."""

import itertools
import os
import subprocess
import sys
import tempfile

import triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import geglu_gluon as g  # noqa: E402

CUOBJDUMP = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")


def compile_one(cluster, block_n, block_k, stages, tanh=False):
    lay = g.layouts(cluster, block_n, block_k, gl.bfloat16)
    rows = cluster * g.ROWS_PER_CTA
    sig = {
        "x_desc": f"tensordesc<bf16[{rows},{block_k}],{lay['x']!r}>",
        "w1_desc": f"tensordesc<bf16[{block_n},{block_k}],{lay['w']!r}>",
        "w2_desc": f"tensordesc<bf16[{block_n},{block_k}],{lay['w']!r}>",
        "out_desc": f"tensordesc<bf16[{rows},{block_n}],{lay['out']!r}>",
        "M": "i32",
        "N": "i32",
        "K": "i32",
        "NUM_PROGRAMS": "constexpr",
        "GROUP_M": "constexpr",
        "STAGES": "constexpr",
        "CLUSTER": "constexpr",
        "APPROXIMATE_TANH": "constexpr",
        "acc_layout": "constexpr",
    }
    constexprs = {
        "NUM_PROGRAMS": 132 // cluster,
        "GROUP_M": 8,
        "STAGES": stages,
        "CLUSTER": cluster,
        "APPROXIMATE_TANH": tanh,
        "acc_layout": lay["acc"],
    }
    src = GluonASTSource(
        g._geglu_gluon_kernel, sig, constexprs={(list(sig).index(k),): v for k, v in constexprs.items()}
    )
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": g.WARPS, "num_ctas": cluster})


def usage(compiled):
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        out = subprocess.run([CUOBJDUMP, "-res-usage", f.name], capture_output=True, text=True).stdout
    return " ".join(re.sub(r"\s+", " ", line).strip() for line in out.splitlines() if "REG" in line)


if __name__ == "__main__":
    import re

    for cluster, block_n, stages in itertools.product((1, 2), (128,), (3, 4)):
        try:
            c = compile_one(cluster, block_n, 64, stages)
            ptx = c.asm["ptx"]
            print(
                f"cluster {cluster} BN {block_n} stages {stages}: smem {c.metadata.shared} B; {usage(c)}; "
                f"multicast loads {ptx.count('multicast::cluster')}, wgmma {ptx.count('wgmma.mma_async')}"
            )
        except Exception as e:  # noqa: BLE001
            print(f"cluster {cluster} BN {block_n} stages {stages}: FAILED {str(e).splitlines()[-1][:300]}")
