"""`perfbot check`: are the implementations right? Nothing timed; runs without a GPU."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from ..errors import EXIT_REGRESSION
from ..loading.guard import CALL_LIMIT_S, CONFIG_TIME_S
from .context import console, load_kernels, named_options, progress, project_config, run_settings, warn_of_triton_pin
from .options import FiniteRange, choice_options, package_option, project_option

MOST_LIMIT_S = 86_400.0  # a day


@click.command("check")
@choice_options
@click.option(
    "--device",
    type=click.Choice(["cuda", "cpu"]),
    default=None,
    help="Where to run. Default: the GPU if there is one, else the CPU, with Triton kernels in Triton's "
    "interpreter (slow: keep small cases for it, a suite named quick).",
)
@click.option(
    "--time-limit",
    type=FiniteRange(0, MOST_LIMIT_S, min_open=True),
    default=CALL_LIMIT_S,
    show_default=True,
    help="Seconds that importing the subject, and each call into it (its inputs, a reference, an "
    "implementation), may take at most; one that takes longer is refused (exit 2).",
)
@click.option(
    "--config-time",
    type=FiniteRange(0, MOST_LIMIT_S, min_open=True),
    default=CONFIG_TIME_S,
    show_default=True,
    help="Seconds the configs of one autotuned implementation may take on one case, together: each "
    "config of each triton.autotune'd kernel is checked; past this, a sample of them, drawn with --seed "
    "(the output says how many).",
)
@package_option
@project_option
def check_command(
    family_names: tuple[str, ...],
    suite_names: tuple[str, ...],
    case_names: tuple[str, ...],
    kernel_names: tuple[str, ...],
    skipped_kernels: tuple[str, ...],
    variants: tuple[str, ...],
    seed: int,
    device: str | None,
    time_limit: float,
    config_time: float,
    package: Path | None,
    project: Path | None,
) -> None:
    """Run every implementation once on every case and compare its output with the subject's
    trusted result; nothing is timed. Exits 1 if any is wrong or raises; exits 2 if the subject's
    own code fails (its inputs or reference raise, a reference holds NaN or inf), quits
    (sys.exit) or takes longer than --time-limit.

    The default suite is quick, where the subject has one (else as for run; of kernel families,
    each family's), with every value of every variant parameter.

    Example:

    \b
        perfbot check                        # the quick suite, on the CPU where there is no GPU
        perfbot check --suite pr --variant NAME=VALUE --device cuda
        perfbot check --family rmsnorm       # one kernel family, of a package's subjects
        perfbot check --time-limit 1800      # a subject whose calls take long in the interpreter
    """
    from ..loading.selection import chosen, chosen_families
    from ..measuring.checking import check, choose_device

    chosen_device = choose_device(device)  # before the subject's Triton kernels are defined
    config = project_config(project)
    subject = load_kernels(config, package, time_limit)
    warn_of_triton_pin(config.triton_commit)
    with named_options():
        suites = chosen(subject, suite_names, case_names, family_names=family_names, preferred=("quick", "pr"))
    # Every value of every variant parameter unless told otherwise: checking is cheap, and a
    # variant's code path is as likely to be wrong as the default's.
    variants = variants or tuple(f"{name}=all" for name in subject.subject.variants)
    settings = run_settings(subject, 30, 1, seed, variants, kernel_names, skipped_kernels)
    total = sum(len(suite.cases) for suite in suites)
    with progress() as bar:
        task = bar.add_task("checking", total=total)
        checked = check(
            subject,
            suites,
            settings,
            chosen_device,
            lambda label: bar.update(task, advance=1, description=label),
            limit=time_limit,
            config_time=config_time,
        )
    # Of kernel families, the ones checked: the combined subject's name lists them all.
    checked_name = "+".join(chosen_families(subject, family_names)) if subject.families else subject.subject.name
    table = Table(title=f"perfbot check: {escape(checked_name)} on {chosen_device}", title_justify="left")
    tuned = any(c.config for c in checked)  # a config column where an autotuned kernel ran
    columns = ("suite", "case", "dtype", "implementation", *(("config",) if tuned else ()), "rel. error", "bound")
    for column in (*columns, "result"):
        table.add_column(column, justify="right" if column in ("rel. error", "bound") else "left")
    for c in checked:
        error = "" if c.relative_error is None else f"{c.relative_error:.3g}"
        result = "right" if c.right else f"[red]{escape(c.problem or '')}[/red]"
        ran: tuple[str, ...] = (c.config or "-",) if tuned else ()
        cells = (c.case.suite, c.case.name, c.case.dtype, c.name, *ran, error, f"{c.bound:.3g}")
        table.add_row(*(escape(x) for x in cells), result)
    terminal = console()
    terminal.print(table)
    for c in checked:
        if c.note:
            terminal.print(escape(f"{c.name} on {c.case.suite}/{c.case.name}: {c.note}"))
    wrong = [c for c in checked if not c.right]
    terminal.print(f"{len(checked) - len(wrong)} right, {len(wrong)} wrong, of {len(checked)}")
    if wrong:
        raise click.exceptions.Exit(EXIT_REGRESSION)
