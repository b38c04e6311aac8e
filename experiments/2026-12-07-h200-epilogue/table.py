"""The probe's runs as one table: python3 table.py OUT. Per case and GELU: the path fused's plan
took (and why, where the epilogue path stood in), then the median of the per-round ratios of
fused against eager, compiled and gemm, and of the fused launch (fused-launch) and the epilogue path
(fused-epilogue) against compiled; then a summary against issue 55's targets. The rounds are
perfbot's interleaved samples, so each ratio is paired."""

import json
import statistics
import sys
from pathlib import Path


def paired(samples: dict[str, list[float]], current: str, baseline: str) -> float | None:
    if current not in samples or baseline not in samples:
        return None
    return statistics.median(c / b for c, b in zip(samples[current], samples[baseline], strict=True))


def shown(ratio: float | None) -> str:
    return "" if ratio is None else f"{ratio:.3f}"


COLUMNS = ["suite", "case", "M×K→N", "GELU", "fused's plan", "fused/eager", "fused/compiled", "fused/gemm"]
COLUMNS += ["launch/compiled", "epilogue/compiled", "fused/launch"]
print("| " + " | ".join(COLUMNS) + " |")
print("|---|---|---|---|---|" + "---:|" * 6)
summary: list[tuple[str, float, float, float]] = []
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    results = json.loads(path.read_text())
    rows: dict[tuple[str, str], dict[str, list[float]]] = {}
    plans, shapes, gemm = {}, {}, {}
    for bench in results["benchmarks"]:
        gelu = bench["variant"].get("approximate", "none")
        if bench["kernel"] == "gemm":
            gemm[bench["case"]] = bench["samples_ms"]
            continue
        rows.setdefault((bench["case"], gelu), {})[bench["kernel"]] = bench["samples_ms"]
        shapes[bench["case"]] = bench["shape"]
        if bench["kernel"] == "fused":
            plan = bench["config"]
            plans[(bench["case"], gelu)] = plan["path"] + (f" ({plan['reason']})" if "reason" in plan else "")
    for (case, gelu), samples in sorted(rows.items()):
        if "fused" not in samples:
            continue
        samples = {**samples, "gemm": gemm[case]} if case in gemm else samples
        s = shapes[case]
        ratios = [
            paired(samples, "fused", "eager"),
            paired(samples, "fused", "compiled"),
            paired(samples, "fused", "gemm"),
            paired(samples, "fused-launch", "compiled"),
            paired(samples, "fused-epilogue", "compiled"),
            paired(samples, "fused", "fused-launch"),
        ]
        print(
            f"| {path.stem} | {case} | {s['M']}×{s['K']}→{s['N']} | {gelu} | {plans[(case, gelu)]} | "
            + " | ".join(shown(r) for r in ratios)
            + " |"
        )
        if None not in ratios[:3]:
            summary.append((f"{path.stem}/{case}/{gelu}", *ratios[:3]))  # type: ignore[arg-type]
if summary:
    print()
    print(f"{len(summary)} rows with fused, eager, compiled and gemm:")
    for name, at in (("eager", 1), ("compiled", 2)):
        over = sorted((row[at], row[0]) for row in summary if row[at] > 1)
        listed = ", ".join(f"{n} {r:.3f}" for r, n in over)
        print(f"- fused over {name} (median paired ratio > 1): {len(over)}: {listed}")
    by_gemm = [row[3] for row in summary]
    print(f"- fused/gemm: median {statistics.median(by_gemm):.3f}, worst {max(by_gemm):.3f}")
