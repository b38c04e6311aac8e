"""Decode launches of fewer tiles than SMs, a probe: every decode case (M <= 64) of the two
generated suites whose plan launches fewer programs than the GPU has SMs, bf16, erf, timed
interleaved (perfbot's engine, each output checked against float64 first) as planned and with
every decode candidate of kernels/configs.py that fits at the plan's BLOCK_M, against copy's
and cuBLAS's times. `decode_by_waves` breaks a tie of one wave by the share of resident slots
busy, then the widest tile: under one wave that can leave SMs idle that a narrower tile fills.

    PYTHONPATH=. python experiments/2026-12-02-h200-decode-bound/probe_narrow_tiles.py > OUT/narrow.txt
"""

from __future__ import annotations

import statistics
from pathlib import Path

import torch
import triton
import yaml

from kernels import configs
from kernels.geglu import geglu, launch_plan
from kernels.subject import copy_weight, geglu_float64
from perfbot.measuring import correctness, measure

ROOT = Path(__file__).resolve().parents[2]


def candidates(x: torch.Tensor, weight: torch.Tensor, plan: dict) -> dict:
    """The plan's call, and one for every other decode candidate that fits at its BLOCK_M."""
    N = weight.shape[0] // 2
    calls = {"plan": lambda: geglu(x, weight)}
    for c in configs.DECODE_CANDIDATES:
        config = {**c, "BLOCK_M": plan["BLOCK_M"]}
        if (c["BLOCK_N"], c["programs_per_sm"]) == (plan["BLOCK_N"], plan["programs_per_sm"]):
            continue
        if configs._smem_bytes(config) * c["programs_per_sm"] <= configs.SM_SMEM_BYTES:
            label = f"BN{c['BLOCK_N']} s{c['num_stages']} p{c['programs_per_sm']} ({-(-N // c['BLOCK_N'])} tiles)"
            calls[label] = lambda config=config: geglu(x, weight, config=config)
    return calls


def probe(suite: str, case: dict, sms: int) -> None:
    M, K, N = case["M"], case["K"], case["N"]
    generator = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(M, K, generator=generator, device="cuda").to(torch.bfloat16)
    weight = (torch.randn(2 * N, K, generator=generator, device="cuda") / K**0.5).to(torch.bfloat16)
    plan = launch_plan(x, weight)
    tiles = -(-N // plan["BLOCK_N"])
    if min(tiles, plan["programs_per_sm"] * sms) >= sms:
        return
    expected = geglu_float64(x, weight)
    calls = candidates(x, weight, plan)
    for label, call in list(calls.items()):
        if not correctness.check(call(), expected, 3e-3).passed:
            print(f"  {case['name']} {label}: wrong result, left out")
            del calls[label]
    calls["copy"] = lambda: copy_weight(x, weight)
    calls["gemm"] = lambda: x @ weight.T
    captured = {k: measure.capture(v, 2) for k, v in calls.items()}
    medians = {k: statistics.median(v) for k, v in measure.time_interleaved(captured, 30).samples.items()}
    print(
        f"{suite} {case['name']} M={M} K={K} N={N}: plan BN{plan['BLOCK_N']} p{plan['programs_per_sm']} "
        f"({tiles} tiles); copy {medians['copy']:.4f}, gemm {medians['gemm']:.4f}"
    )
    for label, ms in sorted(medians.items(), key=lambda kv: kv[1]):
        if label not in ("copy", "gemm"):
            share = medians["copy"] / (2 * ms)  # the weight's read over copy's read and write
            print(
                f"  {label:28} {ms:.4f}  {share:.3f} of copy  {ms / medians['gemm']:.3f}x gemm  "
                f"{ms / medians['plan']:.3f}x plan"
            )


def main() -> None:
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name()} ({sms} SMs), Triton {triton.__version__}, 30 samples; medians in ms")
    suites = yaml.safe_load((ROOT / "kernels" / "suites.yaml").read_text())
    for suite in ("generated", "generated-2"):
        for case in suites[suite]["cases"]:
            if case["M"] <= 64:
                probe(suite, case, sms)


if __name__ == "__main__":
    main()
