"""Measuring two revisions against each other: `perfbot ab`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import EXIT_REGRESSION, BadInput, PerfbotError
from ..files import check_output, write_atomic
from ..output.comment import ERROR_FILE
from ..records import results as results_file
from .context import (
    emit,
    given_as,
    load_kernels,
    named_options,
    progress,
    project_config,
    project_policy,
    warn_of_triton_pin,
)
from .options import (
    FiniteRange,
    Measuring,
    max_samples_option,
    measure_options,
    option,
    overwrite_option,
    project_option,
    thresholds_option,
    triton_cache_option,
    triton_source_option,
)

if TYPE_CHECKING:
    from ..deciding.thresholds import Policy
    from ..jobs.ab_sides import Prepared, Revisions
    from ..jobs.ab_tritons import Tritons
    from ..loading.package import Loaded
    from ..loading.subject import Suite
    from ..measuring.planning import RunSettings

_OUTPUTS = ("base.json", "head.json", "comparison.json", "comment.md")


@dataclass(frozen=True)
class AbOptions:
    """`perfbot ab`'s arguments and options, as click parsed and checked them."""

    base_rev: str
    head_rev: str | None
    measuring: Measuring
    out_dir: Path
    overwrite: bool
    thresholds_path: Path | None
    trend_store: Path | None
    triton_envs: tuple[str, ...]
    triton_source: str | None
    triton_cache: Path | None
    merge: bool
    dry_run: bool
    max_samples: int
    time_budget: float
    project: Path | None

    def revisions(self) -> Revisions:
        from ..jobs.ab_sides import Revisions

        return Revisions(self.base_rev, self.head_rev, self.merge)

    def choose(self, base: Loaded) -> tuple[list[Suite], RunSettings]:
        """The suites, cases and implementations asked for, from the base's subject: it decides."""
        return self.measuring.suites(base, every_suite=True), self.measuring.settings(base)

    def tritons(self) -> Tritons:
        from ..jobs.ab_tritons import Tritons

        return Tritons(_parse_triton_envs(self.triton_envs), self.triton_source, self.triton_cache)


