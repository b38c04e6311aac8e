"""`perfbot check`: are the implementations right? Nothing timed; runs without a GPU."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape
from rich.table import Table

from ..errors import EXIT_REGRESSION, EnvironmentFailure
from ..loading.guard import CALL_LIMIT_S, CONFIG_TIME_S
from ..loading.subject import Case
from .context import console, named_options, progress, project_config, warn_of_triton_pin
from .options import FiniteRange, choice_options, package_option, project_option

if TYPE_CHECKING:
    from ..measuring.checked import Checked

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
    mode_names: tuple[str, ...],
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
    from ..measuring import subject_process
    from ..measuring.checking import choose_device

    chosen_device = choose_device(device)  # before Triton is first imported (the pin's warning imports it)
    config = project_config(project)
    warn_of_triton_pin(config.triton_commit)
    request = {
        "package": str(package if package is not None else config.kernels_dir),
        "families": family_names,
        "suites": suite_names,
        "cases": case_names,
        "modes": mode_names,
        "kernels": kernel_names,
        "skipped": skipped_kernels,
        "variants": variants,
        "seed": seed,
        "device": chosen_device,
        "time_limit": time_limit,
        "config_time": config_time,
    }
    # The subject's code runs in a process of its own; what it answers is decided on here.
    # The progress bar shows from when the subject has loaded and said how many cases it checks.
    with ExitStack() as shown, named_options():
        bar = progress()
        task = bar.add_task("checking", total=None)

        def told(what: object) -> None:
            if isinstance(what, dict):
                shown.enter_context(bar)
                bar.update(task, total=what.get("total"))
            else:
                bar.update(task, advance=1, description=str(what))

        answer = subject_process.ask("check", request, told)
    checked_name, chosen_device, checked = _checked(answer)
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


def _checked(answer: dict[str, Any]) -> tuple[str, str, list[Checked]]:
    """The subject process's answer, read as input: a malformed one is refused (exit 3). A row is
    right only where it names no problem and its error is within its bound, decided here."""
    from ..measuring.checked import Checked

    try:
        rows = []
        for row in answer["checked"]:
            case = Case(
                str(row["case"]["suite"]),
                str(row["case"]["name"]),
                dict(row["case"]["params"]),
                str(row["case"]["dtype"]),
                str(row["case"].get("mode", "forward")),
            )
            error = None if row["relative_error"] is None else float(row["relative_error"])
            bound = float(row["bound"])
            problem = row["problem"]
            if problem is None and (error is None or not error <= bound):
                problem = f"relative error {error} is not within its bound {bound:.3g}"
            rows.append(
                Checked(
                    case,
                    str(row["name"]),
                    error,
                    bound,
                    None if problem is None else str(problem),
                    _text(row["config"]),
                    _text(row["note"]),
                )
            )
        return str(answer["subject"]), str(answer["device"]), rows
    except (KeyError, TypeError, ValueError) as error:
        raise EnvironmentFailure(f"the subject's process answered a check that does not read: {error!r}") from None


def _text(value: object) -> str | None:
    return None if value is None else str(value)
