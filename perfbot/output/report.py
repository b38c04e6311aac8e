"""What people read: a run's tables, and a comparison as a PR comment and a terminal table.

Markdown is safe by construction: every value a template prints goes through `markdown_escape`
(jinja2's `finalize`), except the few strings perfbot formats itself and marks `Markdown`
(numbers, verdict names, the marker). So no file perfbot reads can put live HTML, an HTML
comment, a forged marker, a live @mention, a bare URL that GitHub would link, or a broken table
into what it writes. Text shown as one (a suite and its case) is joined before it is escaped:
two halves escaped apart can still make a link between them ("https:" and "/evil.example").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import jinja2
from rich.markup import escape
from rich.table import Table

from ..deciding.comparison import ENVIRONMENT_KEYS, Row, Summary, label, shape_text
from ..errors import BadInput, listed
from ..records.run import Benchmark, Merge, Results, variant_name
from ..records.schema import GPU_LABEL

# The hidden line by which the bot finds its own PR comment again. Rendered text can never
# contain it: every value from a file is escaped ("<" becomes "&lt;").
MARKER = "<!-- perfbot-report -->"
GITHUB_COMMENT_LIMIT = 65536
# The longest a single value is shown in markdown; a longer one is cut with "…".
MAX_SHOWN = 300


class Markdown(str):
    """Markdown that perfbot itself wrote (a formatted number, a fixed word): printed as is."""


def markdown_escape(value: object, limit: int = MAX_SHOWN) -> str:
    """Any value as inert inline markdown: on one line, at most `limit` characters, no HTML (so
    no comment opened and no marker forged), no table cell ended, no emphasis, link, heading or
    code span started, no live @mention (a zero-width joiner follows every @, and GitHub
    notifies no one for "@\u200duser") and no bare URL that GitHub's autolinks would make a
    link of (one follows the ":" of every "://" and the "www" of every "www.")."""
    if value is None:
        return "—"
    text = " ".join(re.sub(r"[\x00-\x1f\x7f]", " ", str(value)).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = re.sub(r"([\\`*_\[\]|#!~])", r"\\\1", text)
    text = text.replace("://", ":\u200d//")
    text = re.sub(r"(?i)(www)\.", "\\1\u200d.", text)
    return text.replace("@", "@\u200d")


def _finalize(value: object) -> str:
    return value if isinstance(value, Markdown) else markdown_escape(value)


def _number(value: float | None, spec: str, suffix: str = "") -> Markdown:
    return Markdown("" if value is None else f"{value:{spec}}{suffix}")


_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("perfbot.output", "templates"),
    autoescape=False,
    finalize=_finalize,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
)
_TEMPLATES.filters.update(label=label, shape=shape_text, number=_number)
_TEMPLATES.globals.update(marker=Markdown(MARKER), Markdown=Markdown)

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
    return _faster_cell(*fastest) if fastest else ""


def _throughput(tflops: float | None, gbps: float | None) -> Markdown:
    """TFLOP/s where the benchmark counts flops, else GB/s (a memory-bound one)."""
    if tflops is not None:
        return Markdown(f"{tflops:.0f} TFLOP/s")
    return Markdown(f"{gbps:.0f} GB/s" if gbps is not None else "")


def _faster_cell(name: str | None, ratio: float | None) -> str:
    return "" if name is None or ratio is None else f"{ratio:.2f}× {name}"


def _bound_shares(results: Results, bench: Benchmark) -> str:
    """ "93.1% copy": the share of each bound's throughput reached (the subject's own only)."""
    return ", ".join(f"{100 * share:.1f}% {name}" for name, share in results.bound_shares(bench))


def run_rows(results: Results) -> list[tuple[str, ...]]:
    """One row of cells per benchmark (see _COLUMNS)."""
    return [
        (
            bench.suite,
            bench.case,
            shape_text(bench.shape),
            bench.dtype,
            bench.name,
            _number(bench.median_ms, ".4f"),
            _number(len(bench.samples_ms), "d"),
            _number(bench.tflops if bench.flops else None, ".1f"),
            _number(bench.gbps if bench.bytes else None, ".0f"),
            _faster_than(results, bench),
            _bound_shares(results, bench),
        )
        for bench in results.benchmarks
    ]


def run_table(results: Results) -> Table:
    """Median ms and throughput per benchmark; for the subject's own, the speed relative to the
    fastest baseline and the share of each bound's throughput."""
    table = Table(title="perfbot run (medians)", title_justify="left")
    for index, column in enumerate(_COLUMNS):
        table.add_column(column, justify="right" if index >= _NUMERIC else "left")
    for row in run_rows(results):
        table.add_row(*(escape(cell) for cell in row))  # "name[value]" is not markup
    return table