@click.command("ab")
@click.argument("base_rev", metavar="BASE")
@click.argument("head_rev", metavar="[HEAD]", required=False)
@measure_options
@option(
    "--out-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("perfbot-ab"),
    show_default=True,
    help="Where base.json, head.json, comparison.json and comment.md go; where the A/B stops on an error, "
    "error.txt too, with the error's line.",
)
@overwrite_option
@thresholds_option
@click.option(
    "--trend-store",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also compare the head with the newest stored run of this GPU here, as one line of trend (never fails).",
)
@click.option(
    "--triton-env",
    "triton_envs",
    multiple=True,
    metavar="SIDE=DIR",
    help="Run SIDE (base or head) in a worker process with the Triton installed in DIR first on "
    "PYTHONPATH; the sides then alternate sample by sample, one process each.",
)
@triton_source_option
@triton_cache_option
@click.option(
    "--merge",
    is_flag=True,
    help="Measure HEAD merged into BASE (the base branch's tip) against BASE: what merging it would do to "
    "the tip. Refused (exit 2) where the merge has conflicts; a HEAD that contains BASE is measured as it is.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Measure nothing (no GPU needed): print the revisions, the base's suites and each side's "
    "implementations with the files their code came from and a digest of each. Exit 2 where the run would be "
    "refused.",
)
@max_samples_option
@click.option(
    "--time-budget",
    type=FiniteRange(min=1, max=7 * 24 * 3600),
    default=180.0,
    show_default=True,
    help="Seconds of sampling for the whole run (checking, compiling and capturing not counted), shared out "
    "case by case; with several GPUs, per GPU. A case still undecided when its share runs out gets a second "
    "turn, with what the others left, after every case had its first.",
)
@project_option
@given_as(AbOptions)
def ab_command(options: AbOptions) -> None:
    """Measure the kernels of git revision BASE against HEAD's (default: this checkout's),
    interleaved sample by sample on one GPU, and judge the pairs. By default every case of every
    suite, each pair timed until it is decided (at least --samples rounds, at most --max-samples,
    within --time-budget), the cases shared out across the host's GPUs. Each block of four rounds
    is captured afresh, with the sides' places drawn, and every four blocks each side's Triton
    kernels are loaded anew.

    BASE's subject decides what is judged: its suites, the implementations each case times,
    which are under test, the references and tolerances; HEAD supplies only the code. An
    implementation BASE judges that HEAD lacks, or no longer marks under test, fails the check.
    The thresholds.yaml of this checkout applies (the PR check runs in the base's checkout).
    Both sides are judged paired by round with the interleaved thresholds; a failing slowdown
    is measured again in a second A/B (fresh inputs, placements and orders, both sides' kernels
    loaded anew) and fails (exit 1) only if it holds. If BASE and HEAD pin different Triton
    commits, each side runs in a worker process with its own Triton (--triton-source or
    --triton-env): one pair of them per GPU.

    With --merge, the head side is HEAD merged into BASE, built in a temporary worktree (no hook
    runs, this checkout is untouched), and the other side is BASE itself: a branch that took a
    speedup from BASE's branch cannot pass a slowdown of its own off against the older commit it
    forked from. The results and the comment record BASE, HEAD and the merge commit. A merge with
    conflicts is refused (exit 2), naming the files.

    Example:

    \b
        perfbot ab origin/main --skip-kernel max-autotune --out-dir ab
        perfbot ab origin/main --suite pr --out-dir ab
        perfbot ab origin/main my-branch --merge --out-dir ab
        perfbot ab origin/main my-branch --merge --dry-run
        perfbot ab "$BASE_SHA" "$HEAD_SHA" --triton-source https://github.com/triton-lang/triton.git
    """
    from ..jobs import ab, ab_sides

    config = project_config(options.project)
    if options.max_samples < options.measuring.samples:
        raise click.BadParameter(
            f"must be at least --samples ({options.measuring.samples})", param_hint="--max-samples"
        )
    tritons = options.tritons()
    policy = project_policy(config, options.thresholds_path)  # before the dry run: it refuses as the run does
    revisions = options.revisions()
    if options.dry_run:  # in this process: nothing is measured, and nothing decided but what is shown
        running = load_kernels(config, None)
        with ab_sides.prepared(config, running, revisions, options.choose) as ready:
            click.echo(_planned_text(ready, tritons, revisions, policy))
        return
    sampling = ab.Sampling(options.max_samples, options.time_budget)
    request = ab.Request(
        revisions,
        options.measuring.names(every_suite=True),
        policy,
        tritons,
        sampling,
        options.measuring.gpus(),
        options.trend_store,
    )
    out_dir, overwrite = options.out_dir, options.overwrite
    _clear(out_dir, overwrite)

    def keep(base: results_file.Results, head: results_file.Results) -> None:
        for name, loaded in (("base.json", base), ("head.json", head)):
            results_file.save(loaded, out_dir / name, overwrite=overwrite)
            if loaded.environment.triton_pin is not None:
                warn_of_triton_pin(loaded.environment.triton_pin, loaded.environment, side=name.removesuffix(".json"))

    with _error_kept(out_dir / ERROR_FILE):
        with named_options():  # a name the base's subject refuses, said of its option
            outcome = ab.run(config, request, _bar, on_measured=keep)
        emit(outcome.report, out_dir / "comment.md", out_dir / "comparison.json", overwrite=overwrite)
    if outcome.report.fails:
        raise click.exceptions.Exit(EXIT_REGRESSION)


def _clear(out_dir: Path, overwrite: bool) -> None:
    """--out-dir made ready before anything is measured: refused where its files would be
    replaced without --overwrite; an earlier run's error file removed."""
    if out_dir.exists() and not out_dir.is_dir():
        raise BadInput(f"--out-dir {out_dir}: is a file")
    for name in (*_OUTPUTS, ERROR_FILE):
        check_output(out_dir / name, overwrite=overwrite)
    if out_dir.is_dir():
        (out_dir / ERROR_FILE).unlink(missing_ok=True)  # an earlier run's (--overwrite)


