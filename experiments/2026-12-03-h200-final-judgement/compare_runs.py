"""The figures docs/kernel.md and this folder's README derive from two runs of both generated sets:
how far the later run moved from the earlier, and, on the later run's prefill shapes that lose to
eager, compiled or max-autotune, each of those baselines' time over gemm's.

    PYTHONPATH=. python experiments/2026-12-03-h200-final-judgement/compare_runs.py \
        experiments/2026-12-02-h200-miss-causes/runs/r5 experiments/2026-12-03-h200-final-judgement/runs/r1 \
        > experiments/2026-12-03-h200-final-judgement/compare.txt

Each folder holds generated.json and generated-2.json. Shapes are judged by kernels.report, as
docs/kernel.md's tables are.
"""

import statistics
import sys

from kernels import report

SETS = ("generated.json", "generated-2.json")


def shapes(folder: str) -> dict[tuple[str, str, str], report.Shape]:
    """(suite, GELU, case) -> the shape as kernels.report judges it."""
    grouped, _, _ = report.group(report.load([f"{folder}/{name}" for name in SETS]))
    return {
        (suite, gelu, case): report.shape_of(suite, case, benches)
        for suite, by_gelu in grouped.items()
        for gelu, cases in by_gelu.items()
        for case, benches in cases.items()
    }


def main(earlier: str, later: str) -> None:
    before, after = shapes(earlier), shapes(later)
    moves = sorted((after[key].of_gemm - before[key].of_gemm, key) for key in after)
    for move, (suite, gelu, case) in (moves[0], moves[-1]):
        print(f"fused / gemm moved {move:+.3f}: {suite} {case} ({gelu})")
    for suite in sorted({suite for suite, _, _ in after}):
        for gelu in ("erf", "tanh"):
            keys = [key for key in after if key[:2] == (suite, gelu)]
            medians = [statistics.median(run[key].of_gemm for key in keys) for run in (before, after)]
            print(f"{suite} {gelu}: median fused / gemm {medians[0]:.3f} -> {medians[1]:.3f}")
        missing = [{key[2] for key in run if key[0] == suite and run[key].misses} for run in (before, after)]
        print(
            f"{suite}: shapes with a miss {len(missing[0])} -> {len(missing[1])}, the same: {missing[0] == missing[1]}"
        )
    changed = [key for key in after if after[key].misses != before[key].misses]
    print(f"rows whose misses changed: {len(changed)} of {len(after)}")
    for key in changed:
        print(f"  {' '.join(key)}: {', '.join(before[key].misses)} -> {', '.join(after[key].misses)}")
    losing = [shape for shape in after.values() if not shape.decode and set(shape.misses) & set(report.BASELINES)]
    print(f"prefill rows that lose to eager, compiled or max-autotune: {len(losing)}")
    for baseline in report.BASELINES:
        # fused / gemm over fused / baseline: the baseline's time over gemm's
        implied = [shape.of_gemm / shape.paired[baseline].ratio for shape in losing]
        print(f"  {baseline} / gemm there: {min(implied):.3f}-{max(implied):.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
