"""Tables people read: the terminal table of a run."""

from __future__ import annotations

from rich.table import Table

from .results import Benchmark, Results


def _shape_text(shape: dict[str, int]) -> str:
    return f"{shape['M']}×{shape['K']}→{shape['N']}" if set(shape) == {"M", "K", "N"} else str(shape)


def _peer(benchmarks: list[Benchmark], bench: Benchmark, implementation: str) -> Benchmark | None:
    """The benchmark of `implementation` on the same case, with the same GELU when it has one."""
    for other in benchmarks:
        if other.suite == bench.suite and other.case == bench.case and other.dtype == bench.dtype:
            if other.kernel == implementation and implementation == "gemm":
                return other
            if other.kernel.split("[")[0] == implementation and other.approximate == bench.approximate:
                return other
    return None


def run_table(results: Results) -> Table:
    """Median ms, TFLOP/s, % of cuBLAS gemm throughput, and speedup over eager, per benchmark."""
    table = Table(title="perfbot run (medians)", title_justify="left")
    for column in ("suite", "case", "M×K→N", "dtype", "kernel"):
        table.add_column(column)
    for column in ("median ms", "samples", "TFLOP/s", "% of gemm", "× eager"):
        table.add_column(column, justify="right")
    for bench in results.benchmarks:
        gemm = _peer(results.benchmarks, bench, "gemm")
        eager = _peer(results.benchmarks, bench, "eager")
        table.add_row(
            bench.suite,
            bench.case,
            _shape_text(bench.shape),
            bench.dtype,
            bench.kernel,
            f"{bench.median_ms:.4f}",
            str(len(bench.samples_ms)),
            f"{bench.tflops:.1f}" if bench.flops else "",
            f"{100 * gemm.median_ms / bench.median_ms:.1f}%" if gemm else "",
            f"{eager.median_ms / bench.median_ms:.2f}×" if eager else "",
        )
    return table


def failures_table(results: Results) -> Table:
    table = Table(title="failures: not timed", title_justify="left", style="red")
    for column in ("suite", "case", "M×K→N", "dtype", "kernel", "reason", "rel. error", "bound"):
        table.add_column(column)
    for failure in results.failures:
        table.add_row(
            failure.suite,
            failure.case,
            _shape_text(failure.shape),
            failure.dtype,
            failure.kernel,
            failure.reason,
            _fmt(failure.relative_error),
            _fmt(failure.error_bound),
        )
    return table


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.3g}"
