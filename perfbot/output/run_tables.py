"""A run's tables: median ms and throughput per benchmark, for the terminal and as markdown
(`perfbot run`, `perfbot show`); its failures; and one implementation's cases against the others.
"""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from ..deciding.comparison import shape_text
from ..deciding.picks import picked
from ..errors import BadInput, listed
from ..records.run import FORWARD, Benchmark, Results
from .markdown import TEMPLATES, number

_COLUMNS = (
    "suite",
    "case",
    "shape",
    "dtype",
    "implementation",
    "median ms",
    "samples",
    "TFLOP/s",
    "GB/s",
    "vs fastest baseline",
    "of bound",
)
_NUMERIC = 5  # columns from here on are right-aligned numbers


def _faster_than(results: Results, bench: Benchmark) -> str:
    """ "1.12× torch": how many times faster than the fastest baseline (the subject's own only)."""
    fastest = results.fastest_baseline(bench)
    return faster_cell(*fastest) if fastest else ""


def faster_cell(name: str | None, ratio: float | None) -> str:
    """ "1.12× torch", or an empty cell: the run table's and the comparison's "vs fastest baseline"."""
    return "" if name is None or ratio is None else f"{ratio:.2f}× {name}"


def _bound_shares(results: Results, bench: Benchmark) -> str:
    """ "93.1% copy": the share of each bound's throughput reached (the subject's own only)."""
    return ", ".join(f"{100 * share:.1f}% {name}" for name, share in results.bound_shares(bench))


def _columns(results: Results) -> tuple[str, ...]:
    """_COLUMNS, with the autotune configs after the implementation where a kernel was autotuned."""
    if not any(picked(bench.autotune) for bench in results.benchmarks):
        return _COLUMNS
    return (*_COLUMNS[:_NUMERIC], "autotune config", *_COLUMNS[_NUMERIC:])


def run_rows(results: Results) -> list[tuple[str, ...]]:
    """One row of cells per benchmark (see `_columns`)."""
    tuned = len(_columns(results)) > len(_COLUMNS)
    return [
        (
            bench.suite,
            bench.case,
            shape_text(bench.shape),
            bench.dtype,
            bench.name,
            *((picked(bench.autotune),) if tuned else ()),
            number(bench.median_ms, ".4f"),
            number(len(bench.samples_ms), "d"),
            number(bench.tflops if bench.flops else None, ".1f"),
            number(bench.gbps if bench.bytes else None, ".0f"),
            _faster_than(results, bench),
            _bound_shares(results, bench),
        )
        for bench in results.benchmarks
    ]


def run_table(results: Results) -> Table:
    """Median ms and throughput per benchmark; for the subject's own, the speed relative to the
    fastest baseline and the share of each bound's throughput."""
    table = Table(title="perfbot run (medians)", title_justify="left")
    columns = _columns(results)
    numeric = _NUMERIC + len(columns) - len(_COLUMNS)
    for index, column in enumerate(columns):
        table.add_column(column, justify="right" if index >= numeric else "left")
    for row in run_rows(results):
        table.add_row(*(escape(cell) for cell in row))  # "name[value]" is not markup
    return table


def run_markdown(results: Results) -> str:
    """The run's table, then its failures, as markdown (`perfbot show --markdown`)."""
    columns = _columns(results)
    numeric = _NUMERIC + len(columns) - len(_COLUMNS)
    return TEMPLATES.get_template("run.md.j2").render(
        columns=columns, numeric=numeric, rows=run_rows(results), failures=results.failures
    )


def failures_table(results: Results) -> Table:
    table = Table(title="failures: not timed", title_justify="left", style="red")
    for column in ("suite", "case", "shape", "dtype", "implementation", "reason", "rel. error", "bound"):
        table.add_column(column)
    for failure in results.failures:
        cells = (
            failure.suite,
            failure.case,
            shape_text(failure.shape),
            failure.dtype,
            failure.name,
            failure.reason,
            _fmt(failure.relative_error),
            _fmt(failure.error_bound),
        )
        table.add_row(*(escape(cell) for cell in cells))
    return table


def case_markdown(results: Results, kernel: str | None = None) -> str:
    """One row per case and variant of `kernel` (by default the subject's first own
    implementation): its median ms, each other implementation's on the case, and how many times
    faster `kernel` is than each (above 1.00: faster)."""
    if kernel is None:
        if not results.settings.under_test:
            raise BadInput("the results do not say which implementation is under test; name one")
        kernel = results.settings.under_test[0]
    if not any(b.kernel == kernel for b in results.benchmarks):
        known = sorted({b.kernel for b in results.benchmarks})
        raise BadInput(f"the results have no benchmark of {kernel!r}; they have {listed(known)}")
    others = list(dict.fromkeys(b.kernel for b in results.benchmarks if b.kernel != kernel))
    columns = (
        ["case", "shape", "dtype", "variant", f"{kernel} ms"]
        + [f"{k} ms" for k in others]
        + [f"vs {k}" for k in others]
    )
    rows = []
    for bench in results.benchmarks:
        if bench.kernel != kernel:
            continue
        peers = [results.peer(bench, k) for k in others]
        rows.append(
            [
                bench.case,
                shape_text(bench.shape),
                bench.dtype,
                " ".join([*(f"{k}={v}" for k, v in bench.variant.items()), *_mode_word(bench)]) or "default",
                number(bench.median_ms, ".4f"),
            ]
            + [number(p.median_ms if p else None, ".4f") for p in peers]
            + [number(p.median_ms / bench.median_ms if p else None, ".3f") for p in peers]
        )
    return TEMPLATES.get_template("run.md.j2").render(columns=columns, numeric=4, rows=rows, failures=[])


def _mode_word(bench: Benchmark) -> list[str]:
    """A benchmark's mode as its variant column shows it: nothing for the forward."""
    return [bench.mode] if bench.mode != FORWARD else []


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.3g}"
