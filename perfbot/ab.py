"""The in-job A/B (`perfbot ab`): the kernels of two git revisions of one project, measured
interleaved, sample by sample, on the same GPU, and judged with the interleaved policy. A
failing slowdown must hold in a second interleaved round of its cases before the check fails.

The checkout perfbot runs in decides: its suites and its thresholds.yaml apply, and each side's
kernels come from a git worktree of its revision (the pull-request check runs in the base's
checkout, so a pull request cannot judge itself). When the two revisions pin different Triton
commits, each side runs in a worker process with its own Triton (worker.py); otherwise both sides
run in this process (runner.LocalSides). Either way one loop interleaves them (measure.time_rounds).
"""

from __future__ import annotations

import dataclasses
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import git, provenance
from . import store as baseline_store
from .compare import Report, compare
from .config import ProjectConfig, load_project_config
from .errors import BadInput, PerfbotError
from .results import Results
from .sequential import PolicyRules, Stopping, first_look
from .subject import Loaded, Suite, load_subject, restrict
from .thresholds import Policy, changes, load_policy

if TYPE_CHECKING:
    from .runner import RunSettings
    from .shards import Gpu

Progress = Callable[[int], AbstractContextManager[Callable[[str, int], None]]]


@dataclass(frozen=True)
class Tritons:
    """Which Triton each side gets: given environments (side -> directory), or builds of the
    pinned commits from a source repository, or (neither) the one installed here."""

    envs: dict[str, Path]
    source: str | None = None
    cache: Path | None = None


@dataclass(frozen=True)
class Sampling:
    """Sequential sampling's limits: at most `most` rounds per pair, `seconds` for the run's
    sampling (the first look comes after RunSettings.samples rounds, or sequential.first_look's
    fewest if more)."""

    most: int
    seconds: float


@dataclass(frozen=True)
class Outcome:
    base: Results
    head: Results
    report: Report


def run(
    config: ProjectConfig,
    kernels_dir: Path,
    running: Loaded,
    suites: Sequence[Suite],
    settings: RunSettings,
    base_rev: str,
    head_rev: str | None,
    policy: Policy,
    tritons: Tritons,
    progress: Progress,
    on_measured: Callable[[Results, Results], None] = lambda base, head: None,
    trend_store: Path | None = None,
    sampling: Sampling | None = None,
    gpus: Sequence[Gpu] = (),
) -> Outcome:
    """Measure `base_rev` against `head_rev` (default: this checkout's kernels) and judge.
    `progress(total)` gives a context whose function is told of finished steps; `on_measured`
    gets both sides' results before they are judged (to keep them whatever happens next).
    With `sampling`, each pair is timed until decided (sequential.py), else `settings.samples`
    rounds; with several `gpus`, the cases are shared out across them (shards.py)."""
    from .environment import collect_environment
    from .runner import LocalSides, measure_sides, plan, progress_steps
    from .shards import Job, measure_sharded
    from .worker import WorkerSides, workers

    try:
        relative = kernels_dir.resolve().relative_to(config.root.resolve())
    except ValueError:
        raise BadInput(f"the A/B needs the kernels inside the project ({config.root}), got {kernels_dir}") from None
    with ExitStack() as stack:
        trees: dict[str, tuple[Path, str | None]] = {"base": stack.enter_context(checkout(config.root, base_rev))}
        trees["head"] = stack.enter_context(checkout(config.root, head_rev)) if head_rev else (config.root, None)
        subjects = {
            "base": load_subject(trees["base"][0] / relative),
            "head": load_subject(trees["head"][0] / relative) if head_rev else running,
        }
        provenance.check({side: loaded.sources for side, loaded in subjects.items()})
        pins = {side: load_project_config(tree).triton_commit for side, (tree, _) in trees.items()}
        specs = worker_specs({side: tree / relative for side, (tree, _) in trees.items()}, pins, tritons, base_rev)
        sharded = len(gpus) > 1  # two Tritons: a pair of workers on each GPU (shards.py)
        started = stack.enter_context(workers(specs)) if specs and not sharded else None
        run_id = uuid.uuid4().hex
        revisions = {"against": trees["base"][1], **({"head": trees["head"][1]} if head_rev else {})}
        stopping = None
        if sampling is not None:
            gpu = str(collect_environment().gpu_name or "")
            alpha = policy.rule_for("", "", "", gpu, {}, interleaved=True).alpha
            first = first_look(settings.samples, alpha)
            stopping = Stopping(first, sampling.most, sampling.seconds, PolicyRules(policy, gpu))

        def measure(
            chosen: Sequence[Suite], tag: str, drawn: RunSettings, loaded: dict[str, Loaded]
        ) -> tuple[Results, Results]:
            extra = {"ab_run": run_id + tag, **revisions, "triton_commits": pins}
            with progress(progress_steps(plan(running, chosen, drawn), drawn, stopping)) as advance:
                if sharded:
                    job = Job({side: subject.path for side, subject in loaded.items()}, drawn, stopping)
                    measured = measure_sharded(job, chosen, gpus, advance, extra, worker_specs=specs or None)
                else:
                    sides = WorkerSides(started, drawn) if started else LocalSides(loaded, drawn)
                    measured = measure_sides(sides, chosen, drawn, advance, extra, stopping)
            return measured["base"], measured["head"]

        base, head = measure(suites, "", settings, subjects)
        on_measured(base, head)

        def measure_again(cases: set[tuple[str, str]]) -> tuple[Results, Results]:
            """The second A/B of failing cases: its inputs, placements and orders drawn afresh (the
            next seed), and each side's subject imported anew, so that Triton loads its kernels
            anew: drawn or loaded as the first were, whatever a draw or a load did to one side
            would come back with them (a load of identical code moved one side of a 36 us kernel
            by up to 0.9%, docs/method.md)."""
            again = dataclasses.replace(settings, seed=settings.seed + 1)
            fresh = {side: load_subject(loaded.path, instance=f"{run_id}-confirm") for side, loaded in subjects.items()}
            provenance.check({side: loaded.sources for side, loaded in fresh.items()})
            return measure(restrict(suites, cases), "-confirm", again, fresh)

        report = judge(base, head, policy, measure_again)
        other = "head" if head_rev else "base"
        report = dataclasses.replace(
            report, policy_change=policy_change(policy, trees[other][0], suites, subjects[other])
        )
    if trend_store is not None:
        report = dataclasses.replace(report, trend=trend(trend_store, head, policy))
    return Outcome(base, head, report)


