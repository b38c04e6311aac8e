"""What a compared row does to the check: its standing, which the headline counts and the
verdict column shows.

A verdict says what the statistics saw; the standing says what decides:

- failing: the row fails the check: one of the subject's own implementations, slower beyond
  the fail threshold (in an A/B, again in the second round);
- slower: significantly slower, not failing: under the fail threshold (two separate runs);
- not confirmed: failed in an A/B, not again in the second round, so it does not fail;
- improvement, unchanged, inconclusive: as its verdict.

A row's role says whose code it times. A baseline or a bound runs code the subject does not own
and never fails the check (compare.py): the headline counts its rows apart from the subject's
own, so a slower vendor library is never counted beside the subject's slowdowns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sized
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

Verdict = Literal["regression", "improvement", "unchanged", "inconclusive"]
# The subject's own implementations are "under test"; results that name none are judged whole.
Role = Literal["under test", "baseline", "bound"]
Standing = Literal["failing", "slower", "not confirmed", "improvement", "unchanged", "inconclusive"]
STANDINGS: tuple[Standing, ...] = get_args(Standing)


class Judged(Protocol):
    """A benchmark's verdict as a report holds it: a Comparison, or a comparison file's Row."""

    @property
    def verdict(self) -> Verdict: ...

    @property
    def fails(self) -> bool: ...

    @property
    def role(self) -> Role: ...

    @property
    def confirmed(self) -> bool | None: ...  # None: no second round was asked of it


def fails_check(failures: Sized, missing: Sized, judged: Iterable[Judged]) -> bool:
    """Whether a comparison fails the check: a wrong result, a benchmark the base has under test
    that the head did not time, or a failing verdict. Report.fails and comparison.Summary.fails."""
    return bool(failures) or bool(missing) or any(j.fails for j in judged)


def standing(row: Judged) -> Standing:
    """What `row` does to the check (the module's list)."""
    if row.fails:
        return "failing"
    if row.verdict == "regression":
        return "not confirmed" if row.confirmed is False else "slower"
    return row.verdict


@dataclass(frozen=True)
class Tally:
    """A comparison's rows counted by standing: the subject's own (`own`), and the baselines' and
    bounds' (`others`, which never fail) apart. Standings no row has are left out."""

    own: dict[Standing, int]
    others: dict[Standing, int]


def tally(rows: Iterable[Judged]) -> Tally:
    rows = list(rows)
    own = Counter(standing(r) for r in rows if r.role == "under test")
    others = Counter(standing(r) for r in rows if r.role != "under test")
    return Tally(
        own={s: own[s] for s in STANDINGS if own[s]},
        others={s: others[s] for s in STANDINGS if others[s]},
    )
