"""The in-job A/B (`perfbot ab`): the kernels of two git revisions of one project, measured
interleaved, sample by sample, on the same GPU, and judged with the interleaved policy. A
failing slowdown must hold in a second interleaved round of its cases before the check fails.

The base's subject decides what is judged (declarations.py): its suites, which implementations
are under test, references, tolerances; the head's subject supplies only its code. The
thresholds.yaml of the checkout perfbot runs in applies (the pull-request check runs in the
base's checkout, so a pull request cannot judge itself). Each side's kernels come from a git
worktree of its revision; with --merge, the head's worktree holds the head merged into the
base's tip (`merged`), as the tip would be once it is merged. When the two revisions pin
different Triton commits, each side runs in a worker process with its own Triton (worker.py);
otherwise both sides run in this process (runner.LocalSides). Either way one loop interleaves
them (measure.time_rounds).
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

from .. import git
from ..config import ProjectConfig, load_project_config
from ..deciding.compare import Report, compare
from ..deciding.thresholds import Policy, changes, load_policy
from ..errors import BadInput, PerfbotError
from ..loading import declarations, provenance
from ..loading.subject import Loaded, Suite, load_subject, restrict
from ..measuring.sequential import PolicyRules, Stopping, first_look
from ..records import store as baseline_store
from ..records.results import Merge, Results

if TYPE_CHECKING:
    from ..measuring.planning import RunSettings
    from ..measuring.shards import Gpu

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


@dataclass(frozen=True)
class Prepared:
    """An A/B made ready to measure, nothing timed yet: each side's tree and commit, what the
    head was merged into, both sides' subjects (the head's judged by the base's declarations),
    what the base judges that the head cannot run, and what the base's subject chose."""

    trees: dict[str, tuple[Path, str | None]]
    merge: Merge | None
    subjects: dict[str, Loaded]
    head_own: Loaded  # the head's subject with its own declarations (to list what differs)
    missing: dict[str, str]
    suites: Sequence[Suite]
    settings: RunSettings
    declared: list[str]
    pins: dict[str, str]
    relative: Path  # the kernels package, inside each tree

    def kernels(self) -> dict[str, Path]:
        return {side: tree / self.relative for side, (tree, _) in self.trees.items()}


@contextmanager
def prepared(
    config: ProjectConfig,
    kernels_dir: Path,
    running: Loaded,
    choose: Callable[[Loaded], tuple[Sequence[Suite], RunSettings]],
    base_rev: str,
    head_rev: str | None,
    merge: bool = False,
) -> Iterator[Prepared]:
    """Both sides checked out (the head merged into the base with `merge`) and loaded, each from
    its own checkout (provenance.check), the head under the base's declarations; `choose(base)`
    picks the base's suites and the run's settings. Needs no GPU; the trees live while it does."""
    try:
        relative = kernels_dir.resolve().relative_to(config.root.resolve())
    except ValueError:
        raise BadInput(f"the A/B needs the kernels inside the project ({config.root}), got {kernels_dir}") from None
    if merge and not head_rev:
        raise BadInput(
            "--merge needs HEAD, the head's commit: this checkout's uncommitted changes cannot be merged; "
            "commit them and name the commit"
        )
    with ExitStack() as stack:
        trees: dict[str, tuple[Path, str | None]] = {"base": stack.enter_context(checkout(config.root, base_rev))}
        trees["head"] = (config.root, None)
        merged_as: Merge | None = None
        if merge and head_rev:
            head_tree, merged_as = stack.enter_context(merged(config.root, str(trees["base"][1]), head_rev))
            trees["head"] = (head_tree, merged_as.head)
        elif head_rev:
            trees["head"] = stack.enter_context(checkout(config.root, head_rev))
        base_subject = load_subject(trees["base"][0] / relative)
        head_own = load_subject(trees["head"][0] / relative) if head_rev else running
        head_subject, missing = declarations.judged_by_base(base_subject, head_own)
        subjects = {"base": base_subject, "head": head_subject}
        provenance.check({side: loaded.sources for side, loaded in subjects.items()})
        suites, settings = choose(base_subject)
        yield Prepared(
            trees=trees,
            merge=merged_as,
            subjects=subjects,
            head_own=head_own,
            missing=missing,
            suites=suites,
            settings=settings,
            declared=declarations.differences(base_subject, head_own, suites),
            pins={side: load_project_config(tree).triton_commit for side, (tree, _) in trees.items()},
            relative=relative,
        )


