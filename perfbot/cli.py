"""The `perfbot` command: a click group of thin commands (one module per family under
perfbot/commands). Only here do errors become exit codes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .config import ProjectConfig, find_project_root, load_project_config
from .errors import EXIT_ENVIRONMENT, EnvironmentFailure, PerfbotError
from .files import write_all, write_atomic
from . import comparison as comparison_file
from .comparison import summarize
from .report import comment_markdown, compare_table

if TYPE_CHECKING:
    from .subject import Subject

# Commands that measure import torch (through runner, subject, environment) when they run, not
# at start-up: the core commands (compare, show, comment, baseline, export) work on a machine
# with only the core install. A measuring command run there says which extra it needs.
MEASURING_MODULES = ("torch", "triton")

project_option = click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="perfbot checkout whose pyproject.toml, kernels/ and suites to use. Default: the nearest above the current directory.",
)


def project_config(project: Path | None) -> ProjectConfig:
    return load_project_config(project if project is not None else find_project_root(Path.cwd()))


def load_kernels(config: ProjectConfig, kernels: Path | None) -> Subject:
    from .subject import load_subject

    return load_subject(kernels if kernels is not None else config.kernels_dir)


class _PerfbotGroup(click.Group):
    """Turns a PerfbotError from any command into its one-line message and exit code."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except PerfbotError as error:
            click.echo(f"perfbot: error: {error}", err=True)
            ctx.exit(error.exit_code)
        except ModuleNotFoundError as error:
            if error.name not in MEASURING_MODULES:
                _internal_error(ctx, error)
            click.echo(f"perfbot: error: this command measures, and {error.name} is not installed; "
                       "install the measuring extra: pip install 'perfbot[gpu]'", err=True)
            ctx.exit(EXIT_ENVIRONMENT)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as error:  # noqa: BLE001 -- never a traceback, and never exit 1 (a slowdown)
            _internal_error(ctx, error)


def _internal_error(ctx: click.Context, error: BaseException) -> None:
    """A failure perfbot did not foresee: one line, exit 3 (never 1, which means a slowdown).
    PERFBOT_DEBUG=1 shows the traceback."""
    if os.environ.get("PERFBOT_DEBUG"):
        raise error
    text = " ".join(str(error).split())[:300]
    click.echo(f"perfbot: error: internal error ({type(error).__name__}: {text}); please report it, with the "
               "command; PERFBOT_DEBUG=1 shows where", err=True)
    ctx.exit(EXIT_ENVIRONMENT)


def console() -> Console:
    # Tables are wide; when stdout is a file or a CI log, don't wrap them at 80 columns.
    terminal = Console()
    return terminal if terminal.is_terminal else Console(width=200)


@click.group(cls=_PerfbotGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="perfbot")
def perfbot() -> None:
    """Performance-regression bot for the fused GeGLU Triton kernel.

    Exit codes: 0 fine; 1 a significant slowdown or a wrong result; 2 bad input;
    3 the environment failed (no CUDA GPU, a tool missing, GitHub unreachable).
    """


def progress() -> Progress:
    return Progress(TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=True)


def write_text(path: Path, text: str) -> None:
    """Write a derived report (reports are regenerated, so replacing one is fine)."""
    write_atomic(path, text)


def emit(report: object, markdown_path: Path | None, json_path: Path | None) -> None:
    """The PR comment and JSON files (written together, or neither), the job summary when on
    Actions, then the terminal table."""
    summary = summarize(report)
    comment = comment_markdown(summary)
    outputs = {markdown_path: comment, json_path: comparison_file.to_text(summary)}
    write_all({path: text for path, text in outputs.items() if path is not None})
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        try:
            with open(step_summary, "a", encoding="utf-8") as handle:
                handle.write(comment + "\n")
        except OSError as error:
            raise EnvironmentFailure(f"GITHUB_STEP_SUMMARY={step_summary}: cannot append the report: "
                                     f"{error.strerror or error}") from None
    console().print(compare_table(summary))


from .commands import bisect, compare, github, run, selftest, triton  # noqa: E402,F401 -- registers the commands