def sources(
    config: ProjectConfig, kernels_dir: Path, running: Loaded, base_rev: str, head_rev: str | None
) -> dict[str, dict[str, dict[str, str]]]:
    """What an A/B of these revisions would record of each side's code, checked as `run` checks
    it, without measuring: side -> implementation -> {path: sha256} (provenance.py)."""
    try:
        relative = kernels_dir.resolve().relative_to(config.root.resolve())
    except ValueError:
        raise BadInput(f"the A/B needs the kernels inside the project ({config.root}), got {kernels_dir}") from None
    with ExitStack() as stack:
        loaded = {"base": load_subject(stack.enter_context(checkout(config.root, base_rev))[0] / relative)}
        loaded["head"] = (
            load_subject(stack.enter_context(checkout(config.root, head_rev))[0] / relative) if head_rev else running
        )
        provenance.check({side: subject.sources for side, subject in loaded.items()})
        return {side: subject.sources.recorded() for side, subject in loaded.items()}


@contextmanager
def checkout(root: Path, rev: str) -> Iterator[tuple[Path, str]]:
    """The project `root` as of `rev`, in a detached worktree removed afterwards: (its path there,
    the full SHA). The project may be a folder of a larger repository (an example in a monorepo)."""
    sha = git.commit_of(root, rev)
    if sha is None:
        raise BadInput(f"{rev!r} is not a commit in {root}")
    top = git.run(root, "rev-parse", "--show-toplevel")
    inside = root.resolve().relative_to(Path(top.stdout.strip()).resolve()) if top.returncode == 0 else Path()
    with (
        tempfile.TemporaryDirectory(prefix="perfbot-ab-") as scratch,
        git.worktree(root, sha, Path(scratch) / "side") as tree,
    ):
        yield tree / inside, sha