def run(
    config: ProjectConfig,
    kernels_dir: Path,
    running: Loaded,
    choose: Callable[[Loaded], tuple[Sequence[Suite], RunSettings]],
    base_rev: str,
    head_rev: str | None,
    policy: Policy,
    tritons: Tritons,
    progress: Progress,
    on_measured: Callable[[Results, Results], None] = lambda base, head: None,
    trend_store: Path | None = None,
    sampling: Sampling | None = None,
    gpus: Sequence[Gpu] = (),
    merge: bool = False,
) -> Outcome:
    """Measure `base_rev` against `head_rev` (default: this checkout's kernels, `running`) and
    judge, as `prepared` makes them ready: under the base's declarations, with `merge` the head
    merged into the base. `progress(total)` gives a context whose function is told of finished
    steps; `on_measured` gets both sides' results before they are judged (to keep them whatever
    happens next). With `sampling`, each pair is timed until decided (sequential.py), else
    `settings.samples` rounds; with several `gpus`, the cases are shared out across them
    (shards.py)."""
    from ..measuring.environment import collect_environment
    from ..measuring.planning import plan, progress_steps
    from ..measuring.runner import LocalSides, measure_sides
    from ..measuring.shards import Job, measure_sharded
    from ..measuring.worker import WorkerSides, workers

    with ExitStack() as stack:
        ready = stack.enter_context(prepared(config, kernels_dir, running, choose, base_rev, head_rev, merge))
        subjects, suites, settings, pins = ready.subjects, ready.suites, ready.settings, ready.pins
        specs = worker_specs(ready.kernels(), pins, tritons, base_rev)
        sharded = len(gpus) > 1  # two Tritons: a pair of workers on each GPU (shards.py)
        started = stack.enter_context(workers(specs)) if specs and not sharded else None
        run_id = uuid.uuid4().hex
        revisions = {
            "against": ready.trees["base"][1],
            **({"head": ready.trees["head"][1]} if head_rev else {}),
            **({"merge": ready.merge} if ready.merge else {}),
        }
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
            with progress(progress_steps(plan(subjects["base"], chosen, drawn), drawn, stopping)) as advance:
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
            paths = {side: loaded.path for side, loaded in subjects.items()}
            fresh, _ = declarations.load_sides(paths, instance=f"{run_id}-confirm")
            provenance.check({side: loaded.sources for side, loaded in fresh.items()})
            return measure(restrict(suites, cases), "-confirm", again, fresh)

        report = judge(base, head, policy, measure_again)
        other = "head" if head_rev else "base"
        planned = [p for group in plan(subjects["base"], suites, settings, "base") for p in group]
        unrun = declarations.missing_failures(ready.missing, planned)
        unrun_keys = {failure.key for failure in unrun}
        report = dataclasses.replace(
            report,
            policy_change=policy_change(policy, ready.trees[other][0]),
            declaration_changes=tuple(ready.declared),
            missing=tuple(unrun),
            removed=tuple(b for b in report.removed if b.key not in unrun_keys),
        )
    if trend_store is not None:
        report = dataclasses.replace(report, trend=trend(trend_store, head, policy))
    return Outcome(base, head, report)


@contextmanager
def checkout(root: Path, rev: str) -> Iterator[tuple[Path, str]]:
    """The project `root` as of `rev`, in a detached worktree removed afterwards: (its path there,
    the full SHA). The project may be a folder of a larger repository (an example in a monorepo)."""
    sha = _commit(root, rev)
    with _worktree(root, sha) as tree:
        yield tree / _inside(root), sha


# The most conflicting paths a refused merge names.
CONFLICTS_NAMED = 3


