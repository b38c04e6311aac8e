"""What `perfbot selftest` shows: its table of false alarms and detections, a note where the
injection missed a level, and the interference check's table and summary. The command prints
each part in turn; the JSON record is the result's own (measuring/selftest.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from ..measuring.interference import Interference
    from ..measuring.selftest import Flagged, Picks, SelftestResult

_COLUMNS = (
    "comparison",
    "injected (nominal)",
    "injected (measured)",
    "failed, one check",
    "failed and confirmed (pairs)",
    "undecided",
    "rounds (median, most)",
)


@dataclass(frozen=True)
class SelftestAsked:
    """What the selftest was asked to check, for its title."""

    kernel: str
    suite: str
    case: str
    checks: int
    samples: int
    max_samples: int
    gpus: int


def selftest_report(result: SelftestResult, asked: SelftestAsked) -> list[Table | str]:
    """The table, one row for A/A and one per level, then a note if a level's injection missed."""
    on_gpus = f" on {asked.gpus} GPUs" if asked.gpus > 1 else ""
    table = Table(
        title=f"perfbot selftest: {escape(f'{asked.kernel} on {asked.suite}/{asked.case}')} "
        f"({result.kernel_ms:.4f} ms), {asked.checks} checks of {asked.samples} to {asked.max_samples} rounds"
        f"{on_gpus}; {result.rule}",
        title_justify="left",
    )
    for column in _COLUMNS:
        table.add_column(column, justify="left" if column == "comparison" else "right")
    rows: list[tuple[str, str, str, Flagged]] = [("A/A (false alarms)", "0%", "", result.false_alarms)]
    rows += [
        (
            f"A/B +{level.nominal_percent:g}%",
            f"{level.nominal_percent:g}%",
            f"{level.measured_percent:.2f}%",
            level.detections,
        )
        for level in result.levels
    ]
    for name, nominal, measured, flags in rows:
        confirmed = f"{flags.confirmed}/{flags.pairs} ({flags.confirmed / flags.pairs:.1%})" if flags.pairs else "-"
        table.add_row(
            name,
            nominal,
            measured,
            f"{flags.flagged}/{flags.checks} ({flags.flagged / flags.checks:.1%})",
            confirmed,
            str(flags.undecided),
            f"{flags.median_rounds:g}, {flags.most_rounds}",
        )
    parts: list[Table | str] = [table]
    strayed = [level for level in result.levels if not level.as_asked]
    if strayed:
        listed = ", ".join(f"{level.nominal_percent:g}% (measured {level.measured_percent:.2f}%)" for level in strayed)
        parts.append(
            f"note: the injection missed {listed}: read those rows by their measured column "
            f"(the calibration could not place the sleep on this runner)"
        )
    return parts


def interference_report(crossed: Interference, warn_percent: float) -> list[Table | str]:
    """The interference check's table: every benchmark but the slowed one, the most moved first,
    then one line naming the largest cross-talk against the interleaved warn threshold."""
    slowed = crossed.slowed
    table = Table(
        title=f"interference: {escape(slowed.label)} slowed by {slowed.percent:+.2f}% (measured) on one side of an "
        f"A/A; every other benchmark's ratio, {crossed.confidence:.0%} interval",
        title_justify="left",
    )
    for column in ("benchmark", "moved", "interval", "rounds"):
        table.add_column(column, justify="left" if column == "benchmark" else "right")
    for moved in sorted(crossed.others, key=lambda m: -abs(m.percent)):
        interval = f"[{moved.low_percent:+.2f}%, {moved.high_percent:+.2f}%]"
        table.add_row(escape(moved.label), f"{moved.percent:+.2f}%", escape(interval), str(moved.rounds))
    largest = crossed.largest
    if largest is None:
        return [table, "interference: no other benchmark measured on both sides"]
    below = "below" if abs(largest.percent) < warn_percent else "NOT below"
    sure = [row.label for row in crossed.others if row.surely_moved]
    surely = f"surely moved: {', '.join(sure)}" if sure else "none surely moved (every interval holds no change)"
    # The largest of many noisy estimates is noise of its intervals' width: say so, and how to narrow them.
    unsure = abs(largest.percent) >= warn_percent and not largest.surely_moved
    hint = "; its interval cannot tell it from no change: more --interference-rounds narrow it" if unsure else ""
    return [
        table,
        escape(
            f"largest cross-talk: {abs(largest.percent):.2f}% ({largest.label}), {below} the interleaved "
            f"warn threshold of {warn_percent:g}%; {surely}{hint}"
        ),
    ]


def picks_line(picks: Picks) -> str:
    """How often fresh imports of the subject, each tuning on its own as an A/B's sides do, picked
    otherwise than the first; an A/B runs the head at the base's pick where they tune alike."""
    seen = escape("; ".join(f"{pick} ×{count}" for pick, count in picks.seen))
    return (
        f"autotune: {picks.differed} of {picks.imports} fresh imports picked otherwise than the first ({seen}); "
        "an A/B runs both sides at the base's pick where their kernels' source and configs agree"
    )


def exploits_report(control: dict[str, Any], verdicts: list[dict[str, Any]]) -> list[Table | str]:
    """The red-team table: the control (an honest twin, which must pass), then one row per exploit
    (jobs/red_team.Verdict.to_json); then the catch rate of those that ran."""
    table = Table(
        title="perfbot selftest --exploits: cheating implementations against this runner", title_justify="left"
    )
    for column in ("exploit", "what it does", "verdict", "what perfbot said"):
        table.add_column(column, overflow="fold")
    passed = control["exit_code"] == 0
    verdict = "passed (exit 0)" if passed else f"[bold red]FAILED[/] (exit {control['exit_code']})"
    table.add_row(escape(control["exploit"]), escape(control["does"]), verdict, escape(control["said"]))
    for row in verdicts:
        if row["exit_code"] is None:
            verdict = "not run"
        elif row["caught"]:
            verdict = f"caught (exit {row['exit_code']})"
        else:
            verdict = f"[bold red]NOT CAUGHT[/] (exit {row['exit_code']})"
        table.add_row(escape(row["exploit"]), escape(row["does"]), verdict, escape(row["said"]))
    lines: list[Table | str] = [table, catch_line(verdicts)]
    if not passed:
        lines.append(
            "the control failed: an honest kernel in the exploits' place was not passed, so no catch is evidence"
        )
    return lines


def catch_line(verdicts: list[dict[str, Any]]) -> str:
    """How many of the exploits that ran were caught, and how many could not run here."""
    ran = [v for v in verdicts if v["exit_code"] is not None]
    caught = sum(v["caught"] for v in ran)
    rate = f" ({100 * caught / len(ran):.0f}%)" if ran else ""
    not_run = len(verdicts) - len(ran)
    unrun = f"; {not_run} not run here (each needs a CUDA GPU)" if not_run else ""
    return f"caught {caught} of {len(ran)} exploits{rate}{unrun}"
