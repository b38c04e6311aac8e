"""Whether the fused kernel slips on unseen decode shapes because its tiles fill the waves badly,
and whether splitting K fixes it. For every decode case of the generated suite (kernels/shapes.py)
it times, interleaved with perfbot's engine (CUDA-graph replays, L2 flushed): cuBLAS's gemm, the
weight copy, the fused kernel as tuned (persistent, one K loop per tile), and the split-K kernel
at several tile widths and splits, each checked against float64 first. For the prefill cases it
times the tuned plan against its neighbour class's config, with each one's wave efficiency.

    PYTHONPATH=. python experiments/2026-11-30-h200-unseen-shapes/probe.py [--samples 20] > probe.txt
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch
import triton

from kernels import configs, shapes, waves
from kernels import geglu as geglu_module
from kernels.subject import geglu_float64
from perfbot import correctness, measure

SPLIT_CONFIGS = [(64, 128, 4), (64, 128, 3), (32, 128, 4), (128, 128, 3), (128, 64, 4)]  # BLOCK_N, BLOCK_K, stages
SPLITS = (1, 2, 3, 4, 6, True)


def plan_for(x, weight, config):
    N, K = weight.shape[0] // 2, x.shape[1]
    plan = geglu_module._with_config(geglu_module.launch_plan(x, weight, "tma"), config, x.shape[0], "given")
    return geglu_module._fit_splits(plan, N, K)


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
        x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        weight = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(torch.bfloat16)
        expected = geglu_float64(x, weight)
        tuned = geglu_module.launch_plan(x, weight)
        captured = {
            "gemm": measure.capture(lambda: x @ weight.T, 2),
            "copy": measure.capture(lambda: weight.clone(), 2),
            "tuned": measure.capture(lambda: geglu_module.geglu(x, weight), 2),
        }
        notes = {"tuned": f"{tuned['shape_class']} BN{tuned['BLOCK_N']} splits {tuned.get('splits', '-')}"}
        decode = tuned["shape_class"] in configs.ALL_ROWS_CLASSES
        variants = {}
        if decode:
            for bn, bk, stages in SPLIT_CONFIGS:
                for splits in SPLITS:
                    config = {"BLOCK_M": 64, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 1, "num_warps": 4,
                              "num_stages": stages, "split_k": splits}
                    variants[f"split BN{bn} BK{bk} s{stages} S{splits}"] = config
        else:
            for cls in ("large", "small"):
                config = {k: v for k, v in configs.tuned_table()["NVIDIA H200"]["tma"][cls].items()}
                variants[f"{cls}-config"] = config
        for name, config in variants.items():
            plan = plan_for(x, weight, config)
            out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            try:
                geglu_module._launch(x, weight, out, plan, False)
                error = correctness.check(out, expected, 3e-3)
            except Exception as failure:  # noqa: BLE001  a variant that does not build is a finding
                print(f"  {case['name']} {name}: failed: {type(failure).__name__}: {str(failure).splitlines()[0][:160]}")
                continue
            if not error.passed:
                print(f"  {case['name']} {name}: wrong ({error})")
                continue
            if decode:
                tiles, steps = triton.cdiv(N, plan["BLOCK_N"]), triton.cdiv(K, plan["BLOCK_K"])
                resident = max(1, min(8, configs.SM_SMEM_BYTES // configs.split_k_smem_bytes(plan)))
                eff = waves.efficiency(tiles, steps, resident * sms, plan["splits"])
                notes[name] = f"S={plan['splits']} resident {resident} waves-efficiency {eff:.2f}"
            else:
                tiles = triton.cdiv(M, plan["BLOCK_M"]) * triton.cdiv(N, plan["BLOCK_N"])
                programs = plan.get("programs_per_sm", 1) * sms
                notes[name] = f"tiles {tiles} on {programs} programs: waves-efficiency {waves.efficiency(tiles, 1, programs):.2f}"
            captured[name] = measure.capture(launcher(x, weight, out, plan), 2)
        samples = measure.time_interleaved(captured, args.samples).samples
        medians = {k: statistics.median(v) for k, v in samples.items()}
        copy_gbps = 2 * weight.numel() * 2 / medians["copy"] / 1e6
        print(f"{case['name']} M={M} K={K} N={N} ({notes['tuned']}); gemm {medians['gemm']:.4f}, copy {medians['copy']:.4f} ({copy_gbps:.0f} GB/s)")
        for k in sorted(medians, key=medians.get):
            if k in ("gemm", "copy"):
                continue
            read = weight.numel() * 2 / medians[k] / 1e6
            print(f"  {k:34} {medians[k]:.4f}  {medians[k] / medians['gemm']:.3f}x gemm  weight read {read / copy_gbps:.3f} of copy  {notes.get(k, '')}")
        found.append({"case": case, "medians": medians, "notes": notes})
        sys.stdout.flush()
        del captured
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
