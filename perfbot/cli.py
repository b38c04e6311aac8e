"""The `perfbot` command: a click group of thin commands, one module per family under
perfbot/commands. Only here do errors become exit codes.

A command's module is imported only when that command runs (or shows its help): `perfbot
--version`, `perfbot --help` and every command start without the imports of all the others
(scipy alone takes about a second).

Commands that measure import torch (through runner, subject, environment) when they run, not at
start-up: the core commands (compare, show, comment, baseline, export) work on a machine with
only the core install, and a measuring command run there says which extra it needs.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
from typing import Any, NoReturn

import click

from .characters import escaped
from .errors import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EnvironmentFailure, PerfbotError

MEASURING_MODULES = ("torch", "triton")

# A command that loaded PyTorch spent most of a second at exit in the collections that walk its
# objects (experiments/2026-12-07-suite-cpu, "the exit's collections"). Frozen once the atexit
# hooks registered after this have run, they are skipped: the process ends either way, and what
# it writes it has closed by then.
atexit.register(gc.freeze)

# Every command: the module under perfbot/commands that defines it, its function there, and its
# one-line help (the first sentence of its docstring, as click shortens it), so that `perfbot
# --help` lists them all without importing any. tests/test_cli.py checks each against its command.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "ab": (
        "ab",
        "ab_command",
        "Measure the kernels of git revision BASE against HEAD's (default: this checkout's), interleaved sample "
        "by sample on one GPU, and judge the pairs.",
    ),
    "baseline": (
        "compare",
        "baseline_group",
        "Manage the baseline store: one folder per GPU model, every stored run kept as history.",
    ),
    "bisect": (
        "bisect",
        "bisect_command",
        "Find the commit that made a benchmark slower, with statistics at every step.",
    ),
    "check": (
        "check",
        "check_command",
        "Run every implementation once on every case and compare its output with the subject's trusted result; "
        "nothing is timed.",
    ),
    "comment": (
        "github",
        "comment_command",
        "Post the report as the PR's one perfbot comment (edited in place on every push).",
    ),
    "compare": (
        "compare",
        "compare_command",
        "Compare two results files and decide, per benchmark, whether it got slower.",
    ),
    "env": (
        "run",
        "env_command",
        "Print where a run would be measured: versions, GPU, driver, clocks, and whether the Triton is the one "
        "the project pins ([tool.perfbot] triton-commit; outside a project, not checked).",
    ),
    "explain": (
        "explain",
        "explain_command",
        "Show what changed in the compiled Triton kernels of git revision BASE against HEAD's (default: this "
        "checkout's, uncommitted changes included): nothing is timed and no result is checked.",
    ),
    "export": (
        "compare",
        "export_command",
        "Write a results file in another tool's format, for dashboards that ingest it.",
    ),
    "history": (
        "history",
        "history_command",
        "The history of every benchmark in a baseline store: the steps in it, a static site, and a check for "
        "steps that no single pull request showed (ten PRs each 0.3% slower).",
    ),
    "init": (
        "init",
        "init_command",
        "Set perfbot up in an existing repository, for one of its kernels: a kernels package, perf/__init__.py, "
        "whose `subjects` lists the kernel families, and in it the family to fill in, perf/NAME/ (inputs, "
        'float64 reference, tolerance, suites; each place marked "# perfbot init: fill in"), a [tool.perfbot] '
        "table appended to pyproject.toml, with the Triton commit to pin, and perfbot's default thresholds.yaml.",
    ),
    "run": ("run", "run_command", "Check and time the kernels on a shape suite, and print a table."),
    "sample": (
        "run",
        "sample_command",
        "Check one benchmark, time it, and print its samples in ms, one per line (for bisect).",
    ),
    "selftest": (
        "selftest",
        "selftest_command",
        "Measure this runner's false-alarm rate (A/A) and the smallest slowdown it detects (A/B: the kernel "
        "followed by a calibrated sleep against the kernel followed by the shortest one), under the rule in "
        "force: each check is a sequential A/B as the pull-request check takes it, and pairs of checks show "
        "what confirmation (a second A/B of a failing case) leaves.",
    ),
    "show": ("run", "show_command", "Print the table of a stored results file, as `perfbot run` printed it."),
    "suites": ("run", "suites_command", "List the shape suites and their cases."),
    "triton": ("triton", "triton_group", "Triton builds for CI and bisection."),
    "verify-head": (
        "verify_head",
        "verify_head_command",
        "Exit 0 if SHA is the head of the pull request (from a branch of REPO, with --same-repository); else "
        "say why in one line and exit 2.",
    ),
}


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
                click.echo(_bounded(escaped(line)), err=True)
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


class _LazyGroup(_PerfbotGroup):
    """perfbot's own group: each command loaded from COMMANDS when it is first asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, name, _ = COMMANDS[cmd_name]
            self.add_command(getattr(importlib.import_module(f"{__package__}.commands.{module}"), name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The list of commands, shortened as click shortens a command's help, from COMMANDS."""
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        shown = {name: click.Command(name, help=help) for name, (_, _, help) in COMMANDS.items()}
        rows = [(name, shown[name].get_short_help_str(limit)) for name in sorted(shown)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _stray_exit(error: SystemExit) -> str:
    """What quit: every command leaves through click, so a SystemExit comes from the subject's code
    in something perfbot ran for it (a method of an object it returned) outside guard.call."""
    from .records.schema import clean  # pydantic's import, for this rare line only

    code = error.code
    shown = "" if code is None else clean(repr(code), 100) if type(code) in (int, str) else "..."  # no method of its
    return f"code perfbot ran for the subject called sys.exit({shown}) outside a guarded call"


def _error_line(text: str) -> None:
    """`perfbot: error: TEXT` on stderr, as one line of at most MAX_LINE characters: a longer one
    loses its middle, since its end usually says why (a long file name, then "no such file"). A
    control character left in it (a file's name quoted) is shown as its escape, never acted on."""
    click.echo(_bounded(f"perfbot: error: {escaped(' '.join(text.split()))}"), err=True)


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


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="perfbot")
def perfbot() -> None:
    """Performance-regression bot for Triton kernels: checks, times and compares them, posts the
    verdict on pull requests, keeps baselines and bisects slowdowns.

    Exit codes: 0 fine; 1 a significant slowdown or a wrong result; 2 bad input;
    3 the environment failed (no CUDA GPU, a tool missing, GitHub unreachable).
    """