def worker_specs(
    kernels: dict[str, Path], pins: dict[str, str], tritons: Tritons, rev: str
) -> dict[str, tuple[Path, Path | None, str | None]]:
    """Empty when both sides share the Triton installed here (measured in this process); else,
    per side, what its worker process runs: (kernels, Triton environment or None, commit)."""
    if tritons.envs:
        return {side: (kernels[side], tritons.envs.get(side), None) for side in ("base", "head")}
    if pins["base"] == pins["head"]:
        return {}
    if tritons.source is None:
        raise BadInput(
            f"{rev} pins Triton {pins['base'][:12]} and the head {pins['head'][:12]}: each side needs "
            "its own; pass --triton-source REPO to build both, or --triton-env base=DIR --triton-env head=DIR"
        )
    from . import triton_build

    return {
        side: (kernels[side], triton_build.environment(pins[side], tritons.source, tritons.cache), pins[side])
        for side in ("base", "head")
    }


def judge(
    base: Results, head: Results, policy: Policy, remeasure: Callable[[set[tuple[str, str]]], tuple[Results, Results]]
) -> Report:
    if base.settings.ab_run is None or base.settings.ab_run != head.settings.ab_run:
        raise BadInput("both sides must come from one interleaved A/B run")
    return confirm(compare(base, head, policy), policy, remeasure)


def confirm(
    report: Report, policy: Policy, remeasure: Callable[[set[tuple[str, str]]], tuple[Results, Results]]
) -> Report:
    """Re-measure the cases of every failing comparison in a second interleaved round
    (`remeasure(cases)` returns base and head results); a slowdown fails only if it fails again."""
    failing = [c for c in report.comparisons if c.fails]
    if not failing:
        return report
    base, head = remeasure({(c.current.suite, c.current.case) for c in failing})
    second = {c.current.key: c for c in compare(base, head, policy).comparisons}
    comparisons = []
    for c in report.comparisons:
        if c.fails:
            again = second.get(c.current.key)
            detail = again.reason if again is not None else "not measured again"
            if again is not None and again.fails:
                c = dataclasses.replace(c, reason=f"{c.reason}; confirmed by a second interleaved round ({detail})")
            else:
                c = dataclasses.replace(
                    c,
                    fails=False,
                    reason=f"{c.reason}; NOT confirmed by a second interleaved "
                    f"round ({detail}), so it does not fail the check",
                )
        comparisons.append(c)
    return dataclasses.replace(report, comparisons=tuple(comparisons))


def policy_change(policy: Policy, other_tree: Path, suites: Sequence[Suite], other: Loaded) -> tuple[str, ...]:
    """What the other side's thresholds.yaml and suites would have judged differently: the
    lead line, then one line per difference. Empty when they agree."""
    lines = []
    try:
        lines += [f"thresholds {line}" for line in changes(policy, load_policy(other_tree / "thresholds.yaml"))]
    except PerfbotError as error:
        lines.append(f"the other side's thresholds.yaml does not load: {error}")
    for suite in suites:
        mine = {(c.name, tuple(c.shape.items()), c.dtype) for c in suite.cases}
        theirs_suite = other.suites.get(suite.name)
        theirs = {(c.name, tuple(c.shape.items()), c.dtype) for c in theirs_suite.cases} if theirs_suite else set()
        lines += [
            f"suite {suite.name}: case {name} only in the checkout that judged" for name, *_ in sorted(mine - theirs)
        ]
        lines += [
            f"suite {suite.name}: case {name} only on the other side (not measured)"
            for name, *_ in sorted(theirs - mine)
        ]
    if not lines:
        return ()
    lead = (
        "This check measured the suites and applied the thresholds.yaml of the checkout that ran it; "
        "the other side's differ:"
    )
    return (lead, *lines)


def trend(store: Path, head: Results, policy: Policy) -> str:
    """One line: the head run against the newest stored baseline of its GPU. Never fails."""
    gpu = head.environment.gpu_name
    try:
        path, stored = baseline_store.latest(store, str(gpu))
        report = compare(stored, head, policy)
    except PerfbotError as error:
        return f"no comparison with a stored baseline: {error}"
    slower = [c for c in report.comparisons if c.verdict == "regression"]
    ratio = f"{report.geomean_ratio:.3f}" if report.geomean_ratio else "none (nothing in common)"
    return (
        f"against the stored baseline of {stored.created or path.name}: geometric mean ratio {ratio}, "
        f"{len(slower)} significant slowdown(s) across runs (cross-run thresholds; informational)"
    )
