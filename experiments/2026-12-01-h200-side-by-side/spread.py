"""The figures this folder's README and docs/method.md quote from the A/A files: per run, rounds
per row; per band of kernel time, the interquartile range of the blocks' median per-round log
ratio (head/base, %), times the square root of the block's rounds, against aa4 (2026-11-30);
per band, the median ratio of rounds with the base first and with the head first (rounds were
flipped by parity in sbs1-sbs3); for aa4's 3-9 ms cases, the spread of the per-round ratio and
how the ratios of a case's implementations move together; and fused and its neighbours on
models/t5-v1.1-xl in every full-width A/A.

    python3 experiments/2026-12-01-h200-side-by-side/spread.py > experiments/2026-12-01-h200-side-by-side/runs/spread.txt
"""

import gzip
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
OLD = HERE.parent / "2026-11-30-h200-full-width" / "runs"
RUNS = {
    "aa3": OLD / "aa3/aa-full-1gpu",
    "aa4": OLD / "aa4/aa-full-1gpu",
    **{name: HERE / "runs" / name / "aa-full-1gpu" for name in ("sbs1", "sbs2", "sbs3", "sbs4", "sbs5")},
}
BLOCKS = {"aa3": 5, "aa4": 5}  # blocks of five before 2026-12-01, of four after
BANDS = [0, 0.01, 0.03, 0.06, 0.1, 0.2, 0.5, 1, 3, 10]


def pairs(run: str) -> list[tuple[str, str, str, np.ndarray, np.ndarray]]:
    """(suite, case, kernel, base samples, head samples), cut to the rounds both took."""
    sides = [json.load(gzip.open(RUNS[run] / f"{side}.json.gz")) for side in ("base", "head")]
    head = {(b["suite"], b["case"], b["kernel"]): b for b in sides[1]["benchmarks"]}
    out = []
    for b in sides[0]["benchmarks"]:
        h = head[(b["suite"], b["case"], b["kernel"])]
        n = min(len(b["samples_ms"]), len(h["samples_ms"]))
        out.append((b["suite"], b["case"], b["kernel"], np.array(b["samples_ms"][:n]), np.array(h["samples_ms"][:n])))
    return out


def log_ratio(base: np.ndarray, head: np.ndarray) -> np.ndarray:
    return 100 * np.log(head / base)


def block_spread(run: str) -> dict[tuple[str, str, str], tuple[float, float]]:
    block = BLOCKS.get(run, 4)
    spread = {}
    for suite, case, kernel, base, head in pairs(run):
        n = len(base) // block * block
        medians = np.median(log_ratio(base[:n], head[:n]).reshape(-1, block), axis=1)
        spread[(suite, case, kernel)] = (float(np.median(base)), float(np.subtract(*np.percentile(medians, [75, 25]))) * block**0.5)
    return spread


print("rounds per row (median, most), and of the rows over 2.5 ms (fewest, most)")
for run in RUNS:
    rows = pairs(run)
    counts = [len(base) for *_, base, _ in rows]
    large = [len(base) for *_, base, _ in rows if np.median(base) > 2.5]
    print(f"  {run}: {np.median(counts):.0f}, {max(counts)}; over 2.5 ms {min(large)}-{max(large)}")

old = block_spread("aa4")
for run in ("sbs1", "sbs2", "sbs3", "sbs4", "sbs5"):
    new = block_spread(run)
    print(f"\n{run} against aa4: interquartile range of block medians x sqrt(rounds per block), %; parity")
    rows = pairs(run)
    for low, high in zip(BANDS, BANDS[1:]):
        keys = [k for k in new if k in old and low <= new[k][0] < high]
        even = [np.median(log_ratio(b, h)[0::2]) for s, c, k, b, h in rows if low <= np.median(b) < high]
        odd = [np.median(log_ratio(b, h)[1::2]) for s, c, k, b, h in rows if low <= np.median(b) < high]
        print(
            f"  {low:>5}-{high:<4} ms, {len(keys):3d} rows: {np.median([old[k][1] for k in keys]):5.2f} -> "
            f"{np.median([new[k][1] for k in keys]):5.2f}; even rounds {np.median(even):+.2f}, odd {np.median(odd):+.2f}"
        )

print("\naa4, cases of 3-9 ms: per-round log ratio spread (sd, %), correlation across a case's implementations")
by_case: dict[tuple[str, str], list[np.ndarray]] = {}
for suite, case, kernel, base, head in pairs("aa4"):
    if np.median(base) > 2.5:
        by_case.setdefault((suite, case), []).append(log_ratio(base, head))
for (suite, case), ratios in by_case.items():
    n = min(len(r) for r in ratios)
    matrix = np.array([r[:n] for r in ratios])
    correlation = np.corrcoef(matrix)[np.triu_indices(len(ratios), 1)].mean()
    print(f"  {suite}/{case}: sd {', '.join(f'{r.std():.2f}' for r in ratios)}; mean correlation {correlation:.2f}")

print("\nmodels/t5-v1.1-xl, median per-round log ratio (%), and blocks below 1")
for run in RUNS:
    block = BLOCKS.get(run, 4)
    line = []
    for suite, case, kernel, base, head in pairs(run):
        if (suite, case) == ("models", "t5-v1.1-xl"):
            ratio = log_ratio(base, head)
            n = len(ratio) // block * block
            below = np.mean(np.median(ratio[:n].reshape(-1, block), axis=1) < 0)
            line.append(f"{kernel} {np.median(ratio):+.2f} ({below:.0%})")
    print(f"  {run}: " + "; ".join(line))
