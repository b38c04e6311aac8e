"""Measuring two revisions against each other: `perfbot ab`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click
from typing_extensions import TypedDict

from ..errors import EXIT_REGRESSION, BadInput, PerfbotError
from ..files import check_output, write_atomic
from ..output.comment import ERROR_FILE
from ..records import results as results_file
from ..records.schema import validate_message
from .context import (
    emit,
    given_as,
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
    from ..jobs.ab_sides import Revisions, Trees
    from ..jobs.ab_tritons import Tritons

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
    if options.dry_run:  # nothing is measured, and nothing decided but what is shown
        with ab_sides.checked_out(config, revisions) as trees:
            click.echo(_planned_text(trees, _planned(trees, options.measuring), tritons, revisions, policy))
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


def _planned(trees: Trees, measuring: Measuring) -> dict[str, Any]:
    """What the A/B would measure, planned in a process of the subjects' own (subject_jobs.ab_plan_job):
    both sides' code runs there, never here."""
    from ..measuring import subject_process

    kernels = trees.kernels()
    selection, settings = measuring.names(every_suite=True)
    request = {"base": str(kernels["base"]), "head": str(kernels["head"]), "selection": selection, "settings": settings}
    try:
        with named_options():
            answer = subject_process.ask("ab_plan", request)
    except PerfbotError as error:
        raise trees.said_of_revisions(error) from error
    return validate_message("the dry run's process of the subjects' own", answer, _plan_answer(), "plan")


class _Implementation(TypedDict):
    name: str
    role: Literal["under test", "bound", "baseline"]
    files: dict[str, str]
    within_subject: bool


class _Plan(TypedDict):
    suites: list[str]
    benchmarks: dict[str, int]
    sides: dict[Literal["base", "head"], list[_Implementation]]
    missing: list[dict[str, str]]
    declared: list[str]


@functools.cache
def _plan_answer() -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(_Plan)


def _planned_text(trees: Trees, planned: dict[str, Any], tritons: Tritons, revisions: Revisions, policy: Policy) -> str:
    """What `perfbot ab --dry-run` prints: what the run would measure, and from which files."""
    from ..jobs.ab_tritons import tritons_text

    base_sha, head_sha = trees.trees["base"][1], trees.trees["head"][1]
    head = (
        f"{revisions.head} = {head_sha}"
        if revisions.head
        else f"this checkout, uncommitted changes included ({trees.trees['head'][0]})"
    )
    lines = ["perfbot ab --dry-run: nothing is timed; the run would measure", f"  base: {revisions.base} = {base_sha}"]
    lines.append(f"  head: {head}")
    if trees.merge is not None:
        merge = f"merge commit {trees.merge.commit}" if trees.merge.commit else "a fast-forward: the head as it is"
        lines.append(f"  the head merged into the base ({merge}), against the base")
    lines.append(f"  Triton: {tritons_text(trees.pins, tritons, revisions.base)}")
    lines.append(f"  judged with: {policy.source}")
    counts = ", ".join(f"{side} {count}" for side, count in planned["benchmarks"].items())
    lines.append(f"  the base's suites: {', '.join(planned['suites'])}; benchmarks per side: {counts}")
    for side, implementations in planned["sides"].items():
        lines.append(f"{side}'s implementations, and the files their code came from (sha256):")
        for implementation in implementations:
            name, files = implementation["name"], implementation["files"]
            lines.append(f"  {name} ({implementation['role']}):" + ("" if files else " no file found"))
            lines += [f"    {path} {digest}" for path, digest in sorted(files.items())]
            if implementation["role"] == "under test" and implementation["within_subject"]:
                lines.append(
                    f"    note: {name} reaches no file beyond the subject package; code it imports only when it "
                    "runs is not loaded from this checkout nor checked (docs/subject.md)"
                )
    for failure in planned["missing"]:
        where = f"{failure['name']} on {failure['suite']}/{failure['case']}"
        lines.append(f"missing on the head, would fail the check: {where}: {failure['reason']}")
    lines += [f"declarations differ: {line}" for line in planned["declared"]]
    return "\n".join(lines)


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
