"""The autotuner is part of the side: an A/B's two sides at the configs their code should be
judged at, once each has tuned (docs/method.md, "The autotuner's picks").

Each side imports its own copy of the subject, so each `triton.autotune`d kernel tunes once per
side, and between configs within noise of each other it picks at random. Left so, an A/A fails
on which config a process happened to pick. After both sides are checked (and so tuned), each
pick of the head's is set against the base's pick of the same kernel and key:

- the same source and configs on both sides: the head runs the base's pick. The two sides then
  run the same code at the same config, and only the code's effect is measured (none, in an
  A/A); the record keeps what the head's own tuning picked.
- the source or the configs differ, and the picks differ: the row separates two effects. Its
  samples are both sides at a common config, the base's pick run on the head, where the head's
  configs hold it (the code's effect); and a second pair of captures, each side at its own pick
  (OWN_PICKS), is timed beside them (the tuning's effect). Where the head cannot run the base's
  pick, the head runs its own and the row says that code and tuning are measured together.
- the same pick: nothing to do.

The base's pick rather than a joint tuning: the base is what the pull request would change, its
tuning is the one main runs; taking it keeps the head's code, not its dice, under test. A
confirming round runs the configs its first round ran (`fixed`), whatever the fresh imports
would tune.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ..compiling import tuning
from ..records.autotune import AutotunePick
from ..records.run import Results
from . import measure
from .groups import _Ready
from .planning import Planned
from .sequential import OWN_PICKS

BASE_PICK = "the base's pick"
FIRST_ROUND = "the first round's"
OWN_PICK = "its own pick"

Fixed = Mapping[str, Sequence[AutotunePick]]  # case and planned key -> the picks its call ran (fixed_from)


def align(ready: list[_Ready], against: Mapping[str, Sequence[AutotunePick]] | None = None) -> list[_Ready]:
    """Pin the head's calls to the base's picks as the module says, in place; the second pair of
    captures of each row that needs one, to be timed beside the first. The base's picks are its
    ready calls', or, where the base runs in another process, `against` (by benchmark name), and
    then no second pair is made: the base's process cannot time it."""
    base = {_name(r): r for r in ready if r.planned.side == "base"}
    picked = {name: list(r.picks) for name, r in base.items()} if against is None else dict(against)
    arms: list[_Ready] = []
    for at, head in enumerate(ready):
        if head.planned.side != "head" or not head.picks or _name(head) not in picked:
            continue
        other = base.get(_name(head))
        theirs = {(p.kernel, tuple(p.key)): p for p in picked[_name(head)]}
        pins: dict[tuning.Identity, dict[str, Any]] = {}
        timed, own_differs = [], False
        for mine in head.picks:
            pick = theirs.get((mine.kernel, tuple(mine.key)))
            if pick is None or mine.origin == "only config" or pick.config == mine.config:
                timed.append(mine)
                continue
            if pick.config not in head.configs.get(mine.identity(), []):
                timed.append(mine)  # no common config: the head runs its own
                continue
            pins[mine.identity()] = pick.config
            timed.append(_pinned(mine, pick.config, BASE_PICK))
            own_differs = own_differs or pick.identity() != mine.identity()
        if not pins:
            continue
        ready[at] = dataclasses.replace(head, call=_under(head.call, pins, BASE_PICK), picks=timed)
        if own_differs and other is not None:
            own = {p.identity(): p.config for p in head.picks if p.origin != "only config"}
            arms.append(_arm(other, other.call, other.picks))
            arms.append(_arm(head, _under(head.call, own, OWN_PICK), head.picks))
    return arms


def fix(ready: list[_Ready], fixed: Fixed) -> list[_Ready]:
    """A confirming round: each call pinned, in place, to the picks its first round ran (`fixed`,
    by planned key); the second pairs of captures the first round timed, made again."""
    originals = list(ready)  # their calls unpinned: each capture gets the pins of its own
    for at, r in enumerate(originals):
        picks = fixed_for(fixed, r.planned)
        if picks:
            ready[at] = _fixed(r, r.call, picks)
    arms = []
    for r in originals:
        own = fixed_for(fixed, dataclasses.replace(r.planned, arm=OWN_PICKS))
        if own is not None:
            arms.append(_fixed(_arm(r, r.call, r.picks), r.call, own))
    return arms


def fixed_for(fixed: Fixed, planned: Planned) -> Sequence[AutotunePick] | None:
    """The picks a planned benchmark (or its OWN_PICKS arm) ran in the first round, of its own
    case: one implementation runs other configs on other cases (another autotune key, another
    shape), and a name alone would give every case the picks of the last."""
    return fixed.get(_fixed_key(planned.case.suite, planned.case.name, planned.key))


def _fixed_key(suite: str, case: str, planned_key: str) -> str:
    return f"{suite}/{case} {planned_key}"


def kept(arms: list[_Ready], ready: list[_Ready]) -> list[_Ready]:
    """The arms whose rows are still ready on both sides (a row that failed since is not timed)."""
    rows = {(r.planned.side, _name(r)) for r in ready}
    return [a for a in arms if all((side, _name(a)) in rows for side in ("base", "head"))]


def fixed_from(results: Mapping[str, Results]) -> dict[str, list[AutotunePick]]:
    """What each benchmark of a first round ran, by its case and the planned key it had: a
    confirming round's `fixed` (`fixed_for` looks one up)."""
    found: dict[str, list[AutotunePick]] = {}
    for side, measured in results.items():
        for bench in measured.benchmarks:
            key = _fixed_key(bench.suite, bench.case, f"{side}:{bench.name}")
            if bench.autotune:
                found[key] = list(bench.autotune)
            if bench.own_picks is not None:
                found[f"{key} {OWN_PICKS}"] = list(bench.own_picks.autotune)
    return found


def _fixed(r: _Ready, call: Any, picks: Sequence[AutotunePick]) -> _Ready:
    pins = {p.identity(): p.config for p in picks if p.origin != "only config"}
    timed = [p if p.origin == "only config" else _pinned(p, p.config, FIRST_ROUND) for p in picks]
    return dataclasses.replace(r, call=_under(call, pins, FIRST_ROUND), picks=timed)


def _arm(r: _Ready, call: Any, picks: list[AutotunePick]) -> _Ready:
    return dataclasses.replace(r, planned=dataclasses.replace(r.planned, arm=OWN_PICKS), call=call, picks=list(picks))


def _pinned(pick: AutotunePick, config: dict[str, Any], to: str) -> AutotunePick:
    """The pick as the pinned call will run it: at `config`, keeping what the side's own tuning
    chose."""
    own = pick.tuned if pick.origin == "pinned" else pick.config
    return dataclasses.replace(pick, config=config, origin="pinned", tuned=own, pinned_to=to)


def _under(call: Any, pins: Mapping[tuning.Identity, dict[str, Any]], pinned_to: str) -> Any:
    """tuning.under, of a Staged call (a backward mode's) each of its stages: its forward runs
    at the pinned configs too."""
    if isinstance(call, measure.Staged):
        return measure.Staged(tuning.under(call.before, pins, pinned_to), tuning.under(call.call, pins, pinned_to))
    return tuning.under(call, pins, pinned_to)


def _name(r: _Ready) -> str:
    return r.planned.name
