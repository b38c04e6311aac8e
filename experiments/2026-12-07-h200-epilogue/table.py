"""The probe's runs as one table: python3 table.py OUT. Per case, the median of each
implementation and fused and fused-epilogue against eager and gemm; the faster of the two paths."""

import json
import statistics
import sys
from pathlib import Path

COLUMNS = ["suite", "case", "M×K→N", "K%16", "fused ms", "epilogue ms", "eager ms", "gemm ms"]
COLUMNS += ["fused/gemm", "epilogue/gemm", "fused/eager", "epilogue/eager", "faster"]
print("| " + " | ".join(COLUMNS) + " |")
print("|---|---|---|" + "---:|" * 9 + "---|")
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    results = json.loads(path.read_text())
    by_case: dict[str, dict[str, float]] = {}
    shapes = {}
    for bench in results["benchmarks"]:
        by_case.setdefault(bench["case"], {})[bench["kernel"]] = statistics.median(bench["samples_ms"])
        shapes[bench["case"]] = bench["shape"]
    for case, ms in by_case.items():
        if not {"fused", "fused-epilogue", "eager", "gemm"} <= ms.keys():
            continue
        s = shapes[case]
        fused, epilogue, eager, gemm = ms["fused"], ms["fused-epilogue"], ms["eager"], ms["gemm"]
        faster = "epilogue" if epilogue < fused else "fused"
        print(
            f"| {path.stem} | {case} | {s['M']}×{s['K']}→{s['N']} | {s['K'] % 16} | {fused:.4f} | {epilogue:.4f} | "
            f"{eager:.4f} | {gemm:.4f} | {fused / gemm:.3f} | {epilogue / gemm:.3f} | {fused / eager:.3f} | "
            f"{epilogue / eager:.3f} | {faster} |"
        )
