"""What people read: a run's tables, and a comparison as a PR comment, a terminal table and JSON."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from rich.markup import escape
from rich.table import Table

from .compare import Comparison, Report
from .results import Benchmark, Results

# The hidden line by which the bot finds its own PR comment again. Rendered text can never
# contain it: every text from files is HTML-escaped ("<" becomes "&lt;").
MARKER = "<!-- perfbot-report -->"
GITHUB_COMMENT_LIMIT = 65536

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
            rows.append(RunRow(bench, results.peer(bench, "gemm"), results.peer(bench, "eager")))
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
        peers = [results.peer(bench, k) for k in present]
        rows.append(
            [bench.case, _shape_text(bench.shape), bench.dtype, "tanh" if bench.approximate == "tanh" else "erf",
             f"{bench.median_ms:.4f}"]
            + [f"{p.median_ms:.4f}" if p else "" for p in peers]
            + [f"{p.median_ms / bench.median_ms:.3f}" if p else "" for p in peers]
            + (_bandwidth_cells(results, bench) if has_copy else [])
        )
    return _MARKDOWN.render(columns=columns, numeric=4, rows=rows)


def _bandwidth_cells(results: Results, bench: Benchmark) -> list[str]:
    """The bandwidth `bench` reached, and its share of a device-to-device copy's on the same case."""
    copy = results.peer(bench, "copy")
    share = f"{100 * bench.gbps / copy.gbps:.1f}%" if copy and copy.bytes else ""
    return [f"{bench.gbps:.0f}", share]


def _shape_text(shape: dict[str, int]) -> str:
    return f"{shape['M']}×{shape['K']}→{shape['N']}" if set(shape) == {"M", "K", "N"} else str(shape)


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.3g}"


_VERDICT_ICONS = {"regression": "🔺 regression", "improvement": "🟢 improvement", "unchanged": "unchanged",
                  "inconclusive": "❔ inconclusive"}
_ENVIRONMENT_KEYS = ("gpu_name", "gpu_sm_count", "driver", "cuda", "torch", "triton", "triton_commit", "kernels_commit")


def markdown_escape(value: Any) -> str:
    """Text from files or git, made inert in a markdown table: no HTML (so no forged marker),
    no pipes or newlines (so no broken table), no emphasis or links."""
    if value is None:
        return "—"
    text = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = re.sub(r"[\r\n]+", " ", text)
    return re.sub(r"([\\`*_\[\]|#!])", r"\\\1", text)


def label(bench: Benchmark) -> str:
    where = f"{bench.suite}/{bench.case} · " if bench.suite else ""
    return markdown_escape(f"{bench.kernel} · {where}{_shape_text(bench.shape)} {bench.dtype}")


def _comment_row(c: Comparison) -> str:
    verdict = ("❌ " if c.fails else "") + _VERDICT_ICONS[c.verdict]
    interval = f"[{c.estimate.low:.4f}, {c.estimate.high:.4f}]" if c.estimate else "—"
    tflops = f"{c.current.tflops:.0f}" if c.current.flops else ""
    eager = f"{c.speedup_vs_eager:.2f}×" if c.speedup_vs_eager else ""
    cells = [label(c.current), f"{c.baseline.median_ms:.4f}", f"{c.current.median_ms:.4f}",
             f"{c.change_percent:+.2f}%", interval, verdict, tflops, eager]
    return "| " + " | ".join(cells) + " |"


def _notes(report: Report) -> list[str]:
    notes = []
    for c in report.comparisons:
        if c.config_change:
            notes.append(f"{label(c.current)}: kernel config changed ({markdown_escape(c.config_change)}) — "
                         f"a likely cause of any change in its time")
        if c.verdict in ("regression", "inconclusive"):
            notes.append(f"{label(c.current)}: {markdown_escape(c.reason)}")
    for d in report.differences:
        notes.append(f"environment differs: {d.field} {markdown_escape(d.baseline)} → {markdown_escape(d.current)}")
    for side, environment in (("baseline", report.baseline_environment), ("current", report.current_environment)):
        if environment.get("clock_drift"):
            notes.append(f"{side} run: clocks drifted — {markdown_escape(environment['clock_drift'])}")
        if environment.get("throttled_rounds"):
            reasons = ", ".join(environment.get("throttle_reasons", []))
            notes.append(f"{side} run: {environment['throttled_rounds']} timing round(s) while NVML reported "
                         f"throttling ({markdown_escape(reasons)}); those samples are flagged in the results")
    return notes


_COMMENT = jinja2.Environment(
    loader=jinja2.PackageLoader("perfbot", "templates"), autoescape=False, trim_blocks=True, lstrip_blocks=True,
    keep_trailing_newline=True,
)
_COMMENT.filters.update(md=markdown_escape, label=label, shape=_shape_text, basename=lambda path: Path(path).name)


def comment_markdown(report: Report, limit: int = GITHUB_COMMENT_LIMIT) -> str:
    """The PR comment: verdict line first, changed rows, unchanged rows folded, environments,
    and the hidden marker. Over `limit` characters, unchanged rows go first, then changed rows
    from the end, each with a note saying so."""
    order = {"regression": 0, "inconclusive": 1, "improvement": 2}
    changed = sorted((c for c in report.comparisons if c.verdict != "unchanged"),
                     key=lambda c: (not c.fails, order[c.verdict], -abs(c.change_percent)))
    unchanged = [c for c in report.comparisons if c.verdict == "unchanged"]
    template = _COMMENT.get_template("comment.md.j2")
    confidence = f"{report.comparisons[0].estimate.confidence:.0%}" if report.comparisons and report.comparisons[0].estimate else "95%"

    def render(rows: list[Comparison], folded: list[Comparison]) -> str:
        return template.render(
            report=report, rows=rows, unchanged=folded, omitted_rows=len(changed) - len(rows),
            omitted_unchanged=len(unchanged) - len(folded), notes=_notes(report), row=_comment_row,
            confidence=confidence, environment_keys=_ENVIRONMENT_KEYS,
            differing={d.field for d in report.differences}, marker=MARKER,
        )

    text = render(changed, unchanged)
    if len(text) > limit:
        text = render(changed, [])
    keep = len(changed)
    while len(text) > limit and keep > 0:
        keep = keep * 3 // 4
        text = render(changed[:keep], [])
    return fit_comment(text, limit)


