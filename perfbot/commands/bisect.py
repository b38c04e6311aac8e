"""Bisecting: `perfbot bisect`."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import click

from ..errors import BadInput, EnvironmentFailure
from ..files import check_output, write_atomic
from ..measuring import triton_build
from ..output.bisect_tables import bisect_markdown, bisect_table
from .context import console, project_config
from .options import (
    FiniteRange,
    no_build_isolation_option,
    one_benchmark_options,
    one_samples_option,
    one_variant_option,
    option,
    overwrite_option,
    project_option,
    triton_cache_option,
)


@click.command("bisect")
@click.option(
    "--repo",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Git repository to bisect (a Triton checkout unless --measure is given).",
)
@click.option("--good", required=True, help="A revision where the benchmark was fast.")
@click.option("--bad", required=True, help="A later revision where it is slower.")
@click.option("--build", "build_command", default=None, help="Shell command that builds a commit, run in its worktree.")
@click.option(
    "--measure",
    "measure_command",
    default=None,
    help="Shell command run in the worktree that prints samples in ms, one per line.",
)
@one_benchmark_options
@one_variant_option
@one_samples_option
@triton_cache_option.was("--cache")
@no_build_isolation_option
@click.option(
    "--state",
    "state_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="State file, for resuming: --overwrite leaves it, and the bisect resumes from it. Default: one per "
    "repository, ends and commands under ~/.cache/perfbot/bisect.",
)
@option(
    "--out-markdown",
    "report_path",
    old=["--report"],
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the table as markdown here.",
)
@overwrite_option
@option(
    "--out-json",
    "outcome_path",
    old=["--outcome"],
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write what the bisect concluded here, as JSON for a program (format 1, perfbot/jobs/bisect_outcome.py): "
    "culprit, no-culprit (unbuildable commits hide it), not-reproduced (bad is not slower than good) or failed, "
    "with every probe. Written however the bisect ends; the exit code is the same.",
)
@click.option(
    "--alpha",
    type=FiniteRange(0, 1, min_open=True, max_open=True),
    default=0.01,
    show_default=True,
    help="Significance level of the one-sided Mann-Whitney U tests.",
)
@click.option(
    "--min-slowdown",
    type=FiniteRange(min=0, max=1000),
    default=1.0,
    show_default=True,
    help="Percent by which bad must be slower than good to bisect at all.",
)
@click.option(
    "--max-rounds",
    type=click.IntRange(min=1, max=100),
    default=3,
    show_default=True,
    help="Measurement rounds for a commit before an ambiguous one is classified by the nearer median.",
)
@click.option(
    "--max-probes",
    type=click.IntRange(min=0, max=100_000),
    default=None,
    help="Stop after measuring this many new commits (resume by running the same command again, with --overwrite "
    "once it wrote --out-markdown or --out-json).",
)
@project_option
def bisect_command(
    repo: Path,
    good: str,
    bad: str,
    build_command: str | None,
    measure_command: str | None,
    family: str | None,
    suite_name: str | None,
    case_name: str | None,
    mode: str | None,
    kernel: str | None,
    variants: tuple[str, ...],
    samples: int,
    triton_cache: Path | None,
    no_build_isolation: bool,
    state_path: Path | None,
    report_path: Path | None,
    outcome_path: Path | None,
    overwrite: bool,
    alpha: float,
    min_slowdown: float,
    max_rounds: int,
    max_probes: int | None,
    project: Path | None,
) -> None:
    """Find the commit that made a benchmark slower, with statistics at every step.

    Each probed commit is checked out in a worktree of its own (your working copy is never
    touched). A commit whose build or measure fails is skipped, never blamed. Prints
    `first bad commit: <sha>` and exits 0 when found; exits 2 when bad is not significantly
    slower than good.

    Without --measure, --repo is a Triton checkout (the Triton mode): each commit is built
    (--triton-cache, --no-build-isolation) and the benchmark that --family, --suite, --case,
    --mode, --kernel and --variant name is timed there by `perfbot sample`, --samples at a time.

    Example:

    \b
        perfbot bisect --repo . --good v1 --bad main --build "make" --measure "./bench --ms"
        perfbot bisect --repo . --good v1 --bad main --measure "./bench --ms" --out-json outcome.json
        perfbot bisect --repo ~/src/triton --good GOOD --bad BAD --suite pr --case CASE --out-markdown bisect.md
    """
    from ..jobs import bisect_outcome
    from ..jobs.bisect import Criteria, Probe, bisect
    from ..jobs.bisect_probers import CommandProber, Prober, TritonProber

    for output in (report_path, outcome_path):  # refused before a commit is built
        if output is not None:
            check_output(output, overwrite=overwrite)
    # However the bisect ends from here on, --out-json says so.
    with bisect_outcome.kept(outcome_path, good, bad) as keep:
        if not (repo / ".git").exists() and not repo.is_dir():
            raise BadInput(f"--repo {repo}: no such directory")
        if build_command is not None and measure_command is None:
            raise click.UsageError("--build needs --measure (the command that prints the samples)")
        workdir = Path(tempfile.mkdtemp(prefix="perfbot-bisect-"))
        try:
            if measure_command is not None:
                prober: Prober = CommandProber(repo, build_command or "true", measure_command, workdir)
            else:
                named = {
                    "--family": family,
                    "--suite": suite_name,
                    "--case": case_name,
                    "--mode": mode,
                    "--kernel": kernel,
                }
                prober = TritonProber(
                    repo,
                    triton_cache or triton_build.default_cache(),
                    sample_arguments(project_config(project).root, samples, named, variants),
                    build_isolation=not no_build_isolation,
                )

            def shown(probe: Probe) -> None:
                what = (
                    f"skipped ({probe.unusable})"
                    if probe.unusable
                    else f"{len(probe.samples)} samples, median {probe.median_ms:.4f} ms"
                )
                click.echo(f"probed {probe.sha[:12]} {probe.subject[:50]}: {what}", err=True)

            criteria = Criteria(alpha, min_slowdown, max_rounds)
            outcome = bisect(
                repo, good, bad, prober, criteria, state_path=state_path, max_probes=max_probes, on_probe=shown
            )
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        concluded = keep(outcome)
        console().print(bisect_table(outcome))
        click.echo(f"state: {outcome.state_path}", err=True)
        if report_path is not None:
            write_atomic(report_path, bisect_markdown(outcome, str(repo)), replace=overwrite)
        for note in outcome.non_monotonic:
            click.echo(f"not monotonic: {note}")
        if outcome.first_bad is None:
            raise EnvironmentFailure(concluded.message)
        click.echo(f"first bad commit: {outcome.first_bad}")


def sample_arguments(root: Path, samples: int, named: dict[str, str | None], variants: tuple[str, ...]) -> list[str]:
    """What the Triton mode gives `perfbot sample` at each commit: the project, the samples, and
    the benchmark as it was named here (`named`: each one-benchmark option given, and its value)."""
    arguments = ["--project", str(root), "--samples", str(samples)]
    arguments += [part for option, value in named.items() if value for part in (option, value)]
    return arguments + [part for variant in variants for part in ("--variant", variant)]
