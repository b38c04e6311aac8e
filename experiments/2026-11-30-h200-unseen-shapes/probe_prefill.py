"""The prefill misses, a probe: shapes of a few hundred rows (whose last 128-row block is mostly
empty: M = 278 pads to 384 rows) and shapes whose K is not a multiple of 16, timed with the
tuned large config against 64-row tiles and other neighbours (perfbot's engine, each output
checked against float64 first).

    PYTHONPATH=. python experiments/2026-11-30-h200-unseen-shapes/probe_prefill.py [--samples 20] > probe_prefill.txt
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch
import triton

from kernels import geglu as geglu_module
from kernels import shapes
from kernels.subject import geglu_float64
from perfbot import correctness, measure

BASE = {"GROUP_M": 8, "warp_specialize": False, "epilogue_subtile": False, "one_dot": True, "flatten": True}
VARIANTS = {
    "BM128 BN128 BK64 s4 w8 (tuned)": {**BASE, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 4, "num_warps": 8, "GROUP_M": 16},
    "BM64 BN128 BK64 s4 w4": {**BASE, "BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 4, "num_warps": 4},
    "BM64 BN128 BK64 s5 w4": {**BASE, "BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 5, "num_warps": 4},
    "BM64 BN128 BK64 s4 w8": {**BASE, "BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 4, "num_warps": 8},
    "BM64 BN64 BK64 s4 w4 p2": {**BASE, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "num_stages": 4, "num_warps": 4, "programs_per_sm": 2},
    "BM128 BN64 BK64 s4 w4 p2": {**BASE, "BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "num_stages": 4, "num_warps": 4, "programs_per_sm": 2},
    "BM128 BN128 BK32 s8 w8": {**BASE, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_stages": 8, "num_warps": 8, "GROUP_M": 16},
}


def launcher(x, weight, out, plan):
    def run():
        geglu_module._launch(x, weight, out, plan, False)
        return out

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    print(f"{torch.cuda.get_device_name()}, Triton {triton.__version__}, {args.samples} samples; ms")
    found = []
    cases = [c for c in shapes.cases() if c["M"] > 64] + [{"name": "t5-v1.1-xl", "M": 8192, "K": 2048, "N": 5120}]
    for case in cases:
        M, K, N = case["M"], case["K"], case["N"]
        x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        weight = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(torch.bfloat16)
        expected = geglu_float64(x, weight)
        captured = {"gemm": measure.capture(lambda: x @ weight.T, 2)}
        for name, config in VARIANTS.items():
            plan = geglu_module._with_config(geglu_module.launch_plan(x, weight, "tma"), config, M, "given")
            out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            try:
                geglu_module._launch(x, weight, out, plan, False)
                check = correctness.check(out, expected, 3e-3)
            except Exception as failure:  # noqa: BLE001  a variant that does not build is a finding
                print(f"  {case['name']} {name}: failed: {type(failure).__name__}: {str(failure).splitlines()[0][:160]}")
                continue
            if not check.passed:
                print(f"  {case['name']} {name}: wrong ({check})")
                continue
            captured[name] = measure.capture(launcher(x, weight, out, plan), 2)
        pointer = geglu_module.launch_plan(x, weight, "pointer")
        out_p = torch.empty((M, N), device="cuda", dtype=torch.bfloat16)
        captured["pointer (tuned)"] = measure.capture(launcher(x, weight, out_p, pointer), 2)
        medians = {k: statistics.median(v) for k, v in measure.time_interleaved(captured, args.samples).samples.items()}
        print(f"{case['name']} M={M} K={K} N={N} (K % 16 = {K % 16}); gemm {medians['gemm']:.4f}")
        for k in sorted(medians, key=medians.get):
            if k != "gemm":
                print(f"  {k:32} {medians[k]:.4f}  {medians[k] / medians['gemm']:.3f}x gemm")
        found.append({"case": case, "medians": medians})
        sys.stdout.flush()
        del captured
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
