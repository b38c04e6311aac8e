"""The decode shapes that read the weight below 90% of copy's bandwidth in issue 35's runs, with
what bounds them: the empty launch's time, copy's own bandwidth at that size, the share with the
launch's fixed cost taken from both fused's and copy's times, and how the other implementations
read the same weight (erf GELU). From the repository root:

    PYTHONPATH=. python experiments/2026-12-02-h200-decode-bound/misses.py > experiments/2026-12-02-h200-decode-bound/misses.md
"""

from __future__ import annotations

import json
from pathlib import Path

from kernels.report import COPY_SHARE_TARGET
from perfbot.records import results

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "experiments" / "2026-12-02-h200-cublas-gap" / "runs"
BOUND = Path(__file__).parent / "runs" / "r1" / "bound.json"
OTHERS = ("gemm", "max-autotune", "compiled", "eager")


def medians(path: Path) -> dict[str, dict[str, float]]:
    """case -> implementation -> median ms, the erf GELU's (gemm and copy take none)."""
    found: dict[str, dict[str, float]] = {}
    for bench in results.load(path).benchmarks:
        if bench.variant.get("approximate", "none") == "none":
            found.setdefault(bench.case, {})[bench.kernel] = bench.median_ms
    return found


def main() -> None:
    bound = json.loads(BOUND.read_text())
    probed = {case["name"]: (suite, case) for suite in bound["suites"] for case in suite["cases"]}
    timed = {**medians(RUNS / "r2" / "generated.json"), **medians(RUNS / "r3" / "generated-2.json")}
    print(f"{bound['header']['gpu']}, Triton {bound['header']['triton']}; erf GELU; times in µs.")
    print()
    print(
        "| case | weight MB | programs | fused | empty launch (of fused) | copy GB/s (of a 1 GiB copy's) "
        "| fused, share of copy | launch taken out | gemm | max-autotune | compiled | eager |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, ms in timed.items():
        if name not in probed:
            continue
        case = probed[name][1]
        share = ms["copy"] / (2 * ms["fused"])
        if share >= COPY_SHARE_TARGET:
            continue
        empty = case["median_ms"]["empty"]
        without = (ms["copy"] - empty) / (2 * (ms["fused"] - empty))
        others = " | ".join(f"{ms['copy'] / (2 * ms[o]):.2f}" for o in OTHERS)
        print(
            f"| {name} | {case['weight_bytes'] / 1e6:.0f} | {case['fused_programs']} | {1000 * ms['fused']:.1f} "
            f"| {1000 * empty:.1f} ({empty / ms['fused']:.0%}) | {case['copy_GBps']:.0f} "
            f"({case['copy_share_of_1GiB_copy']:.2f}) | {share:.2f} | {without:.2f} | {others} |"
        )
    print()
    print(
        "Shares are of copy's bandwidth, `copy / (2 × time)`, as the target counts them; the gemm, "
        "max-autotune, compiled and eager columns read the same weight (and eager and compiled write z too). "
        "Empty launch and copy GB/s: `runs/r1/bound.txt`; the rest: the issue's runs, "
        "`experiments/2026-12-02-h200-cublas-gap/runs/`."
    )


if __name__ == "__main__":
    main()
