"""One kernel against every other implementation of each case in a results file, paired by round.

The implementations of a case are timed interleaved, so sample i of each comes from the same
round: the ratio is the median per-round ratio (other / kernel: above 1, the kernel is faster)
and p is the two-sided Wilcoxon signed-rank test, as `perfbot compare` judges interleaved runs.
The README's "Against the targets" table quotes these.

    python scripts/paired_ratios.py experiments/2026-11-30-h200-kernel-results/models.json [--kernel fused]
"""

from __future__ import annotations

import argparse
from pathlib import Path


from perfbot import results, stats

# Implementations that compute no GELU: one measurement serves both variants of the kernel.
NO_GELU = ("gemm", "copy")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+")
    parser.add_argument("--kernel", default="fused", help="the implementation to compare with the others")
    args = parser.parse_args()
    print("case | GELU | other | ratio (other / kernel) | p")
    for path in args.results:
        benchmarks = results.load(path).benchmarks
        for mine in benchmarks:
            if mine.kernel.partition("[")[0] != args.kernel:
                continue
            for theirs in benchmarks:
                name = theirs.kernel.partition("[")[0]
                if ((theirs.suite, theirs.case) != (mine.suite, mine.case) or name == args.kernel
                        or (name not in NO_GELU and theirs.approximate != mine.approximate)):
                    continue
                ratio = stats.paired_ratio(mine.samples_ms, theirs.samples_ms).ratio
                gelu = "tanh" if mine.approximate == "tanh" else "erf"
                print(f"{mine.suite}/{mine.case} | {gelu} | {name} | {ratio:.4f} | "
                      f"{stats.wilcoxon_p(mine.samples_ms, theirs.samples_ms):.2g}")


if __name__ == "__main__":
    main()
