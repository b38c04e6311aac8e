"""Sequential sampling for the interleaved A/B: instead of a fixed number of rounds, keep timing
the pairs whose verdict is still open, in blocks of measure.BLOCK_ROUNDS rounds, look after every
block, and drop each pair as soon as it is decided, until its rounds or the time budget run out.

Looking again and again is safe because the verdict rests on a confidence sequence
(compare.judge_paired), valid at every number of blocks at once; a fixed-sample test looked at
this often would raise false alarms. Before every block but the first, the open benchmarks are
captured again at a random offset in memory: two captures of the same code can differ by a
percent on a short or memory-bound kernel (where its buffers lie), and one capture per side would
turn that into a difference the test sees ever more surely. The block is the unit the verdict
counts. A benchmark without a partner on the other side (an implementation one side lacks) has
nothing to decide: it is timed for the first look only.

From the second block on, the two sides of a pair of kernels of SIDE_BY_SIDE_MS or more are timed
one right after the other (measure.round_order says in which order), so that their samples are
not tens of milliseconds apart on a clock that wanders under a power cap; shorter ones stay
spread over the round, since back to back the first of two short kernels runs slower than the
second (docs/method.md, "Measurement you can trust", holds the figures).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..deciding.compare import judge_paired
from ..deciding.stats import Floats, fewest_units, median
from ..deciding.thresholds import Policy, Rule
from ..errors import BadInput
from ..loading.subject import Case
from . import measure
from .measure import BLOCK_ROUNDS

# An A/B row's second pair of captures, each side at its own autotune picks (alignment.py): the
# arm its benchmarks are planned under, and what their names end in.
OWN_PICKS = "(own picks)"


def without_arm(name: str) -> str:
    """A benchmark's name without the arm it was timed in: the implementation with its variant."""
    return name.removesuffix(f" {OWN_PICKS}")


# Pairs whose baseline takes at least this long (median so far) are timed side by side.
SIDE_BY_SIDE_MS = 0.08


def side_by_side(pairs: Iterable[tuple[str, str]], samples: Mapping[str, Floats]) -> list[tuple[str, str]]:
    """The pairs to time side by side: those whose base has taken SIDE_BY_SIDE_MS or more so far
    (none before their first samples). The median by stats.median: before every block, over thousands
    of rounds."""
    return [
        (base, cur) for base, cur in pairs if len(samples.get(base, ())) and median(samples[base]) >= SIDE_BY_SIDE_MS
    ]


@dataclass(frozen=True)
class PolicyRules:
    """The interleaved rule of each benchmark of a case, from the policy (picklable, for the
    processes of a run sharded across GPUs)."""

    policy: Policy
    gpu: str

    def __call__(self, case: Case, name: str, median_ms: float | None = None) -> Rule:
        kernel = without_arm(name).partition("[")[0]  # results.variant_name: "kernel[param=value,...]"
        return self.policy.rule_for(kernel, case.suite, case.dtype, self.gpu, case.shape, True, median_ms)


@dataclass(frozen=True)
class Stopping:
    """When sampling stops: every pair has `first` rounds, at most `most`; the whole run's
    sampling gets `seconds`, shared out case by case (a case that decides early leaves its time
    to the later ones, and one whose share ran out comes back for a second: `Turns`); a pair is
    decided when compare.judge_paired, under `rules(case, name)`, says more than "inconclusive"."""

    first: int
    most: int
    seconds: float
    rules: Callable[[Case, str, float | None], Rule]  # case, benchmark name, the baseline's median ms

    def __post_init__(self) -> None:
        if self.most < self.first:
            raise BadInput(f"at most {self.most} rounds is fewer than the {self.first} of the first look")
        if not self.seconds > 0:  # NaN too
            raise BadInput(f"the time budget must be a positive number of seconds, got {self.seconds:g}")

    def decided(self, case: Case, name: str, baseline: Floats, current: Floats) -> bool:
        # Arrays made once, by numpy: at every look of a long A/B, over thousands of rounds.
        base = np.asarray(baseline, dtype=float)
        rule = self.rules(case, name, median(base) if len(base) else None)
        if len(current) < max(rule.min_samples, self.first):
            return False
        return judge_paired(base, np.asarray(current, dtype=float), rule, BLOCK_ROUNDS).verdict != "inconclusive"