@contextmanager
def merged(root: Path, base_sha: str, head_rev: str) -> Iterator[tuple[Path, Merge]]:
    """The project `root` as of `head_rev` merged into the base's tip `base_sha`, in a detached
    worktree removed afterwards (the checkout perfbot runs in is never touched): (its path there,
    what was merged). A head that contains the tip already is itself the merge (a fast-forward).
    Measured against the tip, a head shows what merging it would do to the tip, whatever it
    took from the base's branch since it forked (docs/github.md)."""
    head_sha = _commit(root, head_rev)
    if git.is_ancestor(root, head_sha, base_sha):
        raise BadInput(
            f"the head {head_sha[:12]} is already in the history of the base's tip {base_sha[:12]}: "
            "merged, it would add nothing to measure"
        )
    if git.is_ancestor(root, base_sha, head_sha):
        with checkout(root, head_sha) as (tree, _):
            yield tree, Merge(base=base_sha, head=head_sha)
        return
    if not git.share_history(root, base_sha, head_sha):
        raise BadInput(
            f"the head {head_sha[:12]} shares no history with the base's tip {base_sha[:12]}: nothing to merge into"
        )
    with _worktree(root, base_sha) as tree:
        try:
            commit = git.merge(tree, head_sha)
        except git.MergeConflict as conflict:
            named = ", ".join(conflict.paths[:CONFLICTS_NAMED])
            more = len(conflict.paths) - CONFLICTS_NAMED
            raise BadInput(
                f"the head {head_sha[:12]} does not merge into the base's tip {base_sha[:12]}: conflicts in "
                f"{named}{f' and {more} more' if more > 0 else ''}; rebase the head on the base, or merge the "
                "base into it, and measure again"
            ) from None
        yield tree / _inside(root), Merge(base=base_sha, head=head_sha, commit=commit)


def _commit(root: Path, rev: str) -> str:
    sha = git.commit_of(root, rev)
    if sha is None:
        raise BadInput(f"{rev!r} is not a commit in {root}")
    return sha


def _inside(root: Path) -> Path:
    """Where the project lies in its git repository (a folder of a larger one: an example in a
    monorepo)."""
    top = git.run(root, "rev-parse", "--show-toplevel")
    return root.resolve().relative_to(Path(top.stdout.strip()).resolve()) if top.returncode == 0 else Path()


@contextmanager
def _worktree(root: Path, sha: str) -> Iterator[Path]:
    with (
        tempfile.TemporaryDirectory(prefix="perfbot-ab-") as scratch,
        git.worktree(root, sha, Path(scratch) / "side") as tree,
    ):
        yield tree


def worker_specs(
    kernels: dict[str, Path], pins: dict[str, str], tritons: Tritons, rev: str
) -> dict[str, tuple[Path, Path | None, str | None]]:
    """Empty when both sides share the Triton installed here (measured in this process); else,
    per side, what its worker process runs: (kernels, Triton environment or None, commit)."""
    if tritons.envs:
        return {side: (kernels[side], tritons.envs.get(side), None) for side in ("base", "head")}
    if pins["base"] == pins["head"]:
        return {}
    source = _source_of_two(pins, tritons, rev)
    from ..measuring import triton_build

    return {
        side: (kernels[side], triton_build.environment(pins[side], source, tritons.cache), pins[side])
        for side in ("base", "head")
    }


def tritons_text(pins: dict[str, str], tritons: Tritons, rev: str) -> str:
    """Which Triton each side would get, in one line, as `worker_specs` decides, without building
    any (refused as it would be)."""
    if tritons.envs:
        given = ", ".join(f"{side} {tritons.envs.get(side) or 'the one installed here'}" for side in ("base", "head"))
        return f"each side in a worker process of its own, with the Triton in: {given}"
    if pins["base"] == pins["head"]:
        return f"both sides pin {pins['base'][:12]}; the Triton installed here runs both, in this process"
    source = _source_of_two(pins, tritons, rev)
    return (
        f"the base pins {pins['base'][:12]} and the head {pins['head'][:12]}: both built from {source} "
        "(cached by commit), each side in a worker process with its own"
    )


def _source_of_two(pins: dict[str, str], tritons: Tritons, rev: str) -> str:
    """Where two pinned Tritons are built from; refused without one."""
    if tritons.source is None:
        raise BadInput(
            f"{rev} pins Triton {pins['base'][:12]} and the head {pins['head'][:12]}: each side needs "
            "its own; pass --triton-source REPO to build both, or --triton-env base=DIR --triton-env head=DIR"
        )
    return tritons.source


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
    slower = [c for c in report.comparisons if c.verdict == "regression"]
    ratio = f"{report.geomean_ratio:.3f}" if report.geomean_ratio else "none (nothing in common)"
    return (
        f"against the stored baseline of {stored.created or path.name}: geometric mean ratio {ratio}, "
        f"{len(slower)} significant slowdown(s) across runs (cross-run thresholds; informational)"
    )
