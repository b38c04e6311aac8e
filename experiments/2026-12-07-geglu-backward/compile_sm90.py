"""Compile geglu's kernels for the H200 (sm_90) on a machine without a GPU (perfbot's compile-only
driver) and show (1) that the no-grad forward compiles to the same SASS as at BASE (the commit
before the backward) for every plan, and (2) the resources of the training forward (h saved)
and of the backward kernels.

    env -u TRITON_INTERPRET python experiments/2026-12-07-geglu-backward/compile_sm90.py [BASE]
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from perfbot.compiling import artifacts, launches, offline  # noqa: E402

# (name, M, K, N, dtype, path): each plan the forward has on the H200
CASES = [
    ("large", 256, 2048, 512, torch.bfloat16, None),
    ("small", 512, 512, 1024, torch.float16, None),
    ("decode-waves", 16, 3072, 24576, torch.bfloat16, None),
    ("decode-split-k", 16, 3072, 1024, torch.bfloat16, None),
    ("gemv", 1, 2048, 4096, torch.float16, None),
    ("pointer", 256, 2048, 512, torch.float16, "pointer"),
    ("fp32", 256, 512, 256, torch.float32, None),
]


def base_kernels(ref: str) -> str:
    """kernels/ at `ref`, as a package named kernels_base in a temporary directory."""
    where = Path(tempfile.mkdtemp())
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "kernels"], capture_output=True, check=True)
    tarfile.open(fileobj=BytesIO(archive.stdout)).extractall(where, filter="data")
    (where / "kernels").rename(where / "kernels_base")
    sys.path.insert(0, str(where))
    return "kernels_base"


def records(call) -> list:
    with launches.recording() as seen:
        call()
    return artifacts.compiled(seen).kernels


def main() -> None:
    refs = [a for a in sys.argv[1:] if not a.startswith("--")]
    base_ref = refs[0] if refs else "65307e1"
    with offline.compiling_for(offline.gpu_named("NVIDIA H200")):
        base = importlib.import_module(base_kernels(base_ref) + ".geglu")
        from kernels import geglu

        same = 0
        for name, M, K, N, dtype, path in CASES:
            x = torch.zeros(M, K, dtype=dtype)
            w = torch.zeros(2 * N, K, dtype=dtype)
            for approximate in ("none", "tanh"):
                before = records(lambda: base.geglu(x, w, approximate=approximate, path=path))
                after = records(lambda: geglu.geglu(x, w, approximate=approximate, path=path))
                assert [k.name for k in before] == [k.name for k in after], (before, after)
                for b, a in zip(before, after, strict=True):
                    # The new kernels take h (None here, a constexpr): the one specialization added.
                    spec = {k: v for k, v in a.specialization.items() if k not in ("h_ptr", "h1_desc", "h2_desc")}
                    ok = b.sass_sha256 == a.sass_sha256 and b.grid == a.grid and b.specialization == spec
                    same += ok
                    print(
                        f"no-grad {name:15s} {approximate:4s} {a.name:24s} same SASS {b.sass_sha256 == a.sass_sha256}, "
                        f"grid {b.grid == a.grid}, specialization {b.specialization == spec} (new: {sorted(set(a.specialization) - set(b.specialization))})"
                    )
            if "--no-grad" in sys.argv:
                continue
            for recompute in (False, True):
                xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()

                def train():
                    out = geglu.geglu(xg, wg, path=path, recompute=recompute)
                    torch.autograd.grad(out, (xg, wg), torch.zeros_like(out))

                for k in records(train):
                    print(
                        f"train   {name:15s} recompute={recompute!s:5s} {k.name:24s} regs {k.registers:3d} "
                        f"spills {k.spill_store_bytes:4d} smem {k.static_shared_bytes + k.dynamic_shared_bytes:6d} "
                        f"mma {k.instructions.get('mma', 0):4d} occupancy {k.occupancy and k.occupancy.blocks_per_sm}"
                    )
        print(f"{same} no-grad kernels the same as at {base_ref}")


if __name__ == "__main__":
    main()
