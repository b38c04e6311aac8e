"""A comparison's verdicts as people read them: the PR comment (`comment_markdown`; one section
per GPU kind, `gpu_comment_markdown`), kept within GitHub's limit on a comment, and the terminal
table (`compare_table`). Each flagged row (a regression or an improvement) whose kernels'
compiled code was recorded on both sides also gets what changed in it (compiled_tables.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..deciding.comparison import ENVIRONMENT_KEYS, Row, Summary, label, shape_text
from ..deciding.compiled_change import CompiledChange
from ..deciding.standing import standing
from ..errors import BadInput
from ..records.run import Merge, variant_name
from ..records.schema import GPU_LABEL
from .compiled_tables import FEW_ROWS_PER_KERNEL, ROWS_PER_KERNEL, compiled_markdown, compiled_renderable, spaced
from .markdown import MARKER, TEMPLATES, Markdown, number
from .run_tables import faster_cell

# The most characters GitHub takes in a comment: a longer report is cut to fit (`fit_comment`).
GITHUB_COMMENT_LIMIT = 65536
# The verdicts whose rows say what changed in their compiled code: a time that moved.
FLAGGED = ("regression", "improvement")


def _throughput(tflops: float | None, gbps: float | None) -> Markdown:
    """TFLOP/s where the benchmark counts flops, else GB/s (a memory-bound one)."""
    if tflops is not None:
        return Markdown(f"{tflops:.0f} TFLOP/s")
    return Markdown(f"{gbps:.0f} GB/s" if gbps is not None else "")


_VERDICT_ICONS = {
    "regression": "🔺 regression",
    "improvement": "🟢 improvement",
    "unchanged": "unchanged",
    "inconclusive": "❔ inconclusive",
}


def change_heading(interleaved: bool) -> str:
    """The change column's heading. It holds the estimate each verdict rests on: between two
    runs the ratio of the two medians shown beside it; in an A/B the median per-round ratio,
    which the medians' ratio is not, and the heading says so."""
    return "paired change" if interleaved else "change"


def _change(row: Row, interleaved: bool) -> str:
    """A row's change; in an A/B, one not judged on paired rounds says that its is of medians."""
    return f"{row.change_percent:+.2f}%" + (" (of medians)" if interleaved and not row.paired else "")


def _qualified(row: Row) -> str:
    """What a verdict does not say by itself: that an A/B's slowdown was not confirmed, and that
    a baseline's or a bound's row never fails (deciding/standing.py)."""
    unconfirmed = ", not confirmed" if standing(row) == "not confirmed" else ""
    role = f" · {row.role}" if row.role != "under test" else ""
    return unconfirmed + role


def _comment_cells(row: Row, interleaved: bool) -> list[str]:
    verdict = Markdown(("❌ " if row.fails else "") + _VERDICT_ICONS[row.verdict] + _qualified(row))
    interval = Markdown(f"[{row.ci[0]:.4f}, {row.ci[1]:.4f}]") if row.ci else Markdown("—")
    return [
        label(row.benchmark),
        number(row.baseline_median_ms, ".4f"),
        number(row.current_median_ms, ".4f"),
        Markdown(_change(row, interleaved)),
        interval,
        verdict,
        _throughput(row.tflops, row.gbps),
        faster_cell(row.fastest_baseline, row.vs_fastest_baseline),
        number(row.samples, "d"),
    ]


def measured_line(merge: Merge) -> str:
    """What `perfbot ab --merge` measured, in one line of markdown. Only hex digits are printed
    (the record's SHAs are validated), so the code spans need no escaping."""
    head, base = f"`{merge.head[:12]}`", f"`{merge.base[:12]}`"
    if merge.commit is None:
        return f"{head}, which contains {base} (a fast-forward: measured as it is), against {base}"
    return f"{head} merged into {base} (merge `{merge.commit[:12]}`), against {base}"


