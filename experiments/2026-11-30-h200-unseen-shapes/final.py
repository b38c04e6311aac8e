"""The launch choice as committed (decode by waves, small only for short K) against the one it
replaced, on every shape of the generated, decode and pr suites, interleaved with cuBLAS's gemm,
the weight copy and eager (perfbot's engine; erf GELU; each output checked against float64).

    PYTHONPATH=. python experiments/2026-11-30-h200-unseen-shapes/final.py [--samples 20] > final.txt
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
from kernels.subject import eager_geglu, geglu_float64, subject
from perfbot import correctness, measure
from perfbot.subject import load_suites

ROOT = Path(__file__).resolve().parents[2]
# What tuned_configs.yaml held for the H200 before: decode and gemv one config each (BLOCK_M fitted
# to the rows), small (two programs per SM) for every shape under two waves of 128x128 tiles.
OLD_DECODE = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 128, "GROUP_M": 1, "num_warps": 4, "num_stages": 4,
              "warp_specialize": False, "epilogue_subtile": False, "one_dot": True, "flatten": True}
OLD_SMALL = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3,
             "epilogue_subtile": True, "maxnreg": 128, "warp_specialize": False, "one_dot": True, "flatten": True,
             "programs_per_sm": 2}


def old_plan(x, weight):
    M, N = x.shape[0], weight.shape[0] // 2
    plan = geglu_module.launch_plan(x, weight)
    if M <= 64:
        return geglu_module._with_config(plan, OLD_DECODE, M, "old")
    if -(-M // 128) * -(-N // 128) < 2 * plan["num_sms"]:
        return geglu_module._with_config(plan, OLD_SMALL, M, "old")
    return plan


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
    print(f"{torch.cuda.get_device_name()}, Triton {triton.__version__}, {args.samples} samples; medians in ms")
    suites = load_suites(ROOT / "kernels" / "suites.yaml", subject)
    seen, found = set(), []
    for suite in ("generated", "decode", "pr"):
        for case in suites[suite].cases:
            key = (case.M, case.K, case.N, case.dtype)
            if key in seen or case.dtype == "float32":
                continue
            seen.add(key)
            dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}[case.dtype]
            x = torch.randn(case.M, case.K, device="cuda").to(dtype)
            weight = (torch.randn(2 * case.N, case.K, device="cuda") / case.K**0.5).to(dtype)
            expected = geglu_float64(x, weight)
            plans = {"new": geglu_module.launch_plan(x, weight), "old": old_plan(x, weight)}
            captured = {
                "gemm": measure.capture(lambda: x @ weight.T, 2),
                "copy": measure.capture(lambda: weight.clone(), 2),
                "eager": measure.capture(lambda: eager_geglu(x, weight), 2),
            }
            for name, plan in plans.items():
                out = torch.full((case.M, case.N), float("nan"), device="cuda", dtype=dtype)
                geglu_module._launch(x, weight, out, plan, False)
                check = correctness.check(out, expected, 3e-3)
                assert check.passed, (case.name, name, check)
                captured[name] = measure.capture(launcher(x, weight, out, plan), 2)
            medians = {k: statistics.median(v) for k, v in measure.time_interleaved(captured, args.samples).samples.items()}
            read = 2 * weight.numel() * weight.element_size()
            of_copy = (read / medians["new"]) / (2 * read / medians["copy"])
            new = plans["new"]
            print(f"{suite}/{case.name} M={case.M} K={case.K} N={case.N}: new {medians['new']:.4f} old {medians['old']:.4f} "
                  f"new/old {medians['new'] / medians['old']:.3f}  new/gemm {medians['new'] / medians['gemm']:.3f}  "
                  f"new/eager {medians['new'] / medians['eager']:.3f}  weight read {of_copy:.2f} of copy  "
                  f"[{new['shape_class']} BN{new['BLOCK_N']} s{new['num_stages']} p{new.get('programs_per_sm', 1)}]")
            found.append({"suite": suite, "case": case.name, "M": case.M, "K": case.K, "N": case.N, "medians": medians,
                          "new": {k: v for k, v in new.items() if isinstance(v, (int, float, str, bool))}})
            sys.stdout.flush()
            del captured
            torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