class Budget:
    """The sampling time left, shared out case by case: each case may sample for an equal share
    of what is left, and what it did not use goes back to the cases after it. A share is set
    aside when it is handed out, so that cases sampling at once on several GPUs cannot spend the
    same seconds twice. Setup (checking, compiling, capturing) is not counted. With `parallel`
    GPUs, the budget is that many GPU-seconds per second."""

    def __init__(self, seconds: float, cases: int, parallel: int = 1):
        self.left = seconds * parallel
        self.cases_left = cases

    def next_share(self) -> float:
        """Seconds of sampling for the next case, set aside until `spend` says what it used."""
        share = max(self.left, 0.0) / max(self.cases_left, 1)
        self.cases_left -= 1
        self.left -= share
        return share

    def spend(self, used: float, share: float) -> None:
        """A case sampled for `used` seconds of its `share`: the rest goes back."""
        self.left += share - used

    def again(self, cases: int) -> None:
        """`cases` will come back for another share."""
        self.cases_left += cases


@dataclass(frozen=True)
class Turn:
    """One case's turn to be measured: its index in the run, its seconds of sampling, and, on
    its second turn, what its first measured."""

    index: int
    share: float
    earlier: measure.Timings | None = None

    @property
    def first(self) -> bool:
        """Whether this is the case's first turn: only a first may leave pairs open for a second."""
        return self.earlier is None


class Turns:
    """Hands out a run's cases one at a time to the GPUs that measure them, each with its share
    of the sampling budget. A case whose share ran out before its pairs were decided (the
    largest kernels, whose rounds are longest) comes back for a second turn
    once every case has had its first, with the time the quicker cases left, on the GPU that
    measured it (its samples pair up only with that GPU's). Thread-safe: one thread drives each
    GPU."""

    def __init__(self, cases: int, budget: Budget | None):
        self.budget = budget
        self.first = list(reversed(range(cases)))
        self.second: dict[object, list[tuple[int, measure.Timings]]] = {}
        self.uncounted = 0  # second turns the budget does not share out to yet
        self.stopped = False
        self.lock = threading.Lock()

    def take(self, gpu: object = None) -> Turn | None:
        """The next turn for `gpu`, or None when it has nothing left to measure."""
        with self.lock:
            if self.stopped:
                return None
            if self.first:
                index, earlier = self.first.pop(), None
            elif self.second.get(gpu):
                index, earlier = self.second[gpu].pop(0)
                # Second turns share only what every first turn left, so that a case sent back
                # never shrinks the share of one still waiting for its first.
                if self.budget is not None:
                    self.budget.again(self.uncounted)
                self.uncounted = 0
            else:
                return None
            return Turn(index, self.budget.next_share() if self.budget is not None else 0.0, earlier)

    def done(self, turn: Turn, used: float, unfinished: measure.Timings | None = None, gpu: object = None) -> None:
        """The turn sampled for `used` seconds; `unfinished`, its timings if it needs a second turn."""
        with self.lock:
            if self.budget is not None:
                self.budget.spend(used, turn.share)
            if unfinished is not None and not self.stopped:
                self.uncounted += 1
                self.second.setdefault(gpu, []).append((turn.index, unfinished))

    def stop(self) -> None:
        """Hand out nothing more (the run failed)."""
        with self.lock:
            self.stopped = True
            self.first.clear()
            self.second.clear()


def first_look(samples: int, alpha: float) -> int:
    """Rounds before the first look: `samples`, but at least the whole blocks a confidence
    sequence at 1 - alpha needs before it can decide anything (12 blocks at alpha 0.01)."""
    blocks = fewest_units(1 - alpha)
    return max(samples, blocks * BLOCK_ROUNDS)


