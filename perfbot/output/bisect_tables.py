"""A bisect's outcome as people read it: every probed commit, oldest first, with its samples,
median and change from the good commit, for the terminal and as markdown (`perfbot bisect`);
then what changed in the benchmark's compiled kernels from the last good commit to the first
bad one, where the measure command handed them back (compiled_tables.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..deciding.compiled_change import CompiledChange
from ..deciding.picks import picked
from ..records.autotune import AutotunePick
from .compiled_tables import compiled_markdown, compiled_renderable, spaced
from .markdown import TEMPLATES, Markdown, number


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
    @property
    def autotune(self) -> Sequence[AutotunePick]: ...


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
    @property
    def last_good(self) -> str | None: ...
    @property
    def earliest_bad(self) -> str | None: ...
    @property
    def compiled_change(self) -> CompiledChange | None: ...
    @property
    def picks_change(self) -> str | None: ...


_PICKED = ("autotune config",)  # the column of each commit's picks, where a kernel was autotuned


def _bisect_headline(outcome: BisectOutcome) -> str:
    if outcome.first_bad:
        return f"first bad commit {outcome.first_bad[:12]}"
    return "first bad commit is one of " + ", ".join(c[:12] for c in outcome.candidates)


def _compiled_title(outcome: BisectOutcome) -> str:
    """What the compiled-code section compares: "from the last good commit 0123456789ab to the
    first bad one 89abcdef0123"."""
    good, bad = (outcome.last_good or "")[:12], (outcome.earliest_bad or "")[:12]
    which = "the first bad one" if outcome.earliest_bad == outcome.first_bad else "the earliest bad one measured"
    return f"from the last good commit {good} to {which} {bad}"


def _sides(outcome: BisectOutcome) -> tuple[str, str]:
    return ("last good", "first bad" if outcome.earliest_bad == outcome.first_bad else "earliest bad")


def bisect_table(outcome: BisectOutcome) -> Group:
    """Every probed commit, oldest first: samples, median, change from good, verdict; then what
    changed in the compiled code between the commits the search ended between."""
    table = Table(title=f"perfbot bisect: {_bisect_headline(outcome)}", title_justify="left")
    tuned = any(p.autotune for p in outcome.probes)
    for column in ("commit", "subject", "samples", "median ms", "vs good", "verdict", "note", *_PICKED[:tuned]):
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
            *[escape(picked(p.autotune))][:tuned],
        )
    said = f"the autotuner's picks {_compiled_title(outcome)}: {outcome.picks_change}"
    picks = [Text(said)] if outcome.picks_change else []
    if outcome.compiled_change is None:
        return Group(table, *picks)
    title = f"what changed in the compiled code {_compiled_title(outcome)}"
    compiled = compiled_renderable(title, outcome.compiled_change, sides=_sides(outcome))
    return Group(table, *picks, *spaced([compiled]))


def bisect_markdown(outcome: BisectOutcome, repo: str) -> str:
    probes = list(outcome.probes)
    first_ms = probes[0].median_ms if probes else None  # None when the good commit has no samples
    good_ms = 1.0 if first_ms is None else first_ms
    rows = [
        [
            Markdown(f"`{p.sha[:12]}`"),
            p.subject,
            number(len(p.samples), "d"),
            number(p.median_ms, ".4f"),
            number(None if p.median_ms is None else 100 * (p.median_ms / good_ms - 1), "+.2f", "%"),
            p.verdict or ("skipped" if p.unusable else "—"),
            p.note or p.unusable or "",
            *[picked(p.autotune)][: any(q.autotune for q in probes)],
        ]
        for p in probes
    ]
    return TEMPLATES.get_template("bisect.md.j2").render(
        headline=_bisect_headline(outcome),
        repo=repo,
        good=Markdown(probes[0].sha[:12] if probes else ""),
        bad=Markdown(probes[-1].sha[:12] if probes else ""),
        rows=rows,
        measured=sum(bool(p.samples) for p in probes),
        total=outcome.range_size,
        non_monotonic=outcome.non_monotonic,
        picked=any(p.autotune for p in probes),
        picks_change=outcome.picks_change,
        compiled_from=_compiled_title(outcome),
        compiled=None
        if outcome.compiled_change is None
        else compiled_markdown(outcome.compiled_change, sides=_sides(outcome)),
    )
