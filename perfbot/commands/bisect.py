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
from ..records.schema import MAX_SAMPLES
from .context import FiniteRange, console, project_config, project_option


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
@click.option(
    "--suite",
    "suite_name",
    default=None,
    help="Triton mode: suite of the benchmark (default: the subject's default case).",
)
@click.option(
    "--case",
    "case_name",
    default=None,
    help="Triton mode: case of the benchmark (default: the subject's default case).",
)
@click.option("--kernel", default=None, help="Triton mode: implementation to time (default: the subject's own).")
@click.option(
    "--variant",
    "variants",
    multiple=True,
    metavar="NAME=VALUE",
    help="Triton mode: the value of one of the subject's variant parameters (repeat for several).",
)
@click.option(
    "--samples",
    type=click.IntRange(min=10, max=MAX_SAMPLES),
    default=20,
    show_default=True,
    help="Triton mode: samples per measurement round.",
)
@click.option(
    "--cache",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Triton mode: wheel cache. Default: ~/.cache/perfbot/triton-wheels.",
)
@click.option(
    "--no-build-isolation",
    is_flag=True,
    help="Triton mode: build with the build tools already installed (pip's --no-build-isolation).",
)
@click.option(
    "--state",
    "state_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="State file, for resuming. Default: one per repository, ends and commands under ~/.cache/perfbot/bisect.",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the table as markdown here.",
)
@click.option("--overwrite", is_flag=True, help="Replace --report and --outcome if they exist (--state is resumed).")
@click.option(
    "--outcome",
    "outcome_path",
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
    "once it wrote --report or --outcome).",
)
@project_option
def bisect_command(
    repo: Path,
    good: str,
    bad: str,
    build_command: str | None,
    measure_command: str | None,
    suite_name: str | None,
    case_name: str | None,
    kernel: str | None,
    variants: tuple[str, ...],
    samples: int,
    cache: Path | None,
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

    Example:

    \b
        perfbot bisect --repo . --good v1 --bad main --build "make" --measure "./bench --ms"
        perfbot bisect --repo . --good v1 --bad main --measure "./bench --ms" --outcome outcome.json
    """
    from ..jobs import bisect_outcome
    from ..jobs.bisect import Criteria, Probe, bisect
    from ..jobs.bisect_probers import CommandProber, Prober, TritonProber

    for output in (report_path, outcome_path):  # refused before a commit is built
        if output is not None:
            check_output(output, overwrite=overwrite)
    # However the bisect ends from here on, --outcome says so.
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
                config = project_config(project)
                chosen = {"--suite": suite_name, "--case": case_name, "--kernel": kernel}
                sample_args = ["--project", str(config.root), "--samples", str(samples)]
                sample_args += [part for option, value in chosen.items() if value for part in (option, value)]
                sample_args += [part for variant in variants for part in ("--variant", variant)]
                prober = TritonProber(
                    repo, cache or triton_build.default_cache(), sample_args, build_isolation=not no_build_isolation
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
