"""The t5 row of this folder's full-width A/As, as ../2026-12-01-h200-side-by-side/spread.py gives
it for the earlier ones: fused and its neighbours on models/t5-v1.1-xl, the median per-round log
ratio head/base (%) and the share of blocks (four rounds) below 1; and the rows of 0.03-0.08 ms
with their rounds.

    python3 experiments/2026-12-01-h200-short-kernel-gate/t5.py > experiments/2026-12-01-h200-short-kernel-gate/runs/t5.txt
"""

import gzip
import json
from pathlib import Path

import numpy as np

RUNS = Path(__file__).parent / "runs"
A_AS = {"fw1 gate 0.03": "fw1/aa-gate-0.03", "fw1 gate 0.08": "fw1/aa-repo", "ad1 adopted": "ad1/aa-adopted"}

print("models/t5-v1.1-xl, median per-round log ratio (%), and blocks below 1")
for name, folder in A_AS.items():
    base, head = (json.load(gzip.open(RUNS / folder / f"{side}.json.gz"))["benchmarks"] for side in ("base", "head"))
    heads = {(b["suite"], b["case"], b["kernel"]): b for b in head}
    line = []
    for b in base:
        if (b["suite"], b["case"]) == ("models", "t5-v1.1-xl"):
            h = heads[(b["suite"], b["case"], b["kernel"])]
            n = min(len(b["samples_ms"]), len(h["samples_ms"]))
            ratio = 100 * np.log(np.array(h["samples_ms"][:n]) / np.array(b["samples_ms"][:n]))
            whole = n // 4 * 4
            below = np.mean(np.median(ratio[:whole].reshape(-1, 4), axis=1) < 0)
            line.append(f"{b['kernel']} {np.median(ratio):+.2f} ({below:.0%})")
    print(f"  {name}: " + "; ".join(line))

print("\nrows of 0.03-0.08 ms (baseline median): count, rounds (median, most)")
for name, folder in A_AS.items():
    rows = json.load(gzip.open(RUNS / folder / "comparison.json.gz"))["comparisons"]
    band = [r["samples"] for r in rows if 0.03 <= r["baseline_median_ms"] < 0.08]
    print(f"  {name}: {len(band)} rows, {np.median(band):g}, {max(band)}")
