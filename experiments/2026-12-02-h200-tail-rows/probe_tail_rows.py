"""Tiles of two heights in one launch, a probe: every prefill shape of 65 to 1024 rows of the two
generated suites, bf16, erf, timed interleaved (perfbot's engine, each output checked against
float64 first) as the committed plan launches it, against the tail kernel
(kernels/geglu.py, `_geglu_tma_tail_kernel`): whole row blocks of 128 rows (the large config) or
64 rows (the 64-row prefill config), and the rest of M in 16-, 32- or 64-row blocks, on the
program count `configs.balanced_programs` gives and on one program per SM; and cuBLAS's matmul.
With `--family grid` (the default), the committed kernel on other grids instead (`grid_configs`);
`--family tail` needs a checkout of 991cc65, the last commit whose kernels had the tail kernel.

    PYTHONPATH=. python experiments/2026-12-02-h200-tail-rows/probe_tail_rows.py --family tail \
        --json OUT/probe.json > OUT/probe.txt                       # at 991cc65
    PYTHONPATH=. python experiments/2026-12-02-h200-tail-rows/probe_tail_rows.py --json OUT/grid.json > OUT/grid.txt
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
from pathlib import Path

import torch
import triton
import yaml

from kernels import configs, shapes
from kernels.geglu import geglu, launch_plan
from kernels.subject import geglu_float64
from perfbot.measuring import correctness, measure

ROOT = Path(__file__).resolve().parents[2]
# Whole row blocks: the large class's tuned tile, and the 64-row prefill tile.
MAINS = {
    128: {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 4},
    64: {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 5},
}


def prefill_cases() -> list[tuple[str, str, int, int, int]]:
    suites = yaml.safe_load((ROOT / "kernels" / "suites.yaml").read_text())
    drawn = {"generated": suites["generated"]["cases"]}
    if "generated-2" in suites:
        drawn["generated-2"] = suites["generated-2"]["cases"]
    else:  # the second set as the generator draws it, without the first set's reported shapes
        drawn["generated-2"] = [c for c in shapes.cases(2026_12_02) if c not in shapes.REPORTED]
    return [(s, c["name"], c["M"], c["K"], c["N"]) for s, cs in drawn.items() for c in cs if 64 < c["M"] <= 1024]


def tail_configs(M: int, N: int, num_sms: int) -> dict[str, dict]:
    found = {}
    for block_m, main in MAINS.items():
        rest = M % block_m
        if rest == 0:
            continue
        for tail_m in (16, 32, 64):
            if tail_m >= block_m or -(-rest // tail_m) > 2:
                continue
            balanced = configs.balanced_programs(M, N, block_m, tail_m, main["BLOCK_N"], main["GROUP_M"], num_sms)
            for programs in sorted({balanced, num_sms}):
                config = {**main, "one_dot": True, "tail_m": tail_m, "tail_stages": main["num_stages"], "num_programs": programs}
                found[f"tail {block_m}+{tail_m} P{programs}"] = config
    return found


def grid_configs(M: int, N: int, num_sms: int, plan: dict) -> dict[str, dict]:
    """The committed kernel with other grids: one tile per program (the hardware's block
    scheduler shares out tiles of unequal waves, where a persistent program walks a fixed list),
    and 64-column tiles on 128 rows (twice the tiles: a finer last wave)."""
    keys = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages", "one_dot", "flatten")
    own = {k: plan[k] for k in keys}
    return {
        "plan, a tile per program": {**own, "programs_per_sm": 64},
        **{
            f"{m}x{n} tiles{', a tile per program' if each else ''}": {
                **MAINS[m], "BLOCK_N": n, "one_dot": True, "flatten": True, **({"programs_per_sm": 64} if each else {})
            }
            for m, n in ((128, 64), (64, 64))
            for each in (False, True)
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--family",
        choices=("tail", "grid"),
        default="grid",
        help="grid: grid_configs; tail: tail_configs, which needs the tail kernel of 991cc65's kernels",
    )
    args = parser.parse_args()
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(
        f"{torch.cuda.get_device_name()}, Triton {triton.__version__}, torch {torch.__version__}, "
        f"{args.samples} samples, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; medians in ms"
    )
    rows = []
    for suite, name, M, K, N in prefill_cases():
        generator = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(M, K, generator=generator, device="cuda").to(torch.bfloat16)
        weight = (torch.randn(2 * N, K, generator=generator, device="cuda") / K**0.5).to(torch.bfloat16)
        expected = geglu_float64(x, weight)
        calls = {"plan": lambda: geglu(x, weight)}
        family = tail_configs(M, N, num_sms) if args.family == "tail" else grid_configs(M, N, num_sms, launch_plan(x, weight))
        for label, config in family.items():
            calls[label] = lambda config=config: geglu(x, weight, config=config)
        checked = {}
        for label, call in calls.items():
            check = correctness.check(call(), expected, 3e-3)
            if check.passed:
                checked[label] = call
            else:
                print(f"  {name} {label}: wrong result, left out ({check})")
        checked["gemm"] = lambda: x @ weight.T
        captured = {label: measure.capture(call, 2) for label, call in checked.items()}
        medians = {k: statistics.median(v) for k, v in measure.time_interleaved(captured, args.samples).samples.items()}
        plan = launch_plan(x, weight)
        gemm = medians["gemm"]
        print(f"{suite} {name} M={M} K={K} N={N}: gemm {gemm:.4f}; plan BLOCK_M {plan['BLOCK_M']} ({plan['source']})")
        for label, ms in sorted(medians.items(), key=lambda kv: kv[1]):
            if label != "gemm":
                print(f"  {label:22} {ms:.4f}  {ms / gemm:.3f}x gemm  {ms / medians['plan']:.3f}x plan")
        rows.append({"suite": suite, "case": name, "M": M, "K": K, "N": N, "medians_ms": medians, "plan": plan})
    if args.json:
        args.json.write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "rows": rows}, indent=1, default=str))


if __name__ == "__main__":
    main()
