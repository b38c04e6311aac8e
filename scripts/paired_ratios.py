"""One kernel against every other implementation of each case in a results file, paired by round.

The implementations of a case are timed interleaved, so sample i of each comes from the same
round: the ratio is the median per-round ratio (other / kernel: above 1, the kernel is faster)
and p is the two-sided Wilcoxon signed-rank test, as `perfbot compare` judges interleaved runs.
docs/kernel.md's "Against the targets" table quotes these.

    python scripts/paired_ratios.py experiments/2026-11-30-h200-kernel-results/models.json [--kernel fused]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy import stats

from perfbot.records import results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+")
    parser.add_argument("--kernel", default="fused", help="the implementation to compare with the others")
    args = parser.parse_args()
    print("case | GELU | other | ratio (other / kernel) | p")
    for path in args.results:
        run = results.load(path)
        for mine in run.benchmarks:
            if mine.kernel != args.kernel:
                continue
            others = {theirs.kernel for theirs in run.benchmarks if theirs.kernel != args.kernel}
            for name in sorted(others):
                theirs = run.peer(mine, name)  # the same variant, or one that takes none
                if theirs is None:
                    continue
                ratios = np.asarray(theirs.samples_ms) / np.asarray(mine.samples_ms)  # one per round
                p = stats.wilcoxon(np.log(ratios)).pvalue  # signed-rank: is the median log-ratio 0?
                gelu = mine.variant.get("approximate", "erf")
                print(f"{mine.suite}/{mine.case} | {gelu} | {name} | {np.median(ratios):.4f} | {p:.2g}")


if __name__ == "__main__":
    main()
