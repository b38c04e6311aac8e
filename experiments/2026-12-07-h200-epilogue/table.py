"""The probe's runs as one table: python3 table.py OUT. Per case, the median of each
implementation; fused, fused-epilogue and fused-layer against eager and gemm; the fastest of them."""

import json
import statistics
import sys
from pathlib import Path

OURS = {"fused": "fused", "fused-epilogue": "epilogue", "fused-layer": "layer"}
COLUMNS = ["suite", "case", "M×K→N", "K%16", *(f"{short} ms" for short in OURS.values()), "eager ms", "gemm ms"]
COLUMNS += [f"{short}/{base}" for base in ("gemm", "eager") for short in OURS.values()] + ["fastest"]
print("| " + " | ".join(COLUMNS) + " |")
print("|---|---|---|" + "---:|" * (len(COLUMNS) - 4) + "---|")
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    results = json.loads(path.read_text())
    by_case: dict[str, dict[str, float]] = {}
    shapes = {}
    for bench in results["benchmarks"]:
        by_case.setdefault(bench["case"], {})[bench["kernel"]] = statistics.median(bench["samples_ms"])
        shapes[bench["case"]] = bench["shape"]
    for case, ms in by_case.items():
        if not {*OURS, "eager", "gemm"} <= ms.keys():
            continue
        s = shapes[case]
        ours = [ms[name] for name in OURS]
        ratios = [t / ms[base] for base in ("gemm", "eager") for t in ours]
        fastest = min(OURS, key=lambda name: ms[name])
        cells = [path.stem, case, f"{s['M']}×{s['K']}→{s['N']}", str(s["K"] % 16)]
        cells += [f"{t:.4f}" for t in (*ours, ms["eager"], ms["gemm"])] + [f"{r:.3f}" for r in ratios] + [OURS[fastest]]
        print("| " + " | ".join(cells) + " |")
