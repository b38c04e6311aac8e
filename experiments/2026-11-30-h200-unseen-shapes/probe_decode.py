"""The decode launch, second probe: the persistent kernel (epilogue fused, no parts to add up)
with the programs an SM holds counted from the real BLOCK_M (16 or 32 rows for M <= 32, where the
tuned config's fit check assumed 64), against the tuned config, on every decode case of the
generated suite. The first probe (probe.py, run1/) found one program per tile with three stages,
two resident per SM, 10% faster than the tuned config on N = 11008.

    PYTHONPATH=. python experiments/2026-11-30-h200-unseen-shapes/probe_decode.py [--samples 20] > probe_decode.txt
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch
import triton

from kernels import configs, shapes
from kernels import geglu as geglu_module
from kernels.subject import geglu_float64
from perfbot import correctness, measure

# (BLOCK_N, BLOCK_K, stages, programs per SM)
VARIANTS = [(64, 128, 3, 1), (64, 128, 3, 2), (64, 128, 4, 1), (64, 128, 4, 2), (64, 128, 2, 3), (128, 128, 3, 1),
            (128, 128, 2, 2), (32, 128, 4, 2), (32, 128, 3, 3), (64, 64, 4, 3), (128, 64, 4, 2)]


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
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name()}, {sms} SMs, Triton {triton.__version__}, {args.samples} samples; ms")
    found = []
    for case in shapes.cases():
        M, K, N = case["M"], case["K"], case["N"]
        if M > 64:
            continue
        x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        weight = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(torch.bfloat16)
        expected = geglu_float64(x, weight)
        captured = {
            "gemm": measure.capture(lambda: x @ weight.T, 2),
            "copy": measure.capture(lambda: weight.clone(), 2),
            "tuned": measure.capture(lambda: geglu_module.geglu(x, weight), 2),
        }
        notes = {}
        for bn, bk, stages, per_sm in VARIANTS:
            name = f"BN{bn} BK{bk} s{stages} p{per_sm}"
            config = {"BLOCK_M": 64, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 1, "num_warps": 4, "num_stages": stages,
                      "one_dot": True, "flatten": True, "programs_per_sm": per_sm}
            plan = geglu_module._with_config(geglu_module.launch_plan(x, weight, "tma"), config, M, "given")
            smem = configs._smem_bytes(plan)
            if smem * per_sm > configs.SM_SMEM_BYTES:
                continue  # would not be resident together
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
            tiles = triton.cdiv(N, bn)
            notes[name] = f"BM{plan['BLOCK_M']} smem {smem // 1024} KiB, {tiles} tiles on {min(tiles, per_sm * sms)} programs"
            captured[name] = measure.capture(launcher(x, weight, out, plan), 2)
        samples = measure.time_interleaved(captured, args.samples).samples
        medians = {k: statistics.median(v) for k, v in samples.items()}
        copy_gbps = 2 * weight.numel() * 2 / medians["copy"] / 1e6
        print(f"{case['name']} M={M} K={K} N={N}; gemm {medians['gemm']:.4f}, copy {medians['copy']:.4f} ({copy_gbps:.0f} GB/s)")
        for k in sorted(medians, key=medians.get):
            if k in ("gemm", "copy"):
                continue
            read = weight.numel() * 2 / medians[k] / 1e6
            print(f"  {k:22} {medians[k]:.4f}  {medians[k] / medians['gemm']:.3f}x gemm  weight read {read / copy_gbps:.3f} of copy  {notes.get(k, '')}")
        found.append({"case": case, "medians": medians, "notes": notes})
        sys.stdout.flush()
        del captured
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
