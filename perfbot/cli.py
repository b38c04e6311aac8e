"""The `perfbot` command: a click group of thin commands, one module per family under
perfbot/commands. Only here do errors become exit codes.

Commands that measure import torch (through runner, subject, environment) when they run, not at
start-up: the core commands (compare, show, comment, baseline, export) work on a machine with
only the core install, and a measuring command run there says which extra it needs.
"""

from __future__ import annotations

import os
from typing import Any, NoReturn

import click

from .commands.ab import ab_command
from .commands.autobisect import bisect_steps_command, open_issues_command
from .commands.bisect import bisect_command
from .commands.check import check_command
from .commands.compare import baseline_group, compare_command, export_command
from .commands.explain import explain_command
from .commands.github import comment_command, verify_head_command
from .commands.history import history_command
from .commands.init import init_command
from .commands.run import env_command, run_command, sample_command, show_command, suites_command
from .commands.selftest import selftest_command
from .commands.triton import triton_group
from .errors import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EnvironmentFailure, PerfbotError
from .records.schema import clean

MEASURING_MODULES = ("torch", "triton")


# Exit code of a command interrupted by Ctrl-C: 128 + SIGINT, the shell's convention.
EXIT_INTERRUPTED = 130
# An error line at most this long: a message that lists a file's names is cut, not printed whole.
MAX_LINE = 1000
# A longer line loses its middle, keeping this much of its end, which usually says why.
_KEPT_END = 200
# An environment failure may carry a tool's output below its line (the end of a build log).
MAX_TOOL_LINES = 40


class _PerfbotGroup(click.Group):
    """Turns a PerfbotError from any command into its one-line message and exit code; click's own
    usage errors into one line too; Ctrl-C into exit 130 (never 1, which means a slowdown); a stray
    sys.exit, which only the subject's code makes, into a refusal (exit 2)."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:  # the group's own options: `perfbot --bogus`
            return super().make_context(*args, **kwargs)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.ClickException as error:
            _usage_error(error)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except EnvironmentFailure as error:
            first, *output = str(error).split("\n")  # a tool's output below the line: a build log's end
            _error_line(first)
            for line in output[-MAX_TOOL_LINES:]:
                click.echo(_bounded(line), err=True)
            ctx.exit(error.exit_code)
        except PerfbotError as error:  # a refusal, or a wrong result: one line, whatever the message holds
            _error_line(str(error))
            ctx.exit(error.exit_code)
        except ModuleNotFoundError as error:
            if error.name not in MEASURING_MODULES:
                _internal_error(ctx, error)
            _error_line(
                f"this command measures, and {error.name} is not installed; "
                "install the measuring extra: pip install 'perfbot[gpu]'"
            )
            ctx.exit(EXIT_ENVIRONMENT)
        except click.exceptions.NoArgsIsHelpError:
            raise  # `perfbot baseline` alone: its help, as click prints it
        except click.ClickException as error:
            _usage_error(error)
        except (KeyboardInterrupt, click.exceptions.Abort):
            click.echo("perfbot: interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except click.exceptions.Exit:
            raise  # the commands' own exit codes: a slowdown's 1 leaves through here, never sys.exit
        except SystemExit as error:  # the subject's code, run by perfbot outside a guarded call
            _error_line(f"{_stray_exit(error)}; refused (exit 2), whatever code it asked for")
            ctx.exit(EXIT_BAD_INPUT)
        except Exception as error:  # noqa: BLE001 -- never a traceback, and never exit 1 (a slowdown)
            _internal_error(ctx, error)


def _stray_exit(error: SystemExit) -> str:
    """What quit: every command leaves through click, so a SystemExit comes from the subject's code
    in something perfbot ran for it (a method of an object it returned) outside guard.call."""
    code = error.code
    shown = "" if code is None else clean(repr(code), 100) if type(code) in (int, str) else "..."  # no method of its
    return f"code perfbot ran for the subject called sys.exit({shown}) outside a guarded call"


def _error_line(text: str) -> None:
    """`perfbot: error: TEXT` on stderr, as one line of at most MAX_LINE characters: a longer one
    loses its middle, since its end usually says why (a long file name, then "no such file")."""
    click.echo(_bounded(f"perfbot: error: {' '.join(text.split())}"), err=True)


def _bounded(line: str) -> str:
    """At most MAX_LINE characters: a longer line loses its middle."""
    return line if len(line) <= MAX_LINE else f"{line[: MAX_LINE - _KEPT_END - 5]} ... {line[-_KEPT_END:]}"


def _usage_error(error: click.ClickException) -> NoReturn:
    """A bad argument, in one line with where to read more; exit 2 (click gives some of its
    errors, a file it cannot open, 1, which means a slowdown here)."""
    context = getattr(error, "ctx", None)
    message = error.format_message()
    if isinstance(error, click.UsageError) and context is not None:
        message = f"{message.rstrip('.')}; see {context.command_path} --help"
    _error_line(message)
    raise click.exceptions.Exit(EXIT_BAD_INPUT)


def _internal_error(ctx: click.Context, error: BaseException) -> NoReturn:
    """A failure perfbot did not foresee: one line, exit 3 (never 1, which means a slowdown).
    PERFBOT_DEBUG=1 shows the traceback."""
    if os.environ.get("PERFBOT_DEBUG"):
        raise error
    text = " ".join(str(error).split())[:300]
    _error_line(
        f"internal error ({type(error).__name__}: {text}); please report it, with the command; "
        "PERFBOT_DEBUG=1 shows where"
    )
    ctx.exit(EXIT_ENVIRONMENT)


@click.group(cls=_PerfbotGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="perfbot")
def perfbot() -> None:
    """Performance-regression bot for Triton kernels: checks, times and compares them, posts the
    verdict on pull requests, keeps baselines and bisects slowdowns.

    Exit codes: 0 fine; 1 a significant slowdown or a wrong result; 2 bad input;
    3 the environment failed (no CUDA GPU, a tool missing, GitHub unreachable).
    """


for _command in (
    init_command,
    check_command,
    run_command,
    ab_command,
    explain_command,
    sample_command,
    show_command,
    env_command,
    suites_command,
    compare_command,
    baseline_group,
    export_command,
    history_command,
    comment_command,
    verify_head_command,
    selftest_command,
    bisect_command,
    triton_group,
):
    perfbot.add_command(_command)
# What follows a new step on main: the baseline workflow's bisect and issue jobs run these.
history_command.add_command(bisect_steps_command)
history_command.add_command(open_issues_command)
