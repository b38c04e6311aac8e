"""How a sample's time depends on its place in the round, from `perfbot selftest --keep-samples`.

For each implementation and each position in the round, the mean of (sample / that round's
median - 1), with the order `perfbot.measuring.measure.round_order` gives (the order in force when the
file was written: files from before 2026-11-30's balanced order need `--rotation`). Also the
time each implementation adds to the first (for the selftest: what each injected sleep
really costs), and the A/A statistics: the spread of the per-round median ratio and how often Wilcoxon's p falls
below 0.01 and 0.05.

    python scripts/position_effects.py selftest-decode.json[.gz] [--rotation]
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import numpy as np
from scipy import stats

from perfbot.measuring.measure import round_order


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--rotation", action="store_true", help="the plain rotation used before the balanced order")
    args = parser.parse_args()
    opener = gzip.open if args.file.suffix == ".gz" else open
    with opener(args.file, "rt") as handle:
        rounds = json.load(handle)["rounds_ms"]
    names = list(rounds[0])
    samples = len(rounds[0][names[0]])

    def order(index: int) -> list[str]:
        if args.rotation:
            shift = index % len(names)
            return names[shift:] + names[:shift]
        return round_order(names, index)

    by_place = {name: [[] for _ in names] for name in names}
    for timed in rounds:
        medians = {name: np.median(timed[name]) for name in names}
        for index in range(samples):
            for place, name in enumerate(order(index)):
                by_place[name][place].append(timed[name][index] / medians[name] - 1)
    print("place in round:", " ".join(f"{p:>8}" for p in range(len(names))))
    for name in names:
        print(f"{name:>14}:", " ".join(f"{100 * np.mean(v):+7.3f}%" for v in by_place[name]))
    first = np.array([r[names[0]] for r in rounds])
    for name in names[1:]:
        added = np.median(np.array([r[name] for r in rounds]) - first)
        print(f"{name:>14}: {1000 * added:+.2f} us against {names[0]} (median paired difference)")
    log_ratios = np.log(np.array([r[names[1]] for r in rounds]) / np.array([r[names[0]] for r in rounds]))
    per_round = np.median(log_ratios, axis=1)
    p = np.array([stats.wilcoxon(row).pvalue for row in log_ratios])
    print(
        f"A/A ({names[1]} vs {names[0]}): per-round median ratio mean {100 * per_round.mean():+.3f}%, "
        f"sd {100 * per_round.std():.3f}%; Wilcoxon p < 0.01 in {np.mean(p < 0.01):.1%}, "
        f"p < 0.05 in {np.mean(p < 0.05):.1%} "
        f"of {len(rounds)} rounds"
    )


if __name__ == "__main__":
    main()