def run_markdown(results: Results) -> str:
    """The run's table, then its failures, as markdown (`perfbot show --markdown`)."""
    return _TEMPLATES.get_template("run.md.j2").render(
        columns=_COLUMNS, numeric=_NUMERIC, rows=run_rows(results), failures=results.failures
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
                " ".join(f"{k}={v}" for k, v in bench.variant.items()) or "default",
                _number(bench.median_ms, ".4f"),
            ]
            + [_number(p.median_ms if p else None, ".4f") for p in peers]
            + [_number(p.median_ms / bench.median_ms if p else None, ".3f") for p in peers]
        )
    return _TEMPLATES.get_template("run.md.j2").render(columns=columns, numeric=4, rows=rows, failures=[])


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.3g}"


_VERDICT_ICONS = {
    "regression": "🔺 regression",
    "improvement": "🟢 improvement",
    "unchanged": "unchanged",
    "inconclusive": "❔ inconclusive",
}


def _comment_cells(row: Row) -> list[str]:
    verdict = Markdown(("❌ " if row.fails else "") + _VERDICT_ICONS[row.verdict])
    interval = Markdown(f"[{row.ci[0]:.4f}, {row.ci[1]:.4f}]") if row.ci else Markdown("—")
    return [
        label(row.benchmark),
        _number(row.baseline_median_ms, ".4f"),
        _number(row.current_median_ms, ".4f"),
        _number(row.change_percent, "+.2f", "%"),
        interval,
        verdict,
        _throughput(row.tflops, row.gbps),
        _faster_cell(row.fastest_baseline, row.vs_fastest_baseline),
        _number(row.samples, "d"),
    ]


def measured_line(merge: Merge) -> str:
    """What `perfbot ab --merge` measured, in one line of markdown. Only hex digits are printed
    (the record's SHAs are validated), so the code spans need no escaping."""
    head, base = f"`{merge.head[:12]}`", f"`{merge.base[:12]}`"
    if merge.commit is None:
        return f"{head}, which contains {base} (a fast-forward: measured as it is), against {base}"
    return f"{head} merged into {base} (merge `{merge.commit[:12]}`), against {base}"


