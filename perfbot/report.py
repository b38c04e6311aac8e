"""Tables people read: a run's results in the terminal and in markdown."""

from __future__ import annotations

from dataclasses import dataclass

import jinja2
from rich.markup import escape
from rich.table import Table

from .results import Benchmark, Results

_COLUMNS = ("suite", "case", "M×K→N", "dtype", "kernel", "median ms", "samples", "TFLOP/s", "GB/s", "% of gemm", "× eager")
_NUMERIC = 5  # columns from here on are right-aligned numbers

_MARKDOWN = jinja2.Environment(autoescape=False, trim_blocks=True, lstrip_blocks=True).from_string(
    """| {{ columns | join(" | ") }} |
|{% for c in columns %}{{ "---:|" if loop.index0 >= numeric else "---|" }}{% endfor %}

{% for row in rows %}
| {{ row | map("md") | join(" | ") }} |
{% endfor %}
"""
)
_MARKDOWN.environment.filters["md"] = lambda text: str(text).replace("|", "\\|")


@dataclass(frozen=True)
class RunRow:
    """One benchmark of a run, with its throughput relative to gemm and eager on the same case."""

    bench: Benchmark
    gemm: Benchmark | None
    eager: Benchmark | None

    def cells(self) -> tuple[str, ...]:
        bench = self.bench
        return (
            bench.suite,
            bench.case,
            _shape_text(bench.shape),
            bench.dtype,
            bench.kernel,
            f"{bench.median_ms:.4f}",
            str(len(bench.samples_ms)),
            f"{bench.tflops:.1f}" if bench.flops else "",
            f"{bench.gbps:.0f}" if bench.bytes else "",
            f"{100 * self.gemm.median_ms / bench.median_ms:.1f}%" if self.gemm else "",
            f"{self.eager.median_ms / bench.median_ms:.2f}×" if self.eager else "",
        )


def run_rows(results: Results) -> list[RunRow]:
    rows = []
    for bench in results.benchmarks:
        if bench.flops:  # ratios to gemm and eager mean something only for the same arithmetic
            rows.append(RunRow(bench, _peer(results.benchmarks, bench, "gemm"), _peer(results.benchmarks, bench, "eager")))
        else:
            rows.append(RunRow(bench, None, None))
    return rows


def run_table(results: Results) -> Table:
    """Median ms, TFLOP/s, % of cuBLAS gemm throughput, and speedup over eager, per benchmark."""
    table = Table(title="perfbot run (medians)", title_justify="left")
    for index, column in enumerate(_COLUMNS):
        table.add_column(column, justify="right" if index >= _NUMERIC else "left")
    for row in run_rows(results):
        table.add_row(*(escape(cell) for cell in row.cells()))  # "fused[tanh]" is not markup
    return table


def run_markdown(results: Results) -> str:
    return _MARKDOWN.render(columns=_COLUMNS, numeric=_NUMERIC, rows=[row.cells() for row in run_rows(results)])


def failures_table(results: Results) -> Table:
    table = Table(title="failures: not timed", title_justify="left", style="red")
    for column in ("suite", "case", "M×K→N", "dtype", "kernel", "reason", "rel. error", "bound"):
        table.add_column(column)
    for failure in results.failures:
        cells = (failure.suite, failure.case, _shape_text(failure.shape), failure.dtype, failure.kernel,
                 failure.reason, _fmt(failure.relative_error), _fmt(failure.error_bound))
        table.add_row(*(escape(cell) for cell in cells))
    return table


_CASE_KERNELS = ("gemm", "eager", "compiled", "max-autotune", "fused-pointer")


def case_markdown(results: Results, kernel: str = "fused") -> str:
    """One row per case and GELU variant: the median ms of `kernel` and of each implementation
    it is measured against, and `kernel`'s speed relative to each (above 1.00: faster)."""
    present = [k for k in _CASE_KERNELS if any(b.kernel.split("[")[0] == k for b in results.benchmarks)]
    has_copy = any(b.kernel == "copy" for b in results.benchmarks)
    columns = ["case", "M×K→N", "dtype", "GELU", f"{kernel} ms"] + [f"{k} ms" for k in present] + [
        f"vs {k}" for k in present
    ] + (["GB/s", "of copy GB/s"] if has_copy else [])
    rows = []
    for bench in results.benchmarks:
        if bench.kernel.split("[")[0] != kernel:
            continue
        peers = [_peer(results.benchmarks, bench, k) for k in present]
        rows.append(
            [bench.case, _shape_text(bench.shape), bench.dtype, "tanh" if bench.approximate == "tanh" else "erf",
             f"{bench.median_ms:.4f}"]
            + [f"{p.median_ms:.4f}" if p else "" for p in peers]
            + [f"{p.median_ms / bench.median_ms:.3f}" if p else "" for p in peers]
            + (_bandwidth_cells(results.benchmarks, bench) if has_copy else [])
        )
    return _MARKDOWN.render(columns=columns, numeric=4, rows=rows)


def _bandwidth_cells(benchmarks: list[Benchmark], bench: Benchmark) -> list[str]:
    """The bandwidth `bench` reached, and its share of a device-to-device copy's on the same case."""
    copy = _peer(benchmarks, bench, "copy")
    share = f"{100 * bench.gbps / copy.gbps:.1f}%" if copy and copy.bytes else ""
    return [f"{bench.gbps:.0f}", share]


def _shape_text(shape: dict[str, int]) -> str:
    return f"{shape['M']}×{shape['K']}→{shape['N']}" if set(shape) == {"M", "K", "N"} else str(shape)


def _peer(benchmarks: list[Benchmark], bench: Benchmark, implementation: str) -> Benchmark | None:
    """The benchmark of `implementation` on the same case, with the same GELU when it has one."""
    for other in benchmarks:
        if (other.suite, other.case, other.dtype) != (bench.suite, bench.case, bench.dtype):
            continue
        if implementation in ("gemm", "copy") and other.kernel == implementation:
            return other
        if other.kernel.split("[")[0] == implementation and other.approximate == bench.approximate:
            return other
    return None


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.3g}"
