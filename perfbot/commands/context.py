"""What the commands share: the project a command runs in, the options that choose what to
measure, the terminal it writes to, and where a comparison's report goes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .. import comparison as comparison_file
from ..compare import Report
from ..config import ProjectConfig, find_project_root, load_project_config
from ..errors import EnvironmentFailure
from ..files import write_all
from ..report import comment_markdown, compare_table

if TYPE_CHECKING:
    from ..runner import RunSettings
    from ..subject import Subject, Suite

project_option = click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="perfbot checkout whose pyproject.toml, kernels/ and suites to use. "
    "Default: the nearest above the current directory.",
)


def measure_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options that choose what `run` and `ab` measure, and how many samples."""
    for option in reversed(
        [
            click.option(
                "--suite",
                "suite_names",
                multiple=True,
                default=["pr"],
                show_default=True,
                help="Shape suite to run (repeat for several). `perfbot suites` lists them.",
            ),
            click.option(
                "--case",
                "case_names",
                multiple=True,
                help="Only the cases of these names in the chosen suites (repeat for several). Default: every case.",
            ),
            click.option(
                "--kernel",
                "kernel_names",
                multiple=True,
                help="Only these implementations (repeat for several). Default: each suite's list.",
            ),
            click.option(
                "--approximate",
                "approximations",
                multiple=True,
                type=click.Choice(["none", "tanh"]),
                default=["none"],
                show_default=True,
                help="GELU variant: none (erf) or tanh; repeat to measure both.",
            ),
            click.option(
                "--samples",
                type=click.IntRange(min=10),
                default=30,
                show_default=True,
                help="Timed samples per benchmark, each one CUDA-graph replay after an L2 flush.",
            ),
            click.option(
                "--warmup",
                type=click.IntRange(min=1),
                default=3,
                show_default=True,
                help="Untimed calls per implementation before capture (compiles and autotunes).",
            ),
            click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs."),
        ]
    ):
        command = option(command)
    return command


def chosen(subject: Subject, suite_names: tuple[str, ...], case_names: tuple[str, ...]) -> list[Suite]:
    """The suites named, cut down to the cases named."""
    from ..subject import restrict

    unknown = [name for name in suite_names if name not in subject.suites]
    if unknown:
        raise click.BadParameter(
            f"unknown suite {unknown[0]!r}; known: {', '.join(subject.suites)}", param_hint="--suite"
        )
    suites = [subject.suites[name] for name in dict.fromkeys(suite_names)]
    if not case_names:
        return suites
    known = {case.name for suite in suites for case in suite.cases}
    missing = [name for name in case_names if name not in known]
    if missing:
        raise click.BadParameter(
            f"no case {missing[0]!r} in the chosen suites; they have {', '.join(sorted(known))}", param_hint="--case"
        )
    return restrict(
        suites, {(suite.name, case.name) for suite in suites for case in suite.cases if case.name in case_names}
    )


def run_settings(
    samples: int, warmup: int, seed: int, approximations: tuple[str, ...], kernel_names: tuple[str, ...]
) -> RunSettings:
    from ..runner import RunSettings

    return RunSettings(
        samples=samples,
        warmup_calls=warmup,
        seed=seed,
        approximations=tuple(dict.fromkeys(approximations)),
        kernels=kernel_names,
    )


def project_config(project: Path | None) -> ProjectConfig:
    return load_project_config(project if project is not None else find_project_root(Path.cwd()))


def load_kernels(config: ProjectConfig, kernels: Path | None) -> Subject:
    from ..subject import load_subject

    return load_subject(kernels if kernels is not None else config.kernels_dir)


def console() -> Console:
    # Tables are wide; when stdout is a file or a CI log, don't wrap them at 80 columns.
    terminal = Console()
    return terminal if terminal.is_terminal else Console(width=200)


def progress() -> Progress:
    return Progress(
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )


def emit(report: Report, markdown_path: Path | None, json_path: Path | None) -> None:
    """The PR comment and the comparison file (written together, or neither), the job summary
    when on Actions, then the terminal table."""
    summary = comparison_file.summarize(report)
    comment = comment_markdown(summary)
    outputs = {markdown_path: comment, json_path: comparison_file.to_text(summary)}
    write_all({path: text for path, text in outputs.items() if path is not None})
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        try:
            with open(step_summary, "a", encoding="utf-8") as handle:
                handle.write(comment + "\n")
        except OSError as error:
            raise EnvironmentFailure(
                f"GITHUB_STEP_SUMMARY={step_summary}: cannot append the report: {error.strerror or error}"
            ) from None
    console().print(compare_table(summary))