def comment_markdown(summary: Summary, limit: int = GITHUB_COMMENT_LIMIT) -> str:
    """The PR comment: verdict line first, changed rows, what changed in the compiled code of
    each flagged one (folded), unchanged rows folded, environments, and the hidden marker. Over
    `limit` characters, the compiled-code sections show fewer differences per kernel first,
    then unchanged rows go, then changed rows from the end (with their sections), each with a
    note saying so."""
    order = {"regression": 0, "inconclusive": 1, "improvement": 2}
    # Failing rows first, then the subject's own, then the baselines' and bounds'.
    changed = sorted(
        (r for r in summary.comparisons if r.verdict != "unchanged"),
        key=lambda r: (not r.fails, r.role != "under test", order[r.verdict], -abs(r.change_percent)),
    )
    unchanged = [r for r in summary.comparisons if r.verdict == "unchanged"]
    template = TEMPLATES.get_template("comment.md.j2")
    differing = {d.field for d in summary.environment_differences}

    def render(rows: list[Row], folded: list[Row], per_kernel: int) -> str:
        return template.render(
            summary=summary,
            measured=Markdown(measured_line(summary.merge)) if summary.merge else None,
            rows=[_comment_cells(r, summary.interleaved) for r in rows],
            compiled=[(label(r.benchmark), compiled_markdown(c, per_kernel)) for r, c in _compiled_changes(rows)],
            picks=[(label(r.benchmark), lines) for r in summary.comparisons if (lines := _picks_lines(r))],
            unchanged=[_comment_cells(r, summary.interleaved) for r in folded],
            change=Markdown(change_heading(summary.interleaved)),
            omitted_rows=len(changed) - len(rows),
            omitted_unchanged=len(unchanged) - len(folded),
            confidence=Markdown(f"{summary.confidence:.0%}"),
            environment_keys=[Markdown(k) for k in ENVIRONMENT_KEYS],
            differing=differing,
            environments={side: summary.environments.get(side, {}) for side in ("baseline", "current")},
            method=Markdown(
                "Paired by round: the paired change is the median per-round ratio (of blocks' medians in a "
                "sequential A/B), on which each verdict and its confidence sequence rest; baseline and current "
                "ms are each side's median; each row timed until it was decided"
                if summary.interleaved
                else "Two-sided Mann-Whitney U on every sample"
            ),
        )

    text = render(changed, unchanged, ROWS_PER_KERNEL)
    if len(text) > limit:
        text = render(changed, unchanged, FEW_ROWS_PER_KERNEL)
    if len(text) > limit:
        text = render(changed, [], FEW_ROWS_PER_KERNEL)
    keep = len(changed)
    if len(text) > limit and keep > 0 and len(bare := render([], [], FEW_ROWS_PER_KERNEL)) > limit:
        # Over the limit with no changed row (its notes, say): so is every shorter table, each
        # row adding to it; the renders between would be wasted, and fit_comment cuts this one.
        text, keep = bare, 0
    while len(text) > limit and keep > 0:
        keep = keep * 3 // 4
        text = render(changed[:keep], [], FEW_ROWS_PER_KERNEL)
    return fit_comment(text, limit)


def _picks_lines(row: Row) -> list[str]:
    """What a row's autotune picks add, a line each: where the sides' picks differ, and the
    tuning's own effect with its interval where each side was also timed at its own picks."""
    lines = list(row.picks_difference)
    tuning = row.tuning
    if tuning is not None:
        interval = f", {tuning.ci[0]:.4f}–{tuning.ci[1]:.4f}" if tuning.ci else ""
        verdict = ("fails: " if tuning.fails else "") + tuning.verdict
        lines.append(
            f"the tuning's effect, each side at its own picks: {tuning.change_percent:+.2f}%{interval}, {verdict} "
            f"(base {tuning.base}; head {tuning.head})"
        )
    return lines


def _compiled_changes(rows: Sequence[Row]) -> list[tuple[Row, CompiledChange]]:
    """The flagged rows that say what changed in their compiled code, with it."""
    return [(r, r.compiled_change) for r in rows if r.verdict in FLAGGED and r.compiled_change is not None]


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
    template = TEMPLATES.get_template("gpus.md.j2")

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


def compare_table(summary: Summary) -> Group:
    """The comparison for the terminal: one row per benchmark, each benchmark missing on the
    current side and each wrong result, then what changed in the compiled code of each flagged row."""
    measured = f"Measured: {measured_line(summary.merge).replace('`', '')}" if summary.merge else None
    table = Table(title=summary.headline, title_justify="left", caption=measured, caption_justify="left")
    change = change_heading(summary.interleaved)
    for column in (
        "benchmark",
        "baseline ms",
        "current ms",
        change,
        "CI of ratio",
        "verdict",
        "throughput",
        "vs fastest baseline",
    ):
        table.add_column(column, justify="right" if column not in ("benchmark", "verdict", "CI of ratio") else "left")
    for row in summary.comparisons:
        cur = row.benchmark
        where = f"{cur.suite}/{cur.case} {shape_text(cur.shape)} {cur.dtype}"
        name = f"{variant_name(cur.kernel, cur.variant, cur.mode)} {where}"
        table.add_row(
            escape(name),
            f"{row.baseline_median_ms:.4f}",
            f"{row.current_median_ms:.4f}",
            _change(row, summary.interleaved),
            f"[{row.ci[0]:.4f}, {row.ci[1]:.4f}]" if row.ci else "—",
            ("FAIL " if row.fails else "") + row.verdict + _qualified(row),
            _throughput(row.tflops, row.gbps),
            escape(faster_cell(row.fastest_baseline, row.vs_fastest_baseline)),
        )
    # Named under the table: the headline counts them, and each fails the check.
    named = [
        *(f"missing on the head: {label(f.benchmark)}: {f.reason}" for f in summary.missing),
        *(f"wrong result: {label(f.benchmark)}: {f.reason}" for f in summary.failures),
        *(f"autotune: {label(r.benchmark)}: {line}" for r in summary.comparisons for line in _picks_lines(r)),
    ]
    compiled = [
        compiled_renderable(f"what changed in the compiled code of {label(r.benchmark)}", change)
        for r, change in _compiled_changes(summary.comparisons)
    ]
    return Group(table, *(Text(line) for line in named), *spaced(compiled))
