"""The prefill decomposition of a probe_miss_causes.py run, as a markdown table:

    python experiments/2026-12-02-h200-miss-causes/causes_table.py runs/c6/causes.json

Each row: the plan's tile, the share of its launch that is real (`configs.filled`), fused / gemm
at the shape, and the three measured factors whose product it is (the probe's docstring).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def rows(results: dict) -> list[str]:
    lines = [
        "| case | M×K→N | plan tile | filled | fused / gemm | shape / full | tile rate (full) | gemm full / shape |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in results["prefill"]:
        m, plan = row["medians_ms"], row["plan"]
        lines.append(
            f"| {row['case']} | {row['M']}×{row['K']}→{row['N']} | {plan['BLOCK_M']}×{plan['BLOCK_N']} "
            f"| {row['filled']['plan']:.3f} | {m['plan'] / m['gemm']:.3f} | {m['plan'] / m['plan full']:.3f} "
            f"| {m['plan full'] / m['gemm plan full']:.3f} | {m['gemm plan full'] / m['gemm']:.3f} |"
        )
    return lines


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: causes_table.py CAUSES_JSON")
    print("\n".join(rows(json.loads(Path(sys.argv[1]).read_text()))))


if __name__ == "__main__":
    main()
