"""`perfbot selftest`: how well the bot sees on the runner at hand, with the rule in force.

- False alarms: A/A, one kernel against a second capture of itself, interleaved.
- Sensitivity: A/B at several nominal slowdowns: the kernel followed by the shortest
  `torch.cuda._sleep`, against the kernel followed by a sleep longer by a calibrated number of
  cycles (each level's pair of its own, as each benchmark of an A/B has its own base). Both sides
  carry the sleep kernel, so its own launch is not part of the slowdown and levels below it can
  be injected (docs/method.md, "`perfbot selftest`"). The slowdown actually
  injected is reported as measured (median ratio of the two sides over all rounds), not as
  asked for.

Each check is one sequential A/B as `perfbot ab` takes it (sequential.py): interleaved rounds of
all of them until every comparison is decided by the interleaved rule, or the check's rounds run
out. The pull-request check fails only when a second A/B confirms the first, so checks are also
judged in consecutive pairs: a pair flags when both of its checks do.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import mean, median, stdev
from typing import Any

from ..deciding.compare import judge_paired
from ..deciding.picks import picked
from ..deciding.thresholds import Policy, Rule
from ..errors import EnvironmentFailure, WrongResult
from ..loading.package import Loaded, load_subject
from ..loading.subject import Case, Suite
from .measure import BLOCK_ROUNDS
from .sequential import SIDE_BY_SIDE_MS, Stopping, first_look, side_by_side, time_until_decided

BASE, TWIN = "A", "A2"  # the kernel, and a second capture of it
# Rounds between fresh captures in a calibration trial (a check's blocks are shorter, but a few
# hundred placements average as well), and blocks of the first trial.
CALIBRATION_BLOCK = 8
CALIBRATION_ROUNDS = 8 * CALIBRATION_BLOCK
# The later trials take enough blocks that the injection lands within a tenth of the smallest
# level (one standard error), up to CALIBRATION_MOST_ROUNDS: a short kernel's per-round ratio
# spreads by percents, and where a capture lands moves it too
# (experiments/2026-12-01-h200-short-kernel-gate).
CALIBRATION_PRECISION = 0.1
CALIBRATION_MOST_ROUNDS = 4096
# The sleep both sides of a level carry: the shortest, about the launch of the sleep kernel.
BASE_SLEEP_CYCLES = 1


def slowed(level: float) -> str:
    return f"B{level:g}"


def unslowed(level: float) -> str:
    """The kernel and the shortest sleep, that the level's slowed copy is timed against."""
    return f"A@{level:g}"


@dataclass(frozen=True)
class Flagged:
    """How often one comparison flagged over the checks: single checks, and consecutive pairs of
    checks where the second confirms the first (what fails a pull-request check); how many
    checks ended undecided, and how many rounds the checks took (median and most)."""

    checks: int
    flagged: int
    pairs: int
    confirmed: int
    undecided: int = 0
    median_rounds: float = 0.0
    most_rounds: int = 0

    @classmethod
    def of(cls, verdicts: list[str], fails: list[bool], rounds: list[int]) -> Flagged:
        pairs = len(fails) // 2
        confirmed = sum(fails[2 * i] and fails[2 * i + 1] for i in range(pairs))
        undecided = sum(verdict == "inconclusive" for verdict in verdicts)
        return cls(len(fails), sum(fails), pairs, confirmed, undecided, median(rounds), max(rounds))

    def to_json(self) -> dict:
        return {
            "checks": self.checks,
            "flagged": self.flagged,
            "rate": self.flagged / self.checks,
            "pairs": self.pairs,
            "confirmed": self.confirmed,
            "confirmed_rate": self.confirmed / self.pairs if self.pairs else None,
            "undecided": self.undecided,
            "median_rounds": self.median_rounds,
            "most_rounds": self.most_rounds,
        }


@dataclass(frozen=True)
class LevelResult:
    nominal_percent: float
    measured_percent: float  # median over checks of median(B)/median(A) - 1
    detections: Flagged

    @property
    def as_asked(self) -> bool:
        """Whether the injection landed within half the asked slowdown of it (the calibration
        corrects the sleep by measuring it; on a noisy runner it can still miss)."""
        return abs(self.measured_percent - self.nominal_percent) <= self.nominal_percent / 2


@dataclass(frozen=True)
class SelftestResult:
    false_alarms: Flagged
    levels: tuple[LevelResult, ...]
    rule: str
    kernel_ms: float

    def to_json(self) -> dict:
        return {
            "rule": self.rule,
            "kernel_median_ms": self.kernel_ms,
            "false_alarms": self.false_alarms.to_json(),
            "levels": [
                {
                    "nominal_percent": level.nominal_percent,
                    "measured_percent": level.measured_percent,
                    "as_asked": level.as_asked,
                    "detections": level.detections.to_json(),
                }
                for level in self.levels
            ],
        }


