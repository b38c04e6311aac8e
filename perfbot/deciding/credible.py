"""Times no GPU can give. A benchmark of the subject's own is "not credible" when it moves its
bytes or does its flops faster than anything measured on this GPU can: its roofline, the case's
flops at the best rate a flops-counting bound reached in the run (a product of two of its inputs alone, say)
and its bytes at the best rate a bytes-only bound reached (a copy of its bytes), allowed
MOST_OVER_BEST times that. A run without such bounds takes the GPU's nominal peaks (NOMINAL), where its model
is known. Such a row is a wrong result, never a speed-up: a result kept across calls, or work
the timed graph does not hold, is timed as nothing.

docs/method.md ("Impossible times") has the figures behind MOST_OVER_BEST: of 676 rows of the
subject's own in this project's H200 runs, the fastest reached 1.005 times the best bound's rate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..records.run import Benchmark

MOST_OVER_BEST = 1.25
# The data sheets' highest FLOP/s of any type (FP8 on Hopper, INT8 on Ampere, with structured
# sparsity: a kernel may count the dense flops it skips) and memory bytes/s (the fastest variant
# of the name), by a part of the GPU's name: no kernel of any type can be credited past these.
NOMINAL: dict[str, tuple[float, float]] = {
    "H200": (3958e12, 4.8e12),
    "H100": (3958e12, 3.9e12),
    "A100": (1248e12, 2.039e12),
}


@dataclass(frozen=True)
class Ceiling:
    """The best rates measured (or the nominal peaks), and where they come from."""

    flops_per_s: float | None
    bytes_per_s: float | None
    source: str


def ceiling(benchmarks: Iterable[Benchmark], bounds: set[str], gpu_name: str | None) -> Ceiling:
    """The best rates the run's bounds reached; each one missing comes from NOMINAL."""
    flops = [b.flops / (b.median_ms * 1e-3) for b in benchmarks if b.kernel in bounds and b.flops and b.median_ms > 0]
    moved = [
        b.bytes / (b.median_ms * 1e-3)
        for b in benchmarks
        if b.kernel in bounds and not b.flops and b.bytes and b.median_ms > 0
    ]
    nominal = next((peaks for part, peaks in NOMINAL.items() if gpu_name and part in gpu_name), None)
    best_flops = max(flops) if flops else (nominal[0] if nominal else None)
    best_bytes = max(moved) if moved else (nominal[1] if nominal else None)
    said = [
        "the fastest flops-counting bound" if flops else ("nominal FLOP/s" if nominal else ""),
        "the fastest bytes-only bound" if moved else ("nominal bandwidth" if nominal else ""),
    ]
    return Ceiling(best_flops, best_bytes, " and ".join(s for s in said if s) or "nothing")


def not_credible(bench: Benchmark, top: Ceiling) -> str | None:
    """Why `bench`'s time is faster than its roofline allows, with the numbers; None if it is not."""
    floors = []
    if bench.flops and top.flops_per_s:
        floors.append(
            (bench.flops / top.flops_per_s, f"{bench.flops:.3g} flops at {top.flops_per_s / 1e12:.4g} TFLOP/s")
        )
    if bench.bytes and top.bytes_per_s:
        floors.append((bench.bytes / top.bytes_per_s, f"{bench.bytes:.3g} bytes at {top.bytes_per_s / 1e9:.4g} GB/s"))
    if not floors:
        return None
    floor_s, how = max(floors)
    least_ms = floor_s * 1e3 / MOST_OVER_BEST
    if bench.median_ms >= least_ms:
        return None
    return (
        f"not credible: {bench.median_ms:.4g} ms is faster than its roofline allows ({floor_s * 1e3:.4g} ms for "
        f"{how}, {top.source} of this run; at most {MOST_OVER_BEST:g} times that rate is credible)"
    )
