"""Stream-K for the last wave, a probe: on every prefill shape of the generated suite and some of
the suites' (decode was probed first: stream-K was 4-13% slower on each of the five tried, where
one wave or less of tiles leaves nothing to balance), the committed launch plan against the same plan with its last wave (or its last
two) shared out by K steps (`stream_k_waves` 1 and 2), and on prefill of up to 1024 rows the other
row height with stream-K; on K not a multiple of 16, the plan without its copy of x into aligned
rows (the copy's effect, end to end). Every output is checked against float64 first; timed with
perfbot's engine, interleaved with cuBLAS's matmul.

    PYTHONPATH=. python experiments/2026-11-30-h200-unseen-shapes/probe_stream_k.py [--samples 20] [--json F] > probe_stream_k.txt
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch
import triton

from kernels import configs
from kernels import geglu as geglu_module
from kernels import shapes
from kernels.subject import geglu_float64
from perfbot import correctness, measure

LAUNCH_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages", *geglu_module._OPTION_DEFAULTS)
SUITE_CASES = [
    {"name": "t5-v1.1-xl", "M": 8192, "K": 2048, "N": 5120},
    {"name": "gemma-2b-m512", "M": 512, "K": 2048, "N": 16384},
    {"name": "gemma-7b", "M": 8192, "K": 3072, "N": 24576},
    {"name": "gemma-3-4b", "M": 8192, "K": 2560, "N": 10240},
    {"name": "gemma-3-27b", "M": 8192, "K": 5376, "N": 21504},
    {"name": "t5-v1.1-xxl", "M": 8192, "K": 4096, "N": 10240},
]


def launch_config(plan: dict, **changes) -> dict:
    return {**{k: plan[k] for k in LAUNCH_KEYS if k in plan}, **changes}


def variants(x, weight, plan: dict) -> dict:
    """name -> a function that returns the output."""
    M = x.shape[0]
    found = {"plan": lambda: geglu_module.geglu(x, weight)}
    for waves in (1, 2):
        config = launch_config(plan, stream_k_waves=waves)
        found[f"plan sk{waves}"] = lambda config=config: geglu_module.geglu(x, weight, config=config)
    if plan["shape_class"] == "large" and M <= configs.PREFILL_64_MAX_ROWS:
        large = configs.lookup(plan["gpu"], "tma", "large", x.dtype)
        other = large if plan["BLOCK_M"] == 64 else configs.PREFILL_64_ROWS
        for waves in (0, 1):
            config = launch_config({**geglu_module._OPTION_DEFAULTS, **other}, stream_k_waves=waves)
            found[f"BM{other['BLOCK_M']} sk{waves}"] = lambda config=config: geglu_module.geglu(x, weight, config=config)
    if plan.get("align_x"):
        out = torch.empty(M, weight.shape[0] // 2, device=x.device, dtype=x.dtype)

        def uncopied():
            geglu_module._launch(x, weight, out, plan, False)
            return out

        found["plan, x not copied"] = uncopied
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", nargs="*", help="case names, decode ones too (default: every prefill case)")
    args = parser.parse_args()
    print(f"{torch.cuda.get_device_name()}, Triton {triton.__version__}, {args.samples} samples; medians in ms")
    found = []
    every = shapes.cases() + SUITE_CASES
    for case in [c for c in every if (c["name"] in args.only if args.only else c["M"] > 64)]:
        M, K, N = case["M"], case["K"], case["N"]
        x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        weight = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(torch.bfloat16)
        expected = geglu_float64(x, weight)
        plan = geglu_module.launch_plan(x, weight)
        tiles = triton.cdiv(M, plan["BLOCK_M"]) * triton.cdiv(N, plan["BLOCK_N"])
        slots = plan.get("programs_per_sm", 1) * plan["num_sms"]
        captured = {"gemm": measure.capture(lambda: x @ weight.T, 2)}
        for name, run in variants(x, weight, plan).items():
            try:
                check = correctness.check(run(), expected, 3e-3)
            except Exception as failure:  # noqa: BLE001  a variant that does not build is a finding
                print(f"  {case['name']} {name}: failed: {type(failure).__name__}: {str(failure).splitlines()[0][:160]}")
                continue
            if not check.passed:
                print(f"  {case['name']} {name}: WRONG ({check})")
                continue
            captured[name] = measure.capture(run, 2)
        medians = {k: statistics.median(v) for k, v in measure.time_interleaved(captured, args.samples).samples.items()}
        print(
            f"{case['name']} M={M} K={K} N={N}: plan BM{plan['BLOCK_M']} BN{plan['BLOCK_N']} x{plan.get('programs_per_sm', 1)}, "
            f"{tiles} tiles on {slots} slots ({tiles / slots:.2f} waves); gemm {medians['gemm']:.4f}"
        )
        for k in sorted(medians, key=medians.get):
            if k != "gemm":
                print(f"  {k:22} {medians[k]:.4f}  {medians[k] / medians['gemm']:.3f}x gemm  {medians[k] / medians['plan']:.3f}x plan")
        found.append({"case": case, "plan": {k: v for k, v in plan.items() if k != "gpu"}, "medians": medians})
        sys.stdout.flush()
        del captured
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
