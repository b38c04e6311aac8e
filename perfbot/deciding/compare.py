"""`perfbot compare`: one verdict per benchmark, and one for the whole comparison.

Per benchmark (matched by kernel, shape, dtype), with significance Benjamini-Hochberg-adjusted
across all benchmarks compared. The baseline's results say which implementations are the
subject's own: only those fail the check, and one of those that the current run lacks fails it
as missing (`_missing`).

- two separate runs: the effect is the ratio of medians current / baseline with a bootstrap
  confidence interval; significance is a two-sided Mann-Whitney U test on the raw samples;
- both sides of one interleaved A/B run: sample i of each side comes from the same round, so the
  samples are paired. The effect is the median per-round ratio with a confidence sequence
  (stats.always_valid_paired_ratio, at 1 - alpha), an interval valid at every number of rounds
  at once: the A/B may look after every few rounds and stop a benchmark as soon as it is decided
  (sequential.py) without raising the false-alarm rate. No adjustment across benchmarks: a
  failing one must fail again in a second A/B (ab.confirm). A GPU clock that changes during the
  run moves both sides of a round together and cancels in the ratio.

Verdicts of two separate runs:

- regression: significant (q < alpha) and slower by more than warn_percent; it fails the check
  only beyond fail_percent;
- improvement: significant and faster by more than warn_percent;
- inconclusive: too few samples, or not significant while the interval still reaches past the
  fail threshold; the reason says what would settle it. Never passes or fails silently;
- unchanged: everything else.

Verdicts of an interleaved A/B, a test with an indifference zone: fail_percent is the smallest
slowdown the check must catch, warn_percent the largest it must let pass.

- regression, failing: the whole interval lies above 1 + warn_percent (surely slower than that);
- improvement: the whole interval lies below 1 - warn_percent;
- unchanged: the whole interval lies below 1 + fail_percent (surely not the slowdown to catch);
- inconclusive: neither yet; the reason says how far the interval is from a decision.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ..errors import BadInput
from ..records.run import Benchmark, Environment, Failure, Merge, Results, same_gpu
from ..records.schema import shown
from . import stats
from .compiled_change import CompiledChange, compiled_change
from .picks import TuningEffect, configs, difference
from .standing import Role, Verdict, fails_check
from .thresholds import Policy, Rule

# Results of a sequential A/B that do not record their blocks (perfbot before 2026-12-01) took five rounds.
UNRECORDED_BLOCK_ROUNDS = 5
# Environment fields that can change a kernel's speed; the GPU model must match outright.
_ENVIRONMENT_FIELDS = ("gpu_sm_count", "driver", "cuda", "torch", "triton", "triton_commit")


@dataclass(frozen=True)
class Judgement:
    """One benchmark's verdict, as the paired judge (judge_paired) and the unpaired one
    (judge_unpaired) give it; a Comparison carries its fields."""

    verdict: Verdict
    fails: bool
    reason: str
    estimate: stats.RatioEstimate


@dataclass(frozen=True)
class Comparison:
    current: Benchmark
    baseline: Benchmark
    verdict: Verdict
    fails: bool
    reason: str
    rule: Rule
    estimate: stats.RatioEstimate | None = None
    p_value: float | None = None
    q_value: float | None = None
    # The fastest baseline on the case and how many times faster than it this benchmark is.
    fastest_baseline: tuple[str, float] | None = None
    config_change: str | None = None  # "BLOCK_N 128 -> 64": a likely cause of any change
    compiled_change: CompiledChange | None = None  # its Triton kernels' compiled code, where it differs
    paired: bool = False  # sample i of each side from one round of an interleaved A/B
    role: Role = "under test"  # whose code it times: only the subject's own can fail (standing.py)
    confirmed: bool | None = None  # a failing A/B row measured again (jobs/ab.confirm): whether it failed again
    # Where the two sides' autotune picks differ, in words (picks.difference); and where the A/B
    # timed each side at its own picks beside a common config, the tuning's verdict.
    picks_difference: tuple[str, ...] = ()
    tuning: TuningEffect | None = None

    @property
    def change_percent(self) -> float:
        """The change its verdict rests on, in percent: its estimate's ratio (paired, the median
        per-round ratio, of blocks' medians in a sequential A/B; else the ratio of medians), not
        the two medians' ratio, which can differ from it by more than a paired threshold. With
        too few samples for a verdict, the same statistic of the samples, unblocked."""
        if self.estimate is not None:
            ratio = self.estimate.ratio
        elif self.paired:
            ratio = float(np.median(np.asarray(self.current.samples_ms) / np.asarray(self.baseline.samples_ms)))
        else:
            ratio = self.current.median_ms / self.baseline.median_ms
        return 100 * (ratio - 1)


@dataclass(frozen=True)
class EnvironmentDifference:
    field: str
    baseline: str | int | float | bool | None
    current: str | int | float | bool | None


@dataclass(frozen=True)
class Report:
    comparisons: tuple[Comparison, ...]
    added: tuple[Benchmark, ...]
    removed: tuple[Benchmark, ...]
    failures: tuple[Failure, ...]  # wrong results in the current run
    geomean_ratio: float | None
    differences: tuple[EnvironmentDifference, ...]
    baseline_environment: Environment = field(repr=False)
    current_environment: Environment = field(repr=False)
    interleaved: bool
    policy_source: str
    policy_note: str | None = None  # the policy's own note (perfbot's defaults stood in for the project's)
    trend: str | None = None  # one line on the longer trend (an A/B run against a stored baseline)
    # When the two sides' thresholds.yaml differ: which one judged, and what the other changes.
    policy_change: tuple[str, ...] = ()
    # An A/B: what the two sides' subjects declare differently (the base's declarations judged).
    declaration_changes: tuple[str, ...] = ()
    # The subject's own benchmarks the baseline has and the current side does not (an A/B: those
    # the base plans that the head cannot run, declarations.py), each failing.
    missing: tuple[Failure, ...] = ()
    skipped_kernels: tuple[str, ...] = ()  # implementations the current run left out on purpose
    gpus: tuple[str, ...] = ()  # the GPUs the current run was sharded across
    merge: Merge | None = None  # the current side is a head merged into the baseline's commit

    @property
    def fails(self) -> bool:
        return fails_check(self.failures, self.missing, self.comparisons)


def compare(baseline: Results, current: Results, policy: Policy, *, force: bool = False) -> Report:
    gpu = _same_gpu(baseline, current, force)
    interleaved = _interleaved(baseline, current)
    by_key = {b.key: b for b in baseline.benchmarks}
    pairs = [(by_key[c.key], c) for c in current.benchmarks if c.key in by_key]
    rules = [policy.rule_for(c.kernel, c.suite, c.dtype, gpu, c.shape, interleaved, b.median_ms) for b, c in pairs]

    paired = [interleaved and len(base.samples_ms) == len(cur.samples_ms) for base, cur in pairs]
    tested = {}
    for index, ((base, cur), rule) in enumerate(zip(pairs, rules, strict=False)):
        enough = min(len(base.samples_ms), len(cur.samples_ms)) >= rule.min_samples
        if enough and not paired[index]:
            tested[index] = _test(base.samples_ms, cur.samples_ms)
    q_values = dict(zip(tested, stats.benjamini_hochberg([p for _, p in tested.values()]), strict=False))

    comparisons = []
    for index, ((base, cur), rule) in enumerate(zip(pairs, rules, strict=False)):
        n = min(len(base.samples_ms), len(cur.samples_ms))
        p: float | None = None
        q: float | None = None
        tuning: TuningEffect | None = None
        if paired[index] and n >= rule.min_samples:
            block = (current.settings.block_rounds or UNRECORDED_BLOCK_ROUNDS) if current.settings.stopping else 1
            judgement = judge_paired(base.samples_ms, cur.samples_ms, rule, block)
            tuning = _tuning(base, cur, rule, block)
        elif index not in tested:
            comparisons.append(
                Comparison(
                    current=cur,
                    baseline=base,
                    verdict="inconclusive",
                    fails=False,
                    reason=f"{n} samples; the policy needs {rule.min_samples}: "
                    f"re-run with --samples {rule.min_samples} or more",
                    rule=rule,
                    fastest_baseline=current.fastest_baseline(cur),
                    config_change=_config_change(base, cur),
                    compiled_change=compiled_change(base.compiled, cur.compiled),
                    paired=paired[index],
                    role=_role(baseline, current, cur),
                )
            )
            continue
        else:
            estimate, p = tested[index]
            q = q_values[index]
            judgement = judge_unpaired(estimate, p, q, rule, n)
        decided = Comparison(
            current=cur,
            baseline=base,
            verdict=judgement.verdict,
            fails=judgement.fails,
            reason=judgement.reason,
            rule=rule,
            estimate=judgement.estimate,
            p_value=p,
            q_value=q,
            fastest_baseline=current.fastest_baseline(cur),
            config_change=_config_change(base, cur),
            compiled_change=compiled_change(base.compiled, cur.compiled),
            paired=paired[index],
            role=_role(baseline, current, cur),
            picks_difference=difference(base.autotune, cur.autotune),
            tuning=tuning,
        )
        if tuning is not None:
            decided = _with_tuning(decided, tuning)
        if decided.fails and decided.role != "under test":
            decided = dataclasses.replace(
                decided,
                fails=False,
                reason=f"{decided.reason}; not the subject's own implementation (a baseline or a bound): "
                "reported, never failing the check",
            )
        comparisons.append(decided)

    missing = _missing(baseline, current)
    # Not removed: what the current run timed, got wrong (a failure of its own) or lacks (missing).
    current_keys = {c.key for c in current.benchmarks} | {f.key for f in (*current.failures, *missing)}
    ratios = [1 + c.change_percent / 100 for c in comparisons]  # the changes the report shows
    return Report(
        comparisons=tuple(comparisons),
        added=tuple(c for c in current.benchmarks if c.key not in by_key),
        removed=tuple(b for b in baseline.benchmarks if b.key not in current_keys),
        failures=tuple(current.failures),
        geomean_ratio=stats.geometric_mean(ratios) if ratios else None,
        differences=_differences(baseline, current),
        baseline_environment=baseline.environment,
        current_environment=current.environment,
        interleaved=interleaved,
        policy_source=policy.source,
        policy_note=policy.note,
        skipped_kernels=tuple(current.settings.skipped_kernels),
        gpus=tuple(current.settings.gpus),
        merge=current.settings.merge,
        missing=missing,
    )


def _tuning(base: Benchmark, cur: Benchmark, rule: Rule, block: int) -> TuningEffect | None:
    """The tuning's effect of an A/B row timed at each side's own picks too (picks.py)."""
    mine, theirs = base.own_picks, cur.own_picks
    if mine is None or theirs is None or len(mine.samples_ms) != len(theirs.samples_ms):
        return None
    judged = judge_paired(list(mine.samples_ms), list(theirs.samples_ms), rule, block)
    return TuningEffect(
        judged.verdict, judged.fails, judged.reason, judged.estimate, configs(mine.autotune), configs(theirs.autotune)
    )


def _with_tuning(decided: Comparison, tuning: TuningEffect) -> Comparison:
    """A row that separates the code's effect (its samples, at a common config) from the tuning's:
    it fails if either does, and its reason names each."""
    code = f"the code's effect, both sides at a common config: {decided.reason}"
    tuned = f"the tuning's effect, each side at its own picks (base {tuning.base}; head {tuning.head}): {tuning.reason}"
    failing = [name for name, fails in (("the code's", decided.fails), ("the tuning's", tuning.fails)) if fails]
    lead = f"{' and '.join(failing)} effect fails; " if failing else ""
    return dataclasses.replace(decided, fails=bool(failing), reason=f"{lead}{code}; {tuned}")


def _test(baseline: list[float], current: list[float]) -> tuple[stats.RatioEstimate, float]:
    return stats.ratio_of_medians(baseline, current), stats.mann_whitney_p(baseline, current)


def judge_paired(baseline: stats.Floats, current: stats.Floats, rule: Rule, block: int = 1) -> Judgement:
    """The verdict on the paired samples of one interleaved A/B benchmark, on its confidence
    sequence; the same at every look, so the A/B can stop sampling it as soon as it is decided
    (sequential.py). With `block` > 1 the units are blocks of that many rounds, each the median
    of its per-round ratios (a sequential A/B re-captures every block, and a capture's own bias
    is shared by its block's rounds); rounds past the last whole block wait for the next look.
    Returns the verdict a Comparison carries."""
    ratios = np.asarray(current, dtype=float) / np.asarray(baseline, dtype=float)
    n = len(ratios) // block * block
    # Fewer rounds than one block: one unit, which decides nothing (never single rounds as units).
    units = stats.row_medians(ratios[:n].reshape(-1, block)) if n else np.array([np.median(ratios)])
    estimate = stats.always_valid_paired_ratio(np.ones(len(units)), units, confidence=1 - rule.alpha)
    slower, low, high = (100 * (value - 1) for value in (estimate.ratio, estimate.low, estimate.high))
    counted = f"{n} rounds in {n // block} blocks" if block > 1 else f"{len(ratios)} rounds"
    interval = f"{estimate.confidence:.0%} interval [{estimate.low:.4f}, {estimate.high:.4f}] after {counted}"
    verdict: Verdict
    if low > rule.warn_percent:
        verdict, fails = "regression", True
        reason = f"{slower:+.2f}%, surely slower than +{rule.warn_percent:g}% ({interval})"
    elif high < -rule.warn_percent:
        verdict, fails = "improvement", False
        reason = f"{slower:+.2f}%, surely faster than -{rule.warn_percent:g}% ({interval})"
    elif high < rule.fail_percent:
        verdict, fails = "unchanged", False
        reason = f"{slower:+.2f}%, surely under the +{rule.fail_percent:g}% slowdown to catch ({interval})"
    else:
        verdict, fails = "inconclusive", False
        reason = f"{slower:+.2f}%, undecided: the {interval} {_short_of(estimate, max(n, len(ratios)), rule)}"
    return Judgement(verdict, fails, reason, estimate)


def _short_of(estimate: stats.RatioEstimate, n: int, rule: Rule) -> str:
    """Why an interleaved benchmark is undecided: how wide its interval is against the gap between
    the two thresholds it must clear, and about how many rounds would narrow it enough (the width
    shrinks about as one over the square root of the rounds)."""
    width = 100 * (estimate.high - estimate.low)
    gap = rule.fail_percent - rule.warn_percent
    reaches = f"reaches both +{rule.warn_percent:g}% and +{rule.fail_percent:g}%"
    if gap <= 0:  # overrides that leave no room between the two thresholds
        return f"{reaches}, and no interval can lie between them (warn_percent >= fail_percent)"
    if width <= gap or estimate.high == float("inf") or estimate.low <= 0:
        return f"{reaches}; more rounds would decide it"
    return f"{reaches}: {width:.2f}% wide against a {gap:g}% gap, about {n * (width / gap) ** 2:,.0f} rounds to decide"


def _role(baseline: Results, current: Results, bench: Benchmark) -> Role:
    """Whose code `bench` times; only the subject's own implementations can fail the check. A
    baseline or a bound runs code the measured repository does not change; its slowdown says
    the environment moved, which the report shows. The base judges: the baseline's results name
    the subject's own and the bounds, so a head that stops naming its kernel does not take it
    out of the check. Results that do not say which implementations are the subject's own
    (format 1) leave it to the current run's; where neither says, every benchmark is judged."""
    judging = baseline.settings if baseline.settings.under_test else current.settings
    if not judging.under_test or bench.kernel in judging.under_test:
        return "under test"
    return "bound" if bench.kernel in judging.bounds else "baseline"


def _missing(baseline: Results, current: Results) -> tuple[Failure, ...]:
    """The benchmarks of the subject's own (the baseline's results name them) that the current
    run did not time, each failing the check as `perfbot ab` fails a head that cannot run one
    (loading/declarations.py): the base judges, so renaming a kernel or dropping a case does
    not pass as merely removed. Left out: a suite the current run did not time (its results
    name the suites they timed), an implementation it left out on purpose (skipped_kernels, which
    the report notes), what it was cut down to by name (--case, --mode, --kernel, --variant: a benchmark
    of another variant value, or of the default one where values were chosen, is outside it),
    and a wrong result (a failure of its own)."""
    under_test = set(baseline.settings.under_test)
    timed = {c.key for c in current.benchmarks} | {f.key for f in current.failures}
    suites = set(current.settings.suites)
    skipped = set(current.settings.skipped_kernels)
    chosen = current.settings
    return tuple(
        Failure(
            kernel=b.kernel,
            variant=b.variant,
            shape=b.shape,
            dtype=b.dtype,
            suite=b.suite,
            case=b.case,
            mode=b.mode,
            reason="under test in the baseline's results; the current run did not time it",
        )
        for b in baseline.benchmarks
        if b.kernel in under_test
        and b.key not in timed
        and b.kernel not in skipped
        and (not suites or b.suite in suites)
        and (not chosen.chosen_cases or b.case in chosen.chosen_cases)
        and (not chosen.chosen_modes or b.mode in chosen.chosen_modes)
        and (not chosen.chosen_kernels or b.kernel in chosen.chosen_kernels)
        and all(b.variant.get(name) in values for name, values in chosen.chosen_variants.items())
    )


def judge_unpaired(estimate: stats.RatioEstimate, p: float, q: float, rule: Rule, n: int) -> Judgement:
    """The verdict on two separate runs of one benchmark: its ratio of medians `estimate`, the
    Mann-Whitney `p` and its Benjamini-Hochberg-adjusted `q`; `n` samples on the smaller side."""
    slower = 100 * (estimate.ratio - 1)
    significant = q < rule.alpha
    interval = f"{estimate.confidence:.0%} CI of the ratio [{estimate.low:.4f}, {estimate.high:.4f}]"
    if significant and slower > rule.warn_percent:
        fails = slower > rule.fail_percent
        limit = (
            f"beyond the {rule.fail_percent:g}% fail threshold"
            if fails
            else f"over the {rule.warn_percent:g}% warn threshold, under the {rule.fail_percent:g}% fail threshold"
        )
        return Judgement(
            "regression", fails, f"{slower:+.2f}%, significant (q={q:.2g} < {rule.alpha:g}), {limit}", estimate
        )
    if significant and -slower > rule.warn_percent:
        return Judgement("improvement", False, f"{slower:+.2f}%, significant (q={q:.2g} < {rule.alpha:g})", estimate)
    if not significant and 100 * (estimate.high - 1) > rule.fail_percent:
        reason = (
            f"not significant (q={q:.2g}), but the {interval} reaches past the "
            f"{rule.fail_percent:g}% fail threshold: re-run with --samples {2 * n} to settle it"
        )
        return Judgement("inconclusive", False, reason, estimate)
    within = "not significant" if not significant else f"significant but within ±{rule.warn_percent:g}%"
    return Judgement("unchanged", False, f"{slower:+.2f}%, {within}", estimate)


def _same_gpu(baseline: Results, current: Results, force: bool) -> str:
    base_gpu = baseline.environment.gpu_name
    cur_gpu = current.environment.gpu_name
    if not same_gpu(base_gpu, cur_gpu) and base_gpu != cur_gpu and not force:
        raise BadInput(
            f"the baseline was measured on {shown(base_gpu)} and the current run on {shown(cur_gpu)}; timings of "
            "different GPU models say nothing about a regression. Pass --force to compare anyway"
        )
    return str(cur_gpu or "")


def _interleaved(baseline: Results, current: Results) -> bool:
    """Both sides of one interleaved A/B run (`perfbot ab`) share its id."""
    return current.settings.ab_run is not None and current.settings.ab_run == baseline.settings.ab_run


def _differences(baseline: Results, current: Results) -> tuple[EnvironmentDifference, ...]:
    """What differs in where and how the two were measured: the environment's key fields, and
    the timing method (a changed method can move every time)."""
    sides: list[tuple[object, object, str]] = [
        (baseline.environment, current.environment, k) for k in ("gpu_name", *_ENVIRONMENT_FIELDS)
    ]
    sides.append((baseline.settings, current.settings, "timing"))
    return tuple(
        EnvironmentDifference(k, getattr(before, k), getattr(after, k))
        for before, after, k in sides
        if getattr(before, k) != getattr(after, k)
    )


def _config_change(baseline: Benchmark, current: Benchmark) -> str | None:
    before, after = baseline.config or {}, current.config or {}
    changed = [
        f"{k} {before.get(k)} → {after.get(k)}"
        for k in sorted(set(before) | set(after), key=str)
        if before.get(k) != after.get(k)
    ]
    return ", ".join(changed) or None