def pairs_of(keys: Sequence[str], baseline: str = "base", current: str = "head") -> dict[str, tuple[str, str]]:
    """The benchmarks of an A/B case that both sides have: name -> (baseline key, current key),
    from keys "SIDE:NAME" (planning.Planned.key)."""
    present = set(keys)
    pairs = {}
    for key in keys:
        side, _, name = key.partition(":")
        other = f"{current}:{name}"
        if side == baseline and other in present:
            pairs[name] = (key, other)
    return pairs


def time_until_decided(
    case: Case,
    timer: measure.Timer,
    keys: Sequence[str],
    pairs: Mapping[str, tuple[str, str]],
    stopping: Stopping,
    deadline: float,
    on_round: Callable[[], None] | None = None,
    monitor: measure.Monitor | None = None,
    clock: Callable[[], float] = time.monotonic,
    recapture: Callable[[list[str]], None] | None = None,
    earlier: measure.Timings | None = None,
    seed: int | str = 0,
) -> measure.Timings:
    """Interleaved rounds (measure.time_rounds), block by block, over the keys of the pairs still
    open, the two keys of each long one side by side; `recapture(keys)` gives those keys fresh
    captures before each block but the first. Keys only ever leave, so sample i of every key
    comes from round i, and both keys of a pair always have the same number of samples.

    `earlier`, the timings of a case sampled before (`runner.measure_sides` comes back to a case
    whose time ran out): its samples come first, and only the pairs it left open, timed to its
    last round, go on. `seed` draws which side of each pair takes which of its places, block by
    block (measure.round_order): each case, and each A/B of it, should have a seed of its own."""
    samples: dict[str, list[float]] = {key: [] for key in keys}
    rounds: list[measure.Round] = []
    open_pairs = dict(pairs)
    if earlier is not None:
        rounds = list(earlier.rounds)
        for key in keys:
            samples[key] = list(earlier.samples.get(key, []))
        open_pairs = undecided(case, pairs, measure.Timings(samples, rounds), stopping)
    active = [key for key in keys if earlier is None or any(key in pair for pair in open_pairs.values())]
    # The samples as arrays too, grown block by block: each look reads every open pair's whole
    # history, and making it an array from the list again would cost more than the look.
    arrays = {key: np.asarray(values, dtype=float) for key, values in samples.items()}
    while active:
        if rounds and recapture is not None:
            recapture(active)
        batch = min(BLOCK_ROUNDS, stopping.most - len(rounds))  # one block, on its own captures
        if batch <= 0:
            break
        both_active = [(base, cur) for base, cur in open_pairs.values() if base in active and cur in active]
        together = side_by_side(both_active, arrays)
        timed = measure.time_rounds(timer, active, batch, on_round, monitor, len(rounds), both_active, together, seed)
        for key, values in timed.samples.items():
            samples[key] += values
            arrays[key] = np.concatenate((arrays[key], values))
        rounds += timed.rounds
        if len(rounds) < stopping.first:
            continue
        open_pairs = {
            name: (base, cur)
            for name, (base, cur) in open_pairs.items()
            if not stopping.decided(case, name, arrays[base], arrays[cur])
        }
        if len(rounds) >= stopping.most or clock() >= deadline:
            break
        still = {key for pair in open_pairs.values() for key in pair}
        active = [key for key in active if key in still]
    return measure.Timings(samples, rounds)


def undecided(
    case: Case, pairs: Mapping[str, tuple[str, str]], timings: measure.Timings, stopping: Stopping
) -> dict[str, tuple[str, str]]:
    """The pairs timed to the last round and not decided: those sampling would go on with."""
    last = len(timings.rounds)
    return {
        name: (base, cur)
        for name, (base, cur) in pairs.items()
        if len(timings.samples[base]) == len(timings.samples[cur]) == last > 0
        and not stopping.decided(case, name, timings.samples[base], timings.samples[cur])
    }


def still_open(case: Case, pairs: Mapping[str, tuple[str, str]], timings: measure.Timings, stopping: Stopping) -> bool:
    """Whether sampling left a pair of the case undecided with rounds to spare (its time ran out)."""
    return len(timings.rounds) < stopping.most and bool(undecided(case, pairs, timings, stopping))