def comment_markdown(summary: Summary, limit: int = GITHUB_COMMENT_LIMIT) -> str:
    """The PR comment: verdict line first, changed rows, unchanged rows folded, environments,
    and the hidden marker. Over `limit` characters, unchanged rows go first, then changed rows
    from the end, each with a note saying so."""
    order = {"regression": 0, "inconclusive": 1, "improvement": 2}
    changed = sorted(
        (r for r in summary.comparisons if r.verdict != "unchanged"),
        key=lambda r: (not r.fails, order[r.verdict], -abs(r.change_percent)),
    )
    unchanged = [r for r in summary.comparisons if r.verdict == "unchanged"]
    template = _TEMPLATES.get_template("comment.md.j2")
    differing = {d.field for d in summary.environment_differences}

    def render(rows: list[Row], folded: list[Row]) -> str:
        return template.render(
            summary=summary,
            measured=Markdown(measured_line(summary.merge)) if summary.merge else None,
            rows=[_comment_cells(r) for r in rows],
            unchanged=[_comment_cells(r) for r in folded],
            omitted_rows=len(changed) - len(rows),
            omitted_unchanged=len(unchanged) - len(folded),
            confidence=Markdown(f"{summary.confidence:.0%}"),
            environment_keys=[Markdown(k) for k in ENVIRONMENT_KEYS],
            differing=differing,
            environments={side: summary.environments.get(side, {}) for side in ("baseline", "current")},
            method=Markdown(
                "Paired by round: the median per-round ratio with a confidence sequence, each row timed "
                "until it was decided"
                if summary.interleaved
                else "Two-sided Mann-Whitney U on every sample"
            ),
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
    note = (
        f"\n\n_…the report was cut here: it has {len(body):,} characters, over GitHub's limit of "
        f"{limit:,} for a comment. The full report is in the workflow run's artifact._\n{MARKER}\n"
    )
    closing = "\n</details>\n"
    room = limit - len(note) - closing.count("\n") - len(closing) * body.count("<details>")
    kept = body[: max(room, 0)]
    kept = kept[: kept.rfind("\n") + 1] if "\n" in kept else kept
    unclosed = max(kept.count("<details>") - kept.count("</details>"), 0)
    return kept + closing * unclosed + note


_HEADLINE_PREFIX = "**perfbot:** "


@dataclass(frozen=True)
class GpuReport:
    """One GPU kind's part of a PR comment: the runner label its job ran on, and its comparison,
    or why there is none (`problem`). The label comes from whoever chose the runner (the
    workflow), never from the comparison file, so no report can claim another GPU's section."""

    label: str
    summary: Summary | None
    problem: str = ""

    def __post_init__(self) -> None:
        if not GPU_LABEL.fullmatch(self.label):
            raise BadInput(
                f"GPU label {self.label!r}: a runner label is 1 to 64 letters, digits, '.', '_' or '-', "
                "starting with a letter or digit"
            )
        if (self.summary is None) != bool(self.problem):
            raise ValueError("a GpuReport has a summary, or a problem saying why it has none")

    @property
    def gpu_name(self) -> str | None:
        """The GPU the comparison file says it measured (its current side)."""
        if self.summary is None:
            return None
        name = self.summary.environments.get("current", {}).get("gpu_name")
        return None if name is None else str(name)


def gpu_headline(reports: Sequence[GpuReport]) -> str:
    """One line over every GPU kind, failing ones first: "❌ fails on a100; passes on h200"."""
    groups = (
        ("fails", [r.label for r in reports if r.summary is not None and r.summary.fails]),
        ("not measured", [r.label for r in reports if r.summary is None]),
        ("passes", [r.label for r in reports if r.summary is not None and not r.summary.fails]),
    )
    icon = "❌" if groups[0][1] else "⚠️" if groups[1][1] else "✅"
    return f"{icon} " + "; ".join(f"{what} on {', '.join(labels)}" for what, labels in groups if labels)


def gpu_comment_markdown(reports: Sequence[GpuReport], limit: int = GITHUB_COMMENT_LIMIT) -> str:
    """The PR comment of a check on several GPU kinds: one headline over all of them, then a
    section per GPU (its runner label and GPU name, then its comparison as `comment_markdown`
    renders it, or why it could not measure), and one marker. Over `limit` characters, the
    sections share the room: each gets what it needs or an equal share of what the shorter ones
    left, and a section over its share is shortened as `comment_markdown` shortens a comment."""
    if not reports:
        raise BadInput("no GPU to report on: give at least one section")
    labels = [r.label for r in reports]
    if len(set(labels)) != len(labels):
        raise BadInput(f"each GPU label may have one section; got {', '.join(labels)}")
    template = _TEMPLATES.get_template("gpus.md.j2")

    def render(bodies: dict[int, str]) -> str:
        sections = [
            {"label": r.label, "gpu": r.gpu_name, "problem": r.problem, "body": Markdown(bodies.get(i, ""))}
            for i, r in enumerate(reports)
        ]
        return template.render(headline=gpu_headline(reports), sections=sections)

    measured = [(i, r.summary) for i, r in enumerate(reports) if r.summary is not None]
    full = [_gpu_section(summary, limit) for _, summary in measured]
    shares = _shares(max(limit - len(render({})), 0), [len(text) for text in full])
    bodies = {
        i: text if len(text) <= share else _gpu_section(summary, share)
        for (i, summary), text, share in zip(measured, full, shares, strict=True)
    }
    return fit_comment(render(bodies), limit)


def _gpu_section(summary: Summary, limit: int) -> str:
    """One comparison as `comment_markdown` renders it within `limit`, without its marker, its
    verdict line as the section's first line."""
    text = comment_markdown(summary, limit)
    # A section cut short was cut to its share of the comment, not to GitHub's whole limit.
    text = text.replace(f"over GitHub's limit of {limit:,} for a comment", f"over its share ({limit:,}) of the comment")
    lines = text.rstrip("\n").split("\n")
    if lines[-1].strip() == MARKER:
        lines.pop()
    lines[0] = lines[0].removeprefix(_HEADLINE_PREFIX)
    return "\n".join(lines).rstrip("\n")


def _shares(room: int, wants: Sequence[int]) -> list[int]:
    """`room` characters split among sections that want `wants`: max-min fair, so a section
    gets what it wants or an equal share of what the shorter ones left, whichever is less."""
    shares = [0] * len(wants)
    pending = sorted(range(len(wants)), key=lambda i: wants[i])
    left = room
    while pending:
        fair = left // len(pending)
        if wants[pending[0]] > fair:
            for i in pending:
                shares[i] = fair
            break
        first = pending.pop(0)
        shares[first] = wants[first]
        left -= wants[first]
    return shares


def compare_table(summary: Summary) -> Table:
    measured = f"Measured: {measured_line(summary.merge).replace('`', '')}" if summary.merge else None
    table = Table(title=summary.headline, title_justify="left", caption=measured, caption_justify="left")
    for column in (
        "benchmark",
        "baseline ms",
        "current ms",
        "change",
        "CI of ratio",
        "verdict",
        "throughput",
        "vs fastest baseline",
    ):
        table.add_column(column, justify="right" if column not in ("benchmark", "verdict", "CI of ratio") else "left")
    for row in summary.comparisons:
        cur = row.benchmark
        name = f"{variant_name(cur.kernel, cur.variant)} {cur.suite}/{cur.case} {shape_text(cur.shape)} {cur.dtype}"
        table.add_row(
            escape(name),
            f"{row.baseline_median_ms:.4f}",
            f"{row.current_median_ms:.4f}",
            f"{row.change_percent:+.2f}%",
            f"[{row.ci[0]:.4f}, {row.ci[1]:.4f}]" if row.ci else "—",
            ("FAIL " if row.fails else "") + row.verdict,
            _throughput(row.tflops, row.gbps),
            escape(_faster_cell(row.fastest_baseline, row.vs_fastest_baseline)),
        )
    return table


class BisectProbe(Protocol):
    """What the bisect reports show of one probed commit: jobs.bisect.Probe (output may not import jobs)."""

    @property
    def sha(self) -> str: ...
    @property
    def subject(self) -> str: ...
    @property
    def samples(self) -> Sequence[float]: ...
    @property
    def unusable(self) -> str | None: ...
    @property
    def verdict(self) -> str | None: ...
    @property
    def note(self) -> str | None: ...
    @property
    def median_ms(self) -> float | None: ...


class BisectOutcome(Protocol):
    """What the bisect reports show of a finished bisect: jobs.bisect.Outcome."""

    @property
    def first_bad(self) -> str | None: ...
    @property
    def candidates(self) -> Sequence[str]: ...
    @property
    def probes(self) -> Sequence[BisectProbe]: ...
    @property
    def non_monotonic(self) -> Sequence[str]: ...
    @property
    def range_size(self) -> int: ...


def _bisect_headline(outcome: BisectOutcome) -> str:
    if outcome.first_bad:
        return f"first bad commit {outcome.first_bad[:12]}"
    return "first bad commit is one of " + ", ".join(c[:12] for c in outcome.candidates)


def bisect_table(outcome: BisectOutcome) -> Table:
    """Every probed commit, oldest first: samples, median, change from good, verdict."""
    table = Table(title=f"perfbot bisect: {_bisect_headline(outcome)}", title_justify="left")
    for column in ("commit", "subject", "samples", "median ms", "vs good", "verdict", "note"):
        table.add_column(column, justify="right" if column in ("samples", "median ms", "vs good") else "left")
    good_ms = outcome.probes[0].median_ms if outcome.probes and outcome.probes[0].samples else None
    for p in outcome.probes:
        change = f"{100 * (p.median_ms / good_ms - 1):+.2f}%" if p.median_ms is not None and good_ms else ""
        verdict = p.verdict or ("skipped" if p.unusable else "—")
        if p.sha == outcome.first_bad:
            verdict += " (first bad)"
        table.add_row(
            p.sha[:12],
            escape(p.subject[:48]),
            str(len(p.samples)),
            f"{p.median_ms:.4f}" if p.samples else "—",
            change,
            verdict,
            escape(p.note or p.unusable or ""),
        )
    return table


def bisect_markdown(outcome: BisectOutcome, repo: str) -> str:
    probes = list(outcome.probes)
    first_ms = probes[0].median_ms if probes else None  # None when the good commit has no samples
    good_ms = 1.0 if first_ms is None else first_ms
    rows = [
        [
            Markdown(f"`{p.sha[:12]}`"),
            p.subject,
            _number(len(p.samples), "d"),
            _number(p.median_ms, ".4f"),
            _number(None if p.median_ms is None else 100 * (p.median_ms / good_ms - 1), "+.2f", "%"),
            p.verdict or ("skipped" if p.unusable else "—"),
            p.note or p.unusable or "",
        ]
        for p in probes
    ]
    return _TEMPLATES.get_template("bisect.md.j2").render(
        headline=_bisect_headline(outcome),
        repo=repo,
        good=Markdown(probes[0].sha[:12] if probes else ""),
        bad=Markdown(probes[-1].sha[:12] if probes else ""),
        rows=rows,
        measured=sum(bool(p.samples) for p in probes),
        total=outcome.range_size,
        non_monotonic=outcome.non_monotonic,
    )
