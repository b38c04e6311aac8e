"""docs/kernel.md's tables of the backward suites (backward-a100, backward-models and
backward-generated), for kernels/report.py: a suite with a row in another mode than the forward
is judged here, by issue 54's targets, per GELU and mode.

- `backward` (the gradients alone): faster than eager and than compiled, judged paired (the
  median of the per-round ratios with its 95% bootstrap interval: faster when the interval lies
  below 1); within 10% of gemm (cuBLAS computing dx and dW alone, the bound) on every shape and
  within 5% on the large ones, the ratio of medians (fused / gemm <= 1.10, or <= 1.05).
- `forward+backward` (a training step): faster than eager, paired. compiled and gemm (there
  cuBLAS's three matmuls alone) are shown, not judged.

Large: M >= 4096 rows and M·K·N >= 2^34. The backward's two matmuls are 8·M·K·N flops (dx =
dz @ W and dW = dz.T @ x, each 2·M·K·2N): at 2^34 that is 1.4e11 flops, about 0.2 ms at an
H200's 700 TFLOP/s or so, so that a launch's few microseconds are 1-2% of the bound and do not
decide a 5% target; and with 4096 rows or more, dx has 32 row blocks of 128 or more and dW a
reduction that deep, so that cuBLAS runs at its large-matmul rate. Of the backward suites: d4096,
every model shape, and the generated set's odd-m5722, odd-m8660, odd-m9429 and odd-m14735; not
d2048 (2048 rows) nor llama-3-70b-m646 (646 rows, though 2^37 in volume).

Every case needs fused, eager, compiled and gemm in each mode it is timed in; gemm is timed once
per case and serves both GELUs of its file, as in the forward report.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernels.report_paired import Paired, ReportError, judged_pair, misses_lines, summary_table
from perfbot.records.run import FORWARD, Benchmark, variant_name

BACKWARD, FORWARD_BACKWARD = "backward", "forward+backward"
MODES = (BACKWARD, FORWARD_BACKWARD)  # the order of the tables
IMPLEMENTATIONS = ("fused", "eager", "compiled", "gemm")  # needed in each mode a case is timed in
PAIRED = ("eager", "compiled")  # fused / each, paired by round
JUDGED = {BACKWARD: ("eager", "compiled"), FORWARD_BACKWARD: ("eager",)}  # fused must be faster
LARGE_ROWS = 4096
LARGE_VOLUME = 2**34  # M·K·N: the two matmuls' flops over 8
GEMM_RATIO_LARGE = 1.05  # backward, large shapes
GEMM_RATIO_ANY = 1.10  # backward, every shape
ABOUT = {
    BACKWARD: (
        "the gradients alone (`torch.autograd.grad`, the forward outside the timing); gemm is cuBLAS "
        "computing dx and dW alone. Targets: faster than eager and compiled (paired); fused / gemm "
        f"at most {GEMM_RATIO_ANY:.2f}, and {GEMM_RATIO_LARGE:.2f} on the large shapes "
        f"(M ≥ {LARGE_ROWS} and M·K·N ≥ 2^34)."
    ),
    FORWARD_BACKWARD: (
        "a training step, the forward and the gradients in one graph; gemm is cuBLAS's three "
        "matmuls alone. Target: faster than eager (paired); compiled and gemm shown, not judged."
    ),
}


@dataclass(frozen=True)
class Shape:
    """One case of one GELU in one mode: its times and its ratios against each target."""

    case: str
    mode: str
    M: int
    K: int
    N: int
    fused_ms: float
    gemm_ms: float
    paired: dict[str, Paired]  # eager, compiled -> fused / it, paired

    @property
    def large(self) -> bool:
        return self.M >= LARGE_ROWS and self.M * self.K * self.N >= LARGE_VOLUME

    @property
    def of_gemm(self) -> float:
        return self.fused_ms / self.gemm_ms

    @property
    def gemm_limit(self) -> float | None:
        """The most fused / gemm may be; None where gemm is not judged (a training step)."""
        if self.mode != BACKWARD:
            return None
        return GEMM_RATIO_LARGE if self.large else GEMM_RATIO_ANY

    @property
    def misses(self) -> list[str]:
        missed = [name for name in JUDGED[self.mode] if self.paired[name].high >= 1]  # not faster
        limit = self.gemm_limit
        if limit is not None and self.of_gemm > limit:
            missed.append("gemm")
        return missed


def shape_of(where: str, case: str, mode: str, benches: dict[str, Benchmark]) -> Shape:
    """`benches` names each implementation with its mode (`fused[backward]`), as report.py groups them."""
    named = {name: variant_name(name, {}, mode) for name in IMPLEMENTATIONS}
    lacking = [named[name] for name in IMPLEMENTATIONS if named[name] not in benches]
    if lacking:
        needed = ", ".join(named.values())
        raise ReportError(f"{where} case {case}: no {', '.join(lacking)} in the results (needed: {needed})")
    fused = benches[named["fused"]]
    if any(not isinstance(fused.shape.get(dim), int) for dim in ("M", "K", "N")):
        raise ReportError(f"{where} case {case}: {named['fused']}'s shape {fused.shape} has no M, K and N")
    paired = {name: judged_pair(f"{where} case {case}", named[name], named["fused"], benches) for name in PAIRED}
    return Shape(
        case,
        mode,
        fused.shape["M"],
        fused.shape["K"],
        fused.shape["N"],
        fused.median_ms,
        benches[named["gemm"]].median_ms,
        paired,
    )


def mode_tables(gelu: str, mode: str, shapes: list[Shape]) -> list[str]:
    lines = summary_table(
        f"**{gelu} GELU, {mode}, {len(shapes)} shapes.** Ratios fused / other in {ABOUT[mode]} Against "
        "eager and compiled the paired median of the per-round ratios [95% interval], against gemm the "
        "ratio of medians.",
        PAIRED,
        shapes,
    )
    lines += [
        "",
        "| case | M×K→N | large | fused ms | gemm ms | fused / gemm | fused / eager | fused / compiled | misses |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for s in shapes:
        paired = " | ".join(str(s.paired[name]) for name in PAIRED)
        lines.append(
            f"| {s.case} | {s.M}×{s.K}→{s.N} | {'yes' if s.large else '—'} | {s.fused_ms:.4f} | {s.gemm_ms:.4f} "
            f"| {s.of_gemm:.3f} | {paired} | {', '.join(s.misses) or '—'} |"
        )
    return lines + misses_lines(shapes, (*PAIRED, "gemm"))


def gelu_tables(gelu: str, cases: dict[str, dict[str, Benchmark]], wheres: dict[str, str]) -> list[str]:
    """The tables of one GELU of a backward suite, a mode after the other; `wheres` names the
    file, suite and GELU of each case for an error's line."""
    lines: list[str] = []
    for mode in MODES:
        shapes = []
        for case, benches in cases.items():
            modes = {bench.mode for bench in benches.values()}
            if FORWARD in modes:
                raise ReportError(
                    f"{wheres[case]} case {case}: forward rows in a suite with backward ones; "
                    "kernels.report judges a suite of either alone"
                )
            if mode in modes:
                shapes.append(shape_of(wheres[case], case, mode, benches))
        if shapes:
            lines += ["", *mode_tables(gelu, mode, shapes)] if lines else mode_tables(gelu, mode, shapes)
    return lines