def _judged(baseline: list[float], current: list[float], rule: Rule) -> tuple[str, bool]:
    """One benchmark judged as `perfbot compare` judges an interleaved A/B pair, in blocks: its
    verdict and whether it fails. The baseline's samples are cut to the rounds both took."""
    judged = judge_paired(baseline[: len(current)], current, rule, BLOCK_ROUNDS)
    return judged.verdict, judged.fails


def _flagged(checks: list[dict[str, list[float]]], base: str, name: str, rule: Rule) -> Flagged:
    judged = [_judged(check[base], check[name], rule) for check in checks]
    return Flagged.of([v for v, _ in judged], [f for _, f in judged], [len(check[name]) for check in checks])


def tally(checks: list[dict[str, list[float]]], levels: tuple[float, ...], policy: Policy) -> SelftestResult:
    """Judge every check: A/A for false alarms, A against each slowed copy for detections, all by
    the rule for the bare kernel's time (a level's two sides also carry the sleep kernel, and the
    rule must not change with that)."""
    kernel_ms = median(median(check[BASE]) for check in checks)
    rule = selftest_rule(policy, kernel_ms)
    results = []
    for level in levels:
        name = slowed(level)
        base = unslowed(level)
        ratios = [median(check[name]) / median(check[base][: len(check[name])]) for check in checks]
        results.append(LevelResult(level, 100 * (median(ratios) - 1), _flagged(checks, base, name, rule)))
    text = (
        f"sequential A/B, median per-round ratio with a {1 - rule.alpha:.0%} confidence sequence: fails above "
        f"+{rule.warn_percent:g}%, passes below +{rule.fail_percent:g}% (interleaved policy of {policy.source})"
    )
    return SelftestResult(_flagged(checks, BASE, TWIN, rule), tuple(results), text, kernel_ms)


def selftest_rule(policy: Policy, kernel_ms: float | None) -> Rule:
    """The interleaved rule a benchmark that takes `kernel_ms` gets (overrides by time apply)."""
    return policy.rule_for("selftest", "", "-", "selftest", {"n": 1}, True, kernel_ms)


def checked_call(loaded: Loaded, case: Case, kernel: str) -> Callable[[], Any]:
    """The benchmark's call on the GPU, checked first like every benchmark: a selftest of a wrong
    kernel would calibrate nothing (WrongResult, exit 1)."""
    return _checked(loaded, case, kernel).call


def _checked(loaded: Loaded, case: Case, kernel: str) -> Any:
    """The benchmark checked (groups._Ready: its call, and the autotune picks its check made)."""
    import torch

    from .groups import check_group
    from .planning import RunSettings, plan
    from .runner import gpu_device

    device = gpu_device()
    only = Suite(case.suite, "", (kernel,), (case,))
    group = plan(loaded, [only], RunSettings(kernels=(kernel,)))[0]  # each variant parameter at its default
    ready, failed = check_group(group, torch.Generator(device=device).manual_seed(0), loaded.subject)
    if failed:
        raise WrongResult(f"{kernel} on {case.suite}/{case.name}: {failed[0][1].reason}; nothing was timed")
    return ready[0]


@dataclass(frozen=True)
class Picks:
    """How the autotuner picked across fresh imports of the subject, each tuning on its own as
    each side of an A/B does: how many imports, how many picked otherwise than the first, and
    each pick (in words) with how many took it."""

    imports: int
    differed: int
    seen: tuple[tuple[str, int], ...]

    def to_json(self) -> dict[str, Any]:
        return {"imports": self.imports, "differed": self.differed, "picks": dict(self.seen)}

    @classmethod
    def from_json(cls, value: Any) -> Picks:
        """What `to_json` wrote, from the subject's process: checked like any message."""
        if not isinstance(value, dict) or not isinstance(value.get("picks"), dict):
            raise EnvironmentFailure("the autotune picks answered something that does not read")
        counts = [value.get("imports"), value.get("differed"), *value["picks"].values()]
        if not all(type(count) is int for count in counts):
            raise EnvironmentFailure("the autotune picks answered counts that are not numbers")
        seen = tuple((str(pick), count) for pick, count in value["picks"].items())
        return cls(value["imports"], value["differed"], seen)


