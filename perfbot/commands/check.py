"""`perfbot check`: are the implementations right? Nothing timed; runs without a GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from ..errors import EXIT_REGRESSION
from .context import (
    choice_options,
    chosen,
    console,
    kernels_option,
    load_kernels,
    progress,
    project_config,
    project_option,
    run_settings,
)


@click.command("check")
@choice_options
@click.option(
    "--device",
    type=click.Choice(["cuda", "cpu"]),
    default=None,
    help="Where to run. Default: the GPU if there is one, else the CPU, with Triton kernels in Triton's "
    "interpreter (slow: keep small cases for it, a suite named quick).",
)
@kernels_option
@project_option
def check_command(
    suite_names: tuple[str, ...],
    case_names: tuple[str, ...],
    kernel_names: tuple[str, ...],
    skipped_kernels: tuple[str, ...],
    variants: tuple[str, ...],
    seed: int,
    device: str | None,
    kernels: Path | None,
    project: Path | None,
) -> None:
    """Run every implementation once on every case and compare its output with the subject's
    trusted result; nothing is timed. Exits 1 if any is wrong or raises.

    The default suite is quick, where the subject has one (else as for run), with every value of
    every variant parameter.

    Example:

    \b
        perfbot check                        # the quick suite, on the CPU where there is no GPU
        perfbot check --suite pr --variant NAME=VALUE --device cuda
    """
    from ..checking import check, choose_device

    chosen_device = choose_device(device)  # before the subject's Triton kernels are defined
    subject = load_kernels(project_config(project), kernels)
    if not suite_names and "quick" in subject.suites:
        suite_names = ("quick",)
    suites = chosen(subject, suite_names, case_names)
    # Every value of every variant parameter unless told otherwise: checking is cheap, and a
    # variant's code path is as likely to be wrong as the default's.
    variants = variants or tuple(f"{name}=all" for name in subject.subject.variants)
    settings = run_settings(subject, 30, 1, seed, variants, kernel_names, skipped_kernels)
    total = sum(len(suite.cases) for suite in suites)
    with progress() as bar:
        task = bar.add_task("checking", total=total)
        checked = check(
            subject, suites, settings, chosen_device, lambda label: bar.update(task, advance=1, description=label)
        )
    table = Table(title=f"perfbot check: {subject.subject.name} on {chosen_device}", title_justify="left")
    for column in ("suite", "case", "dtype", "implementation", "rel. error", "bound", "result"):
        table.add_column(column, justify="right" if column in ("rel. error", "bound") else "left")
    for c in checked:
        error = "" if c.relative_error is None else f"{c.relative_error:.3g}"
        result = "right" if c.right else f"[red]{escape(c.problem or '')}[/red]"
        table.add_row(
            *(escape(x) for x in (c.case.suite, c.case.name, c.case.dtype, c.name, error, f"{c.bound:.3g}")), result
        )
    terminal = console()
    terminal.print(table)
    wrong = [c for c in checked if not c.right]
    terminal.print(f"{len(checked) - len(wrong)} right, {len(wrong)} wrong, of {len(checked)}")
    if wrong:
        sys.exit(EXIT_REGRESSION)
