"""Which cuBLAS kernel `x @ weight.T` runs for each 16-bit shape of the a100 and models suites.

cuBLAS's kernel names carry its tile shape and thread-block cluster (for instance
`..._tilesize128x256x64_cga1x2x1_...`): the fused kernel's target, fused <= gemm, is measured
against these. Prints one line per shape: the kernel and its device time, from torch.profiler.

    PYTHONPATH=. python experiments/2026-11-30-h200-cublas-clusters-power/cublas_kernels.py
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

ROOT = Path(__file__).resolve().parents[2]

from perfbot.subject import load_suites


def main() -> None:
    suites = load_suites(ROOT / "kernels" / "suites.yaml", {"fused", "fused-pointer", "eager", "compiled",
                                                             "max-autotune", "gemm", "copy"})
    print(f"{torch.cuda.get_device_name()}, PyTorch {torch.__version__}, cuBLAS {torch.backends.cuda.preferred_blas_library()}")
    for suite in ("a100", "models"):
        for case in suites[suite].cases:
            dtype = getattr(torch, case.dtype)
            x = torch.randn(case.M, case.K, device="cuda", dtype=dtype)
            weight = torch.randn(2 * case.N, case.K, device="cuda", dtype=dtype)
            for _ in range(3):  # cuBLAS's heuristics and handles settle before the profiled call
                x @ weight.T
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                x @ weight.T
                torch.cuda.synchronize()
            kernels = [(e.name, e.device_time) for e in prof.events() if e.device_type.name == "CUDA"]
            for name, us in kernels:
                print(f"{suite}/{case.name} {case.M}x{case.K}->{2 * case.N} {case.dtype}: {us:.1f} us  {name}")


if __name__ == "__main__":
    main()