def picks_across_imports(kernels: Path, case: Case, kernel: str, imports: int) -> Picks | None:
    """The benchmark imported `imports` times anew, each import checked (and so tuned) on its own;
    None where it launches no autotuned kernel with a choice."""
    found = []
    for index in range(imports):
        loaded = load_subject(kernels, instance=f"selftest-picks-{index}")
        found.append(picked(_checked(loaded, loaded.case(case.suite, case.name, case.mode), kernel).picks))
    if not any(found):
        return None
    counts: dict[str, int] = {}
    for pick in found:
        counts[pick] = counts.get(pick, 0) + 1
    return Picks(imports, sum(pick != found[0] for pick in found), tuple(counts.items()))


@dataclass(frozen=True)
class Plan:
    """What a selftest measures, for each GPU's worker when it is shared out across GPUs."""

    kernels: Path
    suite: str
    case: str
    kernel: str
    levels: tuple[float, ...]
    first: int
    most: int
    policy: Policy
    mode: str = "forward"


def checks_in_worker(plan: Plan, checks: int, seed: int = 0) -> list[dict[str, list[float]]]:
    """`checks` checks on this worker's GPU (shards.on_each_gpu): the subject loaded, the
    benchmark checked, calibrated and measured here."""
    loaded = load_subject(plan.kernels)
    call = checked_call(loaded, loaded.case(plan.suite, plan.case, plan.mode), plan.kernel)
    return measure_checks(call, plan.levels, checks, plan.first, plan.most, plan.policy, seed=seed)


