"""What the autotuner's picks add to one compared row: where the two sides' picks differ, said in
words; and where an A/B timed each side at its own picks beside a common config (the head's
code or configs differ from the base's, measuring/alignment.py), the tuning's own verdict.

A row's samples are both sides at the config they share: the code's effect. Its `own_picks`
samples are each side at its own pick: the tuning's effect, what a user of each side would see.
A changed pick alone fails the check only where the head's own pick is surely slower than the
base's under the same rule (`judge_paired`), and, like every failing row, again in a second
round at the same configs (jobs/ab.confirm).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..records.autotune import AutotunePick, config_text
from .standing import Verdict

if TYPE_CHECKING:  # the picks are said in words without numpy; compare.py makes the estimate
    from . import stats


@dataclass(frozen=True)
class TuningEffect:
    """Each side at its own autotune picks: the verdict on the head's picks against the base's."""

    verdict: Verdict
    fails: bool
    reason: str
    estimate: stats.RatioEstimate
    base: str  # the base's picks, in words (`configs`)
    head: str  # the head's

    @property
    def change_percent(self) -> float:
        return 100 * (self.estimate.ratio - 1)


def difference(
    baseline: Sequence[AutotunePick], current: Sequence[AutotunePick], sides: tuple[str, str] = ("the base", "the head")
) -> tuple[str, ...]:
    """Where the two sides' picks differ, one line per kernel and key: what each ran, and what
    one side's own tuning picked where it ran another side's pick. Empty where they agree."""
    theirs = {(p.kernel, tuple(p.key)): p for p in baseline}
    said = []
    for mine in current:
        other = theirs.get((mine.kernel, tuple(mine.key)))
        if other is None:
            continue
        key = f"{mine.kernel} (key {', '.join(mine.key)})"
        alike = "same source and configs" if mine.identity() == other.identity() else "code or configs differ"
        ran = config_text(mine.config)
        if mine.config != other.config:
            said.append(f"{key}: {sides[0]} ran {config_text(other.config)}, {sides[1]} {ran} ({alike})")
            continue
        for side, pick in ((sides[1], mine), (sides[0], other)):
            if pick.origin == "pinned" and pick.tuned is not None and pick.tuned != pick.config:
                own = config_text(pick.tuned)
                said.append(f"{key}: {side}'s own tuning picked {own}; both ran {pick.pinned_to}, {ran} ({alike})")
    return tuple(said)


def picked(picks: Sequence[AutotunePick]) -> str:
    """The configs the autotuned kernels ran, per kernel ("" where none was autotuned); how a
    config was chosen, where the autotuner did not tune it in that process, in brackets."""
    said = dict.fromkeys(
        f"{p.kernel}: {config_text(p.config)}" + ("" if p.origin == "tuned" else f" [{p.origin}]")
        for p in picks
        if p.origin != "only config"
    )
    return "; ".join(said)


def configs(picks: Sequence[AutotunePick]) -> str:
    return "; ".join(f"{p.kernel}: {config_text(p.config)}" for p in picks) or "none"
