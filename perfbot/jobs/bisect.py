"""`perfbot bisect`: find the first commit between a good and a bad one that made a benchmark
slower, measuring as few commits as a binary search allows, with statistics at each step.

Each probed commit is built and measured by a `Prober` (bisect_probers.py: shell commands in a
worktree of its own, or Triton built at that commit). Samples are compared with both ends by one-sided
Mann-Whitney U tests: a commit significantly slower than good is bad (so the earliest slowdown
is found), one significantly faster than bad is good. An ambiguous commit is measured again; a
commit between the two ends, or beyond either, is reported as evidence that the range is not
monotonic.
All samples and verdicts live in a state file, so an interrupted bisect resumes where it stopped.
So do the compiled kernels a measure command hands back (bisect_probers.py), without their SASS:
the outcome says what changed in them from the last good commit to the first bad one.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import median
from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, with_config

from .. import git
from ..deciding.compiled_change import CompiledChange, compiled_change
from ..deciding.picks import difference
from ..deciding.stats import mann_whitney_p
from ..errors import BadInput, EnvironmentFailure
from ..files import write_atomic
from ..records.autotune import Picks
from ..records.compiled import Compiled
from ..records.schema import MAX_ITEMS, MAX_JSON_BYTES, MAX_SAMPLES, IntOnly, Ms, Text, bad_input, clean, read_limited
from .bisect_probers import Measured, Prober, Unusable

STATE_VERSION: Final = 1


Sha = Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")]


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass
class Probe:
    """What is known about one commit."""

    sha: Sha
    subject: Text
    samples: Annotated[list[Ms], Field(max_length=MAX_SAMPLES)] = field(default_factory=list)
    unusable: Text | None = None  # why it could not be built or measured (then it is skipped)
    verdict: Literal["good", "bad"] | None = None  # None while undecided
    note: Text | None = None  # non-monotonic evidence, or how an ambiguous verdict was reached
    rounds: Annotated[int, Field(ge=0, le=1000)] = 0
    # The benchmark's compiled kernels and autotune picks as its first measurement that handed
    # them back gave them.
    compiled: Compiled | None = None
    autotune: Picks = field(default_factory=list)

    @property
    def median_ms(self) -> float | None:
        return median(self.samples) if self.samples else None


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass
class State:
    version: Annotated[Literal[1], IntOnly]
    repo: Text
    good: Sha
    bad: Sha
    recipe: Annotated[str, Field(max_length=20_000)]  # what builds and measures; a resumed bisect must use the same
    probes: Annotated[dict[Sha, Probe], Field(max_length=MAX_ITEMS)]

    def save(self, path: Path) -> None:
        data = {**asdict(self), "probes": {sha: asdict(p) for sha, p in self.probes.items()}}
        write_atomic(path, json.dumps(data, indent=1))

    @classmethod
    def load(cls, path: Path) -> State:
        data = read_limited(path, "bisect state file", MAX_JSON_BYTES)
        try:
            return _STATE.validate_json(data, strict=True)
        except ValidationError as error:
            if error.errors()[0]["loc"][:1] == ("version",):
                raise BadInput(
                    f"{path}: not a bisect state this perfbot reads (version {STATE_VERSION}); delete it to start over"
                ) from None
            raise BadInput(f"{bad_input(str(path), error, 'bisect state file')}; delete it to start over") from None


_STATE = TypeAdapter(State)


@dataclass(frozen=True)
class Outcome:
    first_bad: str | None  # None when unusable commits hide which one it is
    candidates: tuple[str, ...]  # the commits that may be first bad (one when found)
    probes: tuple[Probe, ...]  # every measured or skipped commit, oldest first
    non_monotonic: tuple[str, ...]  # notes on commits that do not fit one step from good to bad
    state_path: Path
    range_size: int  # commits from good to bad, both included
    # The two commits the search ended between: the last good one and the earliest bad one
    # measured (the first bad commit where one is named), and what changed in their compiled
    # kernels (None where neither handed any back).
    last_good: str | None = None
    earliest_bad: str | None = None
    compiled_change: CompiledChange | None = None
    picks_change: str | None = None  # where their autotune picks differ, in words (deciding/picks.py)


class NotReproduced(BadInput):
    """Bad is not significantly slower than good: there is no slowdown in the range to find."""

    def __init__(self, message: str, good: Probe, bad: Probe):
        super().__init__(message)
        self.good, self.bad = good, bad


def commits_between(repo: Path, good: str, bad: str) -> list[tuple[str, str]]:
    """(sha, subject) of the commits after good up to bad, oldest first, along the ancestry path."""
    if git.run(repo, "merge-base", "--is-ancestor", good, bad).returncode != 0:
        raise BadInput(f"good {good[:12]} is not an ancestor of bad {bad[:12]}; bisect needs good before bad")
    done = git.run(repo, "log", "--reverse", "--ancestry-path", "--format=%H %s", f"{good}..{bad}")
    if done.returncode != 0:
        raise EnvironmentFailure(f"git log failed in {repo}: {done.stderr.strip()}")
    pairs = [line.split(" ", 1) for line in done.stdout.splitlines() if line]
    return [(p[0], p[1] if len(p) > 1 else "") for p in pairs]


def default_state_path(repo: Path, good: str, bad: str, recipe: str) -> Path:
    key = hashlib.sha256(f"{repo.resolve()}\0{good}\0{bad}\0{recipe}".encode()).hexdigest()[:16]
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "perfbot" / "bisect" / f"{good[:12]}-{bad[:12]}-{key}.json"


@dataclass(frozen=True)
class Criteria:
    """How a bisect decides: the significance level of its one-sided Mann-Whitney U tests, the
    percent by which bad must be slower than good to bisect at all, and the measurement rounds a
    commit gets before an ambiguous one is classified by the nearer median."""

    alpha: float
    min_slowdown_percent: float
    max_rounds: int


def bisect(
    repo: Path,
    good_rev: str,
    bad_rev: str,
    prober: Prober,
    criteria: Criteria,
    *,
    state_path: Path | None = None,
    max_probes: int | None = None,
    on_probe: Callable[[Probe], None] = lambda probe: None,
) -> Outcome:
    """Find the first bad commit, stopping after `max_probes` new commits measured (the state file
    at `state_path` resumes it); `on_probe` is told of each. Raises NotReproduced (a BadInput) when
    bad is not significantly slower than good."""
    if not (repo / ".git").exists() and git.run(repo, "rev-parse", "--git-dir").returncode != 0:
        raise BadInput(f"{repo}: not a git repository")
    good, bad = git.named_commit(repo, good_rev), git.named_commit(repo, bad_rev)
    if good == bad:
        raise BadInput("good and bad are the same commit")
    commits = commits_between(repo, good, bad)
    subjects = dict(commits) | {good: git.run(repo, "log", "-1", "--format=%s", good).stdout.strip()}
    state_path = state_path or default_state_path(repo, good, bad, prober.recipe)
    state = _resume(state_path, repo, good, bad, prober.recipe)
    budget = [max_probes]

    def probe(sha: str) -> Probe:
        known = state.probes.get(sha)
        if known is not None and (known.samples or known.unusable):
            return known
        if budget[0] is not None:
            if budget[0] <= 0:
                raise _Paused()
            budget[0] -= 1
        current = Probe(sha, clean(subjects.get(sha, "")))
        try:
            _add(current, prober.measure(sha))
            current.rounds = 1
        except Unusable as why:
            current.unusable = clean(str(why))
        state.probes[sha] = current
        state.save(state_path)
        on_probe(current)
        return current

    try:
        ends = [probe(good), probe(bad)]
        for end, name in zip(ends, ("good", "bad"), strict=False):
            if end.unusable:
                raise BadInput(f"the {name} end {end.sha[:12]} cannot be measured: {end.unusable}")
        good_probe, bad_probe = ends
        good_probe.verdict, bad_probe.verdict = "good", "bad"
        p = mann_whitney_p(good_probe.samples, bad_probe.samples, "greater")
        slowdown = 100 * (_ms(bad_probe) / _ms(good_probe) - 1)
        alpha, min_slowdown_percent = criteria.alpha, criteria.min_slowdown_percent
        if not (p < alpha and slowdown > min_slowdown_percent):
            raise NotReproduced(
                f"bad {bad[:12]} is not significantly slower than good {good[:12]}: medians "
                f"{bad_probe.median_ms:.4f} vs {good_probe.median_ms:.4f} ms ({slowdown:+.2f}%, one-sided "
                f"Mann-Whitney p={p:.2g}; needs p < {alpha:g} and more than {min_slowdown_percent:g}%)",
                good_probe,
                bad_probe,
            )
        order = [good] + [sha for sha, _ in commits]  # index 0 is good, the last is bad
        lo, hi = 0, len(order) - 1
        while hi - lo > 1:
            index = _next_index(order, lo, hi, state.probes)
            if index is None:
                break  # every commit left in between is unusable
            current = probe(order[index])
            if current.unusable:
                continue
            _classify(current, good_probe, bad_probe, criteria, prober, lambda: state.save(state_path))
            if current.verdict == "bad":
                hi = index
            else:
                lo = index
    except _Paused:
        raise EnvironmentFailure(
            f"stopped after the probe limit; the state is in {state_path}: run the same command again to go on"
        ) from None

    probes = tuple(state.probes[sha] for sha in [good] + [c for c, _ in commits] if sha in state.probes)
    candidates = tuple(order[lo + 1 : hi + 1])
    notes = tuple(f"{p.sha[:12]}: {p.note}" for p in probes if p.note and "not monotonic" in p.note)
    last_good, earliest_bad = state.probes[order[lo]], state.probes[order[hi]]
    return Outcome(
        order[hi] if len(candidates) == 1 else None,
        candidates,
        probes,
        notes,
        state_path,
        len(order),
        last_good.sha,
        earliest_bad.sha,
        compiled_change(last_good.compiled, earliest_bad.compiled, ("last good commit", "bad commit")),
        "; ".join(difference(last_good.autotune, earliest_bad.autotune, ("the last good commit", "the bad commit")))
        or None,
    )


class _Paused(Exception):
    pass


def _resume(path: Path, repo: Path, good: str, bad: str, recipe: str) -> State:
    if path.is_dir():
        raise BadInput(f"{path}: is a directory, not a bisect state file")
    if not path.exists():
        return State(STATE_VERSION, str(repo.resolve()), good, bad, recipe, {})
    state = State.load(path)
    if (state.good, state.bad, state.recipe) != (good, bad, recipe):
        raise BadInput(f"{path}: holds another bisect (other ends or commands); use another --state or delete it")
    return state


# The fewest samples a probe's Mann-Whitney U tests take.
FEWEST_SAMPLES = 3


def _add(probe: Probe, measured: Measured) -> None:
    """A measurement's samples added to the probe's, and its compiled kernels if it had none."""
    if len(measured.samples) < FEWEST_SAMPLES:
        raise Unusable(f"measure gave {len(measured.samples)} sample(s); at least {FEWEST_SAMPLES} are needed")
    probe.samples = probe.samples + measured.samples
    if probe.compiled is None:
        probe.compiled = measured.compiled
    if not probe.autotune:
        probe.autotune = list(measured.autotune)


def _next_index(order: list[str], lo: int, hi: int, probes: dict[str, Probe]) -> int | None:
    """The middle of (lo, hi), or the usable commit nearest to it, as `git bisect skip` does."""
    middle = (lo + hi) // 2
    for distance in range(hi - lo):
        for index in (middle - distance, middle + distance):
            if lo < index < hi:
                known = probes.get(order[index])
                if known is None or not known.unusable:
                    return index
    return None


# Where a commit sits between the ends, in log-time: 0 at good, 1 at bad. Non-monotonic evidence
# needs significance and a real effect: this share of the good-to-bad step beyond an end (or this
# far inside both ends, for a commit between them). Significance alone flagged two bad commits
# whose difference was a small fraction of the step (experiments/2026-11-30-h200-bisect-demo).
NON_MONOTONIC_MARGIN = 0.25


def _classify(
    current: Probe, good: Probe, bad: Probe, criteria: Criteria, prober: Prober, save: Callable[[], None]
) -> None:
    """Bad if significantly slower than good (so bisect finds the earliest slowdown, also when it
    came in steps); good if significantly faster than bad; otherwise measure again, and after
    max_rounds let the nearer median decide."""
    if current.verdict is not None:
        return
    alpha, max_rounds = criteria.alpha, criteria.max_rounds
    while True:
        slower_than_good = mann_whitney_p(good.samples, current.samples, "greater") < alpha
        faster_than_bad = mann_whitney_p(bad.samples, current.samples, "less") < alpha
        if slower_than_good or faster_than_bad:
            current.verdict = "bad" if slower_than_good else "good"
            break
        if current.rounds >= max_rounds:
            current.verdict = "bad" if _position(current, good, bad) > 0.5 else "good"
            current.note = f"ambiguous after {current.rounds} rounds; classified by the nearer median"
            break
        try:
            _add(current, prober.measure(current.sha))
        except Unusable as why:
            current.note = clean(f"a further round failed ({why}); classified with the samples at hand")
            current.rounds = max_rounds
            continue
        current.rounds += 1
        save()
    position = _position(current, good, bad)
    if position < -NON_MONOTONIC_MARGIN and mann_whitney_p(good.samples, current.samples, "less") < alpha:
        current.note = "significantly faster than the good end: range not monotonic"
    elif position > 1 + NON_MONOTONIC_MARGIN and mann_whitney_p(bad.samples, current.samples, "greater") < alpha:
        current.note = "significantly slower than the bad end: range not monotonic"
    elif NON_MONOTONIC_MARGIN < position < 1 - NON_MONOTONIC_MARGIN and slower_than_good and faster_than_bad:
        current.note = (
            "between the two ends (slower than good, faster than bad): range not monotonic, the slowdown comes in steps"
        )
    save()


def _position(current: Probe, good: Probe, bad: Probe) -> float:
    return math.log(_ms(current) / _ms(good)) / math.log(_ms(bad) / _ms(good))


def _ms(probe: Probe) -> float:
    """The median of a probe that was measured (every probe classified has samples)."""
    if probe.median_ms is None:
        raise EnvironmentFailure(f"{probe.sha[:12]} has no samples to compare")
    return probe.median_ms
