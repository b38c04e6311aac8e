"""The in-job A/B (`perfbot ab`): the kernels of two git revisions of one project, measured
interleaved, sample by sample, on the same GPU, and judged with the interleaved policy. A
failing slowdown must hold in a second interleaved round of its cases before the check fails.

The base's subject decides what is judged (declarations.py): its suites, which implementations
are under test, references, tolerances; the head's subject supplies only its code. The
thresholds.yaml of the checkout perfbot runs in applies (the pull-request check runs in the
base's checkout, so a pull request cannot judge itself). Each side's kernels come from a git
worktree of its revision; with --merge, the head's worktree holds the head merged into the
base's tip, as the tip would be once it is merged (ab_sides.py). No side's code runs in this
process: both sides run in one worker process (measuring/worker.py), or, when the two revisions
pin different Triton commits, each in a worker with its own Triton (ab_tritons.py). Either way
one loop, here, interleaves them (measure.time_rounds) and the verdict is decided here.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import ProjectConfig
from ..deciding.compare import Report, compare
from ..deciding.standing import tally
from ..deciding.thresholds import Policy, changes, load_policy
from ..errors import BadInput, PerfbotError
from ..loading.subject import Suite
from ..loading.suites import restrict_modes
from ..measuring.sequential import PolicyRules, Stopping, first_look
from ..measuring.triton_pin import with_pin
from ..measuring.worker import BOTH
from ..records import store as baseline_store
from ..records.autotune import AutotunePick
from ..records.run import Results
from .ab_sides import Revisions, Trees, checked_out
from .ab_tritons import Tritons, worker_specs

if TYPE_CHECKING:
    from ..measuring.planning import RunSettings
    from ..measuring.shards import Gpu

Progress = Callable[[int], AbstractContextManager[Callable[[str, int], None]]]
# A second interleaved round of the given (suite, case, mode) triples: base and head results.
Remeasure = Callable[[set[tuple[str, str, str]]], tuple[Results, Results]]


@dataclass(frozen=True)
class Sampling:
    """Sequential sampling's limits: at most `most` rounds per pair, `seconds` for the run's
    sampling (the first look comes after RunSettings.samples rounds, or sequential.first_look's
    fewest if more)."""

    most: int
    seconds: float


@dataclass(frozen=True)
class Request:
    """What an A/B measures and how it judges: its revisions; `names`, what the command line chose
    by name (the suites, cases and implementations of the base's subject, and the run's settings:
    worker_sides.chosen_in); the policy that judges; each side's Triton. With `sampling`, each
    pair is timed until decided (sequential.py), else `settings.samples` rounds; with several
    `gpus`, the cases are shared out across them (shards.py); with `trend_store`, the head is also
    set against the newest stored baseline of its GPU, as one line that never fails."""

    revisions: Revisions
    names: tuple[dict[str, Any], dict[str, Any]]
    policy: Policy
    tritons: Tritons = field(default_factory=Tritons)
    sampling: Sampling | None = None
    gpus: Sequence[Gpu] = ()
    trend_store: Path | None = None


@dataclass(frozen=True)
class Outcome:
    base: Results
    head: Results
    report: Report


def run(
    config: ProjectConfig,
    request: Request,
    progress: Progress,
    on_measured: Callable[[Results, Results], None] = lambda base, head: None,
) -> Outcome:
    """Measure the request's base against its head (default: this checkout's kernels) and judge.
    The sides are checked out here (ab_sides.checked_out, with `revisions.merge` the head merged
    into the base) and loaded in a worker process, never here: the head under the base's
    declarations, both sides in one worker where they share a Triton, else one worker each
    (ab_tritons.py). `progress(total)` gives a context whose function is told of finished steps;
    `on_measured` gets both sides' results before they are judged (to keep them whatever happens
    next)."""
    from ..measuring import alignment
    from ..measuring.planning import case_steps, single_cases
    from ..measuring.recording import Measurement
    from ..measuring.runner import measure_sides
    from ..measuring.shards import Job, measure_sharded
    from ..measuring.worker_sides import WorkerSides, both_sides, chosen_in, workers

    policy, gpus = request.policy, request.gpus
    with ExitStack() as stack:
        ready = stack.enter_context(checked_out(config, request.revisions))
        kernels = ready.kernels()
        specs = worker_specs(kernels, ready.pins, request.tritons, request.revisions.base)
        sharded = len(gpus) > 1  # two Tritons: a pair of workers on each GPU (shards.py)
        with ExitStack() as choosing:
            both = choosing.enter_context(both_sides(kernels))
            try:
                chosen = chosen_in(both, *request.names)
            except PerfbotError as error:
                raise ready.said_of_revisions(error) from None
            if not specs and not sharded:  # it measures the first A/B too
                stack.enter_context(choosing.pop_all())
        started = stack.enter_context(workers(specs)) if specs and not sharded else None
        run_id = uuid.uuid4().hex
        stopping = _stopping(request.sampling, policy, chosen.settings)

        def measure(
            suites: Sequence[Suite],
            tag: str,
            drawn: RunSettings,
            cases: int,
            fixed: dict[str, list[AutotunePick]] | None = None,
        ) -> tuple[Results, Results]:
            extra = {"ab_run": run_id + tag, **_recorded_revisions(ready), "triton_commits": ready.pins}
            with progress(cases * case_steps(drawn, stopping)) as advance:
                if sharded:
                    job = Job(dict(kernels), drawn, stopping, fixed)
                    measured = measure_sharded(job, suites, gpus, advance, extra, worker_specs=specs or None)
                else:
                    sides = WorkerSides(started or {BOTH: fresh or both}, drawn, fixed)
                    measured = measure_sides(sides, Measurement(suites, drawn, stopping, extra), advance)
            # Each side's Triton against its own revision's pin.
            base, head = (_pinned(measured[side], ready.pins[side]) for side in ("base", "head"))
            return base, head

        fresh = None
        base, head = measure(chosen.suites, "", chosen.settings, chosen.cases)
        on_measured(base, head)

        def measure_again(cases: set[tuple[str, str, str]]) -> tuple[Results, Results]:
            """The second A/B of failing cases, each in its failing modes alone: its inputs,
            placements and orders drawn afresh (the next seed), and each side's subject imported
            anew, in a worker of its own, so that
            Triton loads its kernels anew: drawn or loaded as the first were, whatever a draw or a
            load did to one side would come back with them (docs/method.md, "Exchangeable sides").
            Each benchmark runs the autotune configs it ran in the first (alignment.fix), not what
            the fresh imports would tune."""
            nonlocal fresh
            again = dataclasses.replace(chosen.settings, seed=chosen.settings.seed + 1)
            if not specs and not sharded:
                both.close()  # its CUDA context, its buffers and its last graphs go before the next start
                fresh = stack.enter_context(both_sides(kernels))
            first_round = alignment.fixed_from({"base": base, "head": head})
            suites = restrict_modes(chosen.suites, cases)
            return measure(suites, "-confirm", again, len(single_cases(suites)), first_round)

        report = judge(base, head, policy, measure_again)
        unrun_keys = {failure.key for failure in chosen.unrun}
        # The head's own reason first; the results' (compare._missing) for anything else lacking.
        missing = (*chosen.unrun, *(m for m in report.missing if m.key not in unrun_keys))
        missing_keys = {failure.key for failure in missing}
        other = "head" if request.revisions.head else "base"
        report = dataclasses.replace(
            report,
            policy_change=policy_change(policy, ready.trees[other][0]),
            declaration_changes=tuple(chosen.declared),
            missing=missing,
            removed=tuple(b for b in report.removed if b.key not in missing_keys),
        )
    if request.trend_store is not None:
        report = dataclasses.replace(report, trend=trend(request.trend_store, head, policy))
    return Outcome(base, head, report)


def _pinned(results: Results, pin: str) -> Results:
    return dataclasses.replace(results, environment=with_pin(results.environment, pin))


def _recorded_revisions(ready: Trees) -> dict[str, Any]:
    """The revisions the results record: the base's commit, the head's (when it has one), and
    what was merged."""
    head = ready.trees["head"][1]
    return {
        "against": ready.trees["base"][1],
        **({"head": head} if head else {}),
        **({"merge": ready.merge} if ready.merge else {}),
    }


def _stopping(sampling: Sampling | None, policy: Policy, settings: RunSettings) -> Stopping | None:
    """How a sequential A/B stops each pair, on this GPU under the policy; None: fixed rounds."""
    if sampling is None:
        return None
    from ..measuring.environment import collect_environment

    gpu = str(collect_environment().gpu_name or "")
    alpha = policy.rule_for("", "", "", gpu, {}, interleaved=True).alpha
    return Stopping(first_look(settings.samples, alpha), sampling.most, sampling.seconds, PolicyRules(policy, gpu))


def judge(base: Results, head: Results, policy: Policy, remeasure: Remeasure) -> Report:
    if base.settings.ab_run is None or base.settings.ab_run != head.settings.ab_run:
        raise BadInput("both sides must come from one interleaved A/B run")
    return confirm(compare(base, head, policy), policy, remeasure)


def confirm(report: Report, policy: Policy, remeasure: Remeasure) -> Report:
    """Re-measure the cases of every failing comparison, each in the modes that fail alone, in a
    second interleaved round (`remeasure(cases)`, given (suite, case, mode) triples, returns base
    and head results); a slowdown fails only if it fails again."""
    failing = [c for c in report.comparisons if c.fails]
    if not failing:
        return report
    base, head = remeasure({(c.current.suite, c.current.case, c.current.mode) for c in failing})
    second = {c.current.key: c for c in compare(base, head, policy).comparisons}
    comparisons = []
    for c in report.comparisons:
        if c.fails:
            again = second.get(c.current.key)
            detail = again.reason if again is not None else "not measured again"
            if c.current.autotune or c.baseline.autotune:
                detail = f"at the first round's autotune configs: {detail}"
            if again is not None and again.fails:
                c = dataclasses.replace(
                    c, confirmed=True, reason=f"{c.reason}; confirmed by a second interleaved round ({detail})"
                )
            else:
                c = dataclasses.replace(
                    c,
                    fails=False,
                    confirmed=False,
                    reason=f"{c.reason}; NOT confirmed by a second interleaved "
                    f"round ({detail}), so it does not fail the check",
                )
        comparisons.append(c)
    return dataclasses.replace(report, comparisons=tuple(comparisons))


def policy_change(policy: Policy, other_tree: Path) -> tuple[str, ...]:
    """What the other side's thresholds.yaml would have judged differently: the lead line, then
    one line per difference. Empty when they agree. (What the subjects declare differently is
    declarations.differences.)"""
    other = other_tree / "thresholds.yaml"
    # perfbot's defaults (policy.note says so) where the checkout that ran it has no thresholds.yaml
    applied = "perfbot's default policy" if policy.note else "the thresholds.yaml of the checkout that ran it"
    if not other.exists():  # named without its path, a temporary worktree's that tells the reader nothing
        return () if policy.note else (f"This check applied {applied}; the other side has none.",)
    try:
        lines = [f"thresholds {line}" for line in changes(policy, load_policy(other))]
    except PerfbotError as error:
        lines = [f"the other side's thresholds.yaml does not load: {error}"]
    if not lines:
        return ()
    return (f"This check applied {applied}; the other side's differs:", *lines)


def trend(store: Path, head: Results, policy: Policy) -> str:
    """One line: the head run against the newest stored baseline of its GPU. Never fails."""
    gpu = head.environment.gpu_name
    try:
        path, stored = baseline_store.latest(store, str(gpu))
        report = compare(stored, head, policy)
    except PerfbotError as error:
        return f"no comparison with a stored baseline: {error}"
    own = tally(report.comparisons).own  # a baseline's or a bound's slowdown is not the subject's
    slower = own.get("failing", 0) + own.get("slower", 0)
    ratio = f"{report.geomean_ratio:.3f}" if report.geomean_ratio else "none (nothing in common)"
    return (
        f"against the stored baseline of {stored.created or path.name}: geometric mean ratio {ratio}, "
        f"{slower} significant slowdown(s) of the subject's own across runs (cross-run thresholds; informational)"
    )
