"""The noise between separate runs, from the results files kept in experiments/ (H200 runs of
2026-11-30 on fresh device-tool machines): what a benchmark's median and what the ratio of two
benchmarks of one case move by between two runs of the same code. Writes noise.json beside this
file, which tests/history_store.py draws from to generate stores.

    python experiments/2026-11-30-history-noise/measure_noise.py

Only cuBLAS and PyTorch rows count (gemm, eager, copy): their code did not change between these
runs, while the fused kernel's did. Runs are grouped by timing method and PyTorch version, and
the two sides of an A/B run (one process) are left out. Each pair of runs of one benchmark gives
one difference of log medians; divided by sqrt(2), it is one draw of a single run's deviation.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np

from perfbot import results

HERE = Path(__file__).parent
REFERENCE_KERNELS = ("gemm", "eager", "copy")


def main() -> None:
    medians: dict[tuple, dict[str, float]] = defaultdict(dict)
    ratios: dict[tuple, dict[str, float]] = defaultdict(dict)
    files = []
    for path in sorted(HERE.parent.rglob("*.json")):
        text = path.read_text()
        if '"samples_ms"' not in text or '"comparisons"' in text:
            continue
        run = results.load(path)
        if run.settings.ab_run:
            continue
        files.append(str(path.relative_to(HERE.parent)))
        group = (run.settings.timing, run.environment.torch)
        for bench in run.benchmarks:
            if bench.kernel in REFERENCE_KERNELS:
                medians[(*group, *bench.key)][str(path)] = math.log(bench.median_ms)
            if bench.kernel == "eager":
                gemm = run.peer(bench, "gemm")
                if gemm is not None:
                    ratios[(*group, *bench.key)][str(path)] = math.log(bench.median_ms / gemm.median_ms)
    median_noise = _deviations(medians)
    ratio_noise = _deviations(ratios)
    summary = {name: _summary(values) for name, values in (("median", median_noise), ("ratio", ratio_noise))}
    (HERE / "noise.json").write_text(
        json.dumps(
            {
                "about": "log deviations of one run from the typical, between separate H200 runs (measure_noise.py)",
                "files": files,
                "summary": summary,
                "median": [round(v, 6) for v in median_noise],
                "ratio": [round(v, 6) for v in ratio_noise],
            },
            indent=1,
        )
        + "\n"
    )
    print(json.dumps(summary, indent=1))


def _deviations(groups: dict[tuple, dict[str, float]]) -> list[float]:
    out = []
    for by_run in groups.values():
        for a, b in itertools.combinations(by_run.values(), 2):
            out += [(b - a) / math.sqrt(2), (a - b) / math.sqrt(2)]
    return out


def _summary(values: list[float]) -> dict[str, float]:
    array = np.abs(np.array(values))
    return {
        "pairs": len(values) // 2,
        "mad_sd_percent": round(100 * float(np.median(array)) / 0.6745, 3),
        "sd_percent": round(100 * float(np.std(values)), 3),
        "p90_percent": round(100 * float(np.quantile(array, 0.9)), 3),
        "p99_percent": round(100 * float(np.quantile(array, 0.99)), 3),
    }


if __name__ == "__main__":
    main()