def shares(checks: int, gpus: int) -> list[int]:
    """`checks` shared out as evenly as they go across `gpus`."""
    return [checks // gpus + (index < checks % gpus) for index in range(gpus)]


def calibration_rounds(trial: dict[str, list[float]], levels: tuple[float, ...]) -> int:
    """Rounds for the next calibration trial, from this one's blocks (each on captures of its
    own): the standard error of the level's ratio of medians, taken as 1.25 sd / sqrt(blocks) of
    the blocks' own log ratios of medians, at CALIBRATION_PRECISION of the smallest level."""

    def blocks_spread(level: float) -> float:
        bases, heads = trial[unslowed(level)], trial[slowed(level)]
        blocks = range(0, len(bases), CALIBRATION_BLOCK)
        return stdev(
            math.log(median(heads[at : at + CALIBRATION_BLOCK]) / median(bases[at : at + CALIBRATION_BLOCK]))
            for at in blocks
        )

    spread = max(blocks_spread(level) for level in levels)
    blocks = math.ceil((1.25 * spread / (CALIBRATION_PRECISION * min(levels) / 100)) ** 2)
    return min(CALIBRATION_MOST_ROUNDS, max(CALIBRATION_ROUNDS, blocks * CALIBRATION_BLOCK))


def followed_by_sleep(fn: Callable[[], Any], cycles: int) -> Callable[[], Any]:
    """`fn`, then a `torch.cuda._sleep` of `cycles` GPU cycles: `fn` slowed by a known amount (of
    a Staged call, a backward mode's, what is timed of it)."""
    import torch

    from .measure import Staged

    timed = fn.call if isinstance(fn, Staged) else fn

    def call() -> Any:
        out = timed()
        torch.cuda._sleep(cycles)
        return out

    return Staged(fn.before, call) if isinstance(fn, Staged) else call


def sleep_line(captured: Any, fn: Callable[[], Any]) -> tuple[float, float]:
    """On the GPU: the median milliseconds of `captured` (a capture of `fn`), and what one cycle of
    sleep after `fn` adds, from two sleeps long enough to be on the sleep's line."""
    from . import measure

    short_cycles, long_cycles = 100_000, 1_000_000
    timed = measure.time_interleaved(
        {
            BASE: captured,
            "short": measure.capture(followed_by_sleep(fn, short_cycles), 2),
            "long": measure.capture(followed_by_sleep(fn, long_cycles), 2),
        },
        31,
    ).samples
    kernel_ms, short_ms, long_ms = (median(timed[name]) for name in (BASE, "short", "long"))
    return kernel_ms, max(long_ms - short_ms, 1e-6) / (long_cycles - short_cycles)


def measure_checks(
    fn: Callable[[], Any],
    levels: tuple[float, ...],
    checks: int,
    first: int,
    most: int,
    policy: Policy,
    on_check: Callable[[], None] = lambda: None,
    on_calibrated: Callable[[], None] = lambda: None,
    seed: int = 0,
) -> list[dict[str, list[float]]]:
    """On the GPU: capture the kernel twice, and per level the kernel followed by the shortest
    sleep and by a calibrated longer one; each check times them interleaved (perfbot's engine)
    until every comparison is decided (sequential.py), at least `first` and at most `most` rounds.
    `seed` draws the captures' placements and the sides' places in each round (a GPU's worker
    takes its own, so that its checks are not another GPU's over again)."""
    from . import measure

    base = measure.capture(fn, 3)
    kernel_ms, ms_per_cycle = sleep_line(base, fn)
    cycles = {level: BASE_SLEEP_CYCLES + max(1, int(level / 100 * kernel_ms / ms_per_cycle)) for level in levels}

    # As an A/B lists its benchmarks, every base before every head: spread over a round (kernels
    # under SIDE_BY_SIDE_MS), the two of a comparison are then never back to back but at the wrap.
    def checked(cycles: dict[float, int]) -> dict[str, Callable[[], Any]]:
        calls = {BASE: fn, **{unslowed(level): followed_by_sleep(fn, BASE_SLEEP_CYCLES) for level in levels}}
        return calls | {TWIN: fn, **{slowed(level): followed_by_sleep(fn, cycles[level]) for level in levels}}

    pairs = {TWIN: (BASE, TWIN), **{slowed(level): (unslowed(level), slowed(level)) for level in levels}}
    placement = random.Random(seed)

    def trial(
        cycles: dict[float, int], rounds: int, together: list[tuple[str, str]], seed: str
    ) -> dict[str, list[float]]:
        """Every key of the checks timed as they time them, captured again every CALIBRATION_BLOCK rounds."""
        calls = checked(cycles)
        captured: dict[str, measure.Captured] = {}
        measure.capture_again(captured, calls, list(calls), placement)
        timer = measure.GraphTimer(captured)
        timed: dict[str, list[float]] = {key: [] for key in calls}
        for start in range(0, rounds, CALIBRATION_BLOCK):
            if start:
                measure.capture_again(captured, calls, list(calls), placement)
            block = measure.time_rounds(
                timer,
                list(calls),
                CALIBRATION_BLOCK,
                start=start,
                pairs=list(pairs.values()),
                side_by_side=together,
                seed=seed,
            )
            for key, samples in block.samples.items():
                timed[key] += samples
        return timed

    # Short sleeps stray from that line, and where a capture lands moves a short kernel by up to a
    # percent: measure each level against its base as the checks time them (`trial`), correct its
    # length, then twice more over enough blocks to place it (calibration_rounds), and take the
    # mean of those two lengths. Pairs go side by side as the checks put them: by their base's time.
    together = list(pairs.values()) if kernel_ms >= SIDE_BY_SIDE_MS else []
    rounds = CALIBRATION_ROUNDS
    placed: dict[float, list[int]] = {level: [] for level in levels}
    for attempt in range(3):
        timed = trial(cycles, rounds, together, f"{seed}/calibration/{attempt}")
        for level in levels:  # by the ratio of medians, as `tally` measures what was injected
            without, with_it = median(timed[unslowed(level)]), median(timed[slowed(level)])
            missing_ms = (level / 100 - (with_it / without - 1)) * without
            cycles[level] = max(BASE_SLEEP_CYCLES + 1, round(cycles[level] + missing_ms / ms_per_cycle))
            if attempt:
                placed[level].append(cycles[level])
        rounds = calibration_rounds(timed, levels)
        together = side_by_side(pairs.values(), timed)  # as the checks put them, by their base's time
    cycles = {level: round(mean(placed[level])) for level in levels}
    on_calibrated()
    calls = checked(cycles)
    # Captured in a drawn order, as every later block is (measure.capture_again), listed as the checks list them.
    captured = {BASE: base}
    for key in placement.sample([key for key in calls if key != BASE], len(calls) - 1):
        captured[key] = measure.capture(calls[key], 1)
    captured = {key: captured[key] for key in calls}

    # Fresh captures before each block, as runner.LocalSides.recapture; every key here is one
    # implementation of one subject, so all share one load of its kernels, and none is rotated.
    def recapture(keys: list[str]) -> None:
        measure.capture_again(captured, calls, keys, placement)

    rules = lambda case, name, ms: selftest_rule(policy, kernel_ms)  # noqa: E731  (as `tally` judges)
    stopping = Stopping(first_look(first, selftest_rule(policy, None).alpha), most, float("inf"), rules)
    case = Case("selftest", "selftest", {"n": 1}, "-")
    timer = measure.GraphTimer(captured)
    collected = []
    for index in range(checks):
        check = time_until_decided(
            case, timer, list(captured), pairs, stopping, float("inf"), recapture=recapture, seed=f"{seed}/{index}"
        )
        collected.append(check.samples)
        on_check()
    return collected