def fit_comment(body: str, limit: int = GITHUB_COMMENT_LIMIT) -> str:
    """`body` if it fits in a GitHub comment; else its first lines, with any `<details>` left
    open closed again, a note saying it was cut, and the marker, all within `limit` characters."""
    if len(body) <= limit:
        return body
    note = (f"\n\n_…the report was cut here: it has {len(body):,} characters, over GitHub's limit of "
            f"{limit:,} for a comment. The full report is in the workflow run's artifact._\n{MARKER}\n")
    closing = "\n</details>\n"
    room = limit - len(note) - closing.count("\n") - len(closing) * body.count("<details>")
    kept = body[: max(room, 0)]
    kept = kept[: kept.rfind("\n") + 1] if "\n" in kept else kept
    unclosed = max(kept.count("<details>") - kept.count("</details>"), 0)
    return kept + closing * unclosed + note


def compare_table(report: Report) -> Table:
    table = Table(title=report.headline, title_justify="left")
    for column in ("benchmark", "baseline ms", "current ms", "change", "CI of ratio", "verdict", "TFLOP/s", "× eager"):
        table.add_column(column, justify="right" if column not in ("benchmark", "verdict", "CI of ratio") else "left")
    for c in report.comparisons:
        cur = c.current
        name = f"{cur.kernel} {cur.suite}/{cur.case} {_shape_text(cur.shape)} {cur.dtype}"
        table.add_row(
            escape(name), f"{c.baseline.median_ms:.4f}", f"{cur.median_ms:.4f}", f"{c.change_percent:+.2f}%",
            f"[{c.estimate.low:.4f}, {c.estimate.high:.4f}]" if c.estimate else "—",
            ("FAIL " if c.fails else "") + c.verdict,
            f"{cur.tflops:.0f}" if cur.flops else "", f"{c.speedup_vs_eager:.2f}×" if c.speedup_vs_eager else "",
        )
    return table


def comparison_json(report: Report) -> dict[str, Any]:
    def identity(bench: Any) -> dict[str, Any]:
        return {"kernel": bench.kernel, "shape": bench.shape, "dtype": bench.dtype, "suite": bench.suite, "case": bench.case}

    return {
        "format": 1,
        "headline": report.headline,
        "fails": report.fails,
        "geomean_ratio": report.geomean_ratio,
        "interleaved": report.interleaved,
        "comparisons": [
            {
                **identity(c.current),
                "baseline_median_ms": c.baseline.median_ms,
                "current_median_ms": c.current.median_ms,
                "change_percent": c.change_percent,
                "ci": [c.estimate.low, c.estimate.high] if c.estimate else None,
                "p_value": c.p_value,
                "q_value": c.q_value,
                "verdict": c.verdict,
                "fails": c.fails,
                "reason": c.reason,
                "config_change": c.config_change,
                "fail_percent": c.rule.fail_percent,
            }
            for c in report.comparisons
        ],
        "added": [identity(b) for b in report.added],
        "removed": [identity(b) for b in report.removed],
        "failures": [{**identity(f), "reason": f.reason} for f in report.failures],
        "environment_differences": [{"field": d.field, "baseline": d.baseline, "current": d.current}
                                    for d in report.differences],
    }


def _bisect_headline(outcome: Any) -> str:
    if outcome.first_bad:
        return f"first bad commit {outcome.first_bad[:12]}"
    return "first bad commit is one of " + ", ".join(c[:12] for c in outcome.candidates)


def bisect_table(outcome: Any) -> Table:
    """Every probed commit, oldest first: samples, median, change from good, verdict."""
    table = Table(title=f"perfbot bisect: {_bisect_headline(outcome)}", title_justify="left")
    for column in ("commit", "subject", "samples", "median ms", "vs good", "verdict", "note"):
        table.add_column(column, justify="right" if column in ("samples", "median ms", "vs good") else "left")
    good_ms = outcome.probes[0].median_ms if outcome.probes and outcome.probes[0].samples else None
    for p in outcome.probes:
        change = f"{100 * (p.median_ms / good_ms - 1):+.2f}%" if p.samples and good_ms else ""
        verdict = p.verdict or ("skipped" if p.unusable else "—")
        if p.sha == outcome.first_bad:
            verdict += " (first bad)"
        table.add_row(p.sha[:12], escape(p.subject[:48]), str(len(p.samples)),
                      f"{p.median_ms:.4f}" if p.samples else "—", change, verdict, escape(p.note or p.unusable or ""))
    return table


def bisect_markdown(outcome: Any, repo: str) -> str:
    probes = list(outcome.probes)
    good_ms = probes[0].median_ms if probes and probes[0].samples else 1.0
    return _COMMENT.get_template("bisect.md.j2").render(
        headline=_bisect_headline(outcome), repo=repo, good=probes[0].sha if probes else "",
        bad=probes[-1].sha if probes else "", probes=probes, measured=sum(bool(p.samples) for p in probes),
        total=outcome.range_size, good_ms=good_ms, non_monotonic=outcome.non_monotonic,
    )
