"""The distribution of each ratio over the generated suite, from the full runs (full/*.json), and
each shape's misses against the issue's targets. A run's samples are interleaved by round, so
fused and each baseline are compared paired: the median of the per-round ratios and its 95%
bootstrap interval (kernels.report.paired_ratio; perfbot.stats.paired_ratio when this ran, the
same bootstrap). Faster: the interval lies below 1; slower: above 1; else tied. From the
repository root:

    PYTHONPATH=. python experiments/2026-11-30-h200-unseen-shapes/summarize.py \
        > experiments/2026-11-30-h200-unseen-shapes/summary.txt
"""

from __future__ import annotations

import statistics
from pathlib import Path

from kernels.report import paired_ratio
from perfbot.records import results

HERE = Path(__file__).parent


def main() -> None:
    for name in ("full-erf.json", "full-tanh.json"):
        run = results.load(HERE / "full" / name)
        by_case: dict[str, dict[str, float]] = {}
        samples: dict[str, dict[str, list[float]]] = {}
        shapes = {}
        for bench in run.benchmarks:
            by_case.setdefault(bench.case, {})[bench.kernel] = bench.median_ms
            samples.setdefault(bench.case, {})[bench.kernel] = bench.samples_ms
            shapes[bench.case] = bench.shape
        ratios: dict[str, list[tuple[float, str]]] = {}
        misses = []
        for case, ms in by_case.items():
            shape = shapes[case]
            fused = ms["fused"]
            for other in ("eager", "compiled", "max-autotune", "gemm"):
                ratios.setdefault(f"fused / {other}", []).append((fused / ms[other], case))
            read = 2 * shape["N"] * shape["K"] * 2
            of_copy = (read / fused) / (2 * read / ms["copy"])
            if shape["M"] <= 64:
                ratios.setdefault("decode: weight read, share of copy's bandwidth", []).append((of_copy, case))
                if of_copy < 0.9:
                    misses.append(f"{case}: decode reads the weight at {of_copy:.2f} of copy")
            elif fused / ms["gemm"] > 1.03:
                misses.append(f"{case}: prefill {fused / ms['gemm']:.3f}x gemm")
            for other in ("eager", "compiled", "max-autotune"):
                paired = paired_ratio(samples[case][other], samples[case]["fused"])
                text = f"{paired.ratio:.3f}x [{paired.low:.3f}, {paired.high:.3f}]"
                if other == "max-autotune" and paired.low > 1:
                    misses.append(f"{case}: slower than {other}, paired {text}")
                elif other != "max-autotune" and paired.high >= 1:
                    misses.append(f"{case}: not faster than {other}, paired {text}")
        variant = "erf" if "erf" in name else "tanh"
        print(f"== {variant} GELU, {len(by_case)} shapes ({name}, H200, {run.created}) ==")
        for label, values in ratios.items():
            ordered = sorted(values)
            worst = ordered[0] if label.startswith("decode") else ordered[-1]
            print(
                f"{label:48} best {ordered[0][0] if not label.startswith('decode') else ordered[-1][0]:.3f}  "
                f"median {statistics.median(v for v, _ in values):.3f}  worst {worst[0]:.3f} ({worst[1]})"
            )
        print(f"misses ({len(misses)}):")
        for miss in misses:
            print(f"  {miss}")
        print()


if __name__ == "__main__":
    main()