@contextmanager
def _error_kept(path: Path) -> Iterator[None]:
    """A perfbot error raised inside, also written to `path` (as far as it can be written)."""
    try:
        yield
    except PerfbotError as error:
        with suppress(PerfbotError):
            write_atomic(path, f"{error}\n")
        raise


def _planned_text(ready: Prepared, tritons: Tritons, revisions: Revisions, policy: Policy) -> str:
    """What `perfbot ab --dry-run` prints: what the run would measure, and from which files."""
    from ..jobs.ab_tritons import tritons_text
    from ..loading import declarations
    from ..measuring.planning import plan

    base_sha, head_sha = ready.trees["base"][1], ready.trees["head"][1]
    head = (
        f"{revisions.head} = {head_sha}"
        if revisions.head
        else f"this checkout, uncommitted changes included ({ready.trees['head'][0]})"
    )
    lines = ["perfbot ab --dry-run: nothing is timed; the run would measure", f"  base: {revisions.base} = {base_sha}"]
    lines.append(f"  head: {head}")
    if ready.merge is not None:
        merge = f"merge commit {ready.merge.commit}" if ready.merge.commit else "a fast-forward: the head as it is"
        lines.append(f"  the head merged into the base ({merge}), against the base")
    lines.append(f"  Triton: {tritons_text(ready.pins, tritons, revisions.base)}")
    lines.append(f"  judged with: {policy.source}")
    # Each side planned as the run plans it: what a side lacks is left out, not refused.
    groups = {
        side: plan(loaded, ready.suites, ready.settings, side, lenient=True) for side, loaded in ready.subjects.items()
    }
    counts = ", ".join(f"{side} {sum(map(len, planned))}" for side, planned in groups.items())
    lines.append(f"  the base's suites: {', '.join(s.name for s in ready.suites)}; benchmarks per side: {counts}")
    for side, loaded in ready.subjects.items():
        timed = {p.kernel for group in groups[side] for p in group}
        lines.append(f"{side}'s implementations, and the files their code came from (sha256):")
        recorded = loaded.sources.recorded()
        for name in [n for n in loaded.implementations if n in timed]:
            implementation = loaded.implementations[name]
            role = "under test" if implementation.under_test else "bound" if implementation.bound else "baseline"
            files = recorded.get(name, {})
            lines.append(f"  {name} ({role}):" + ("" if files else " no file found"))
            lines += [f"    {path} {digest}" for path, digest in sorted(files.items())]
            if implementation.under_test and all(_in_subject(path, loaded) for path in files):
                lines.append(
                    f"    note: {name} reaches no file beyond the subject package; code it imports only when it "
                    "runs is not loaded from this checkout nor checked (docs/subject.md)"
                )
    planned = [p for group in groups["base"] for p in group]
    for failure in declarations.missing_failures(ready.missing, planned):
        where = f"{failure.name} on {failure.suite}/{failure.case}"
        lines.append(f"missing on the head, would fail the check: {where}: {failure.reason}")
    lines += [f"declarations differ: {line}" for line in ready.declared]
    return "\n".join(lines)


def _in_subject(path: str, loaded: Loaded) -> bool:
    """Whether a recorded file (relative to its checkout, or absolute) is in the subject's package."""
    place = Path(path) if Path(path).is_absolute() else loaded.sources.root / path
    return place.resolve().is_relative_to(loaded.path.resolve())


@contextmanager
def _bar(total: int) -> Iterator[Callable[[str, int], None]]:
    with progress() as bar:
        task = bar.add_task("starting", total=total)
        yield lambda label, steps: bar.update(task, advance=steps, description=label)


def _parse_triton_envs(values: tuple[str, ...]) -> dict[str, Path]:
    envs = {}
    for value in values:
        side, _, directory = value.partition("=")
        if side not in ("base", "head") or not directory:
            raise click.BadParameter(f"expected base=DIR or head=DIR, got {value!r}", param_hint="--triton-env")
        if not Path(directory).is_dir():
            raise click.BadParameter(f"{directory}: no such directory", param_hint="--triton-env")
        envs[side] = Path(directory).resolve()
    return envs
