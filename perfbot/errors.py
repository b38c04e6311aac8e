"""The one error type users see. Only `cli.py` turns it into a message and an exit code."""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from pathlib import Path

# Exit codes of every command (README.md, "Exit codes").
EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_BAD_INPUT = 2
EXIT_ENVIRONMENT = 3


class PerfbotError(Exception):
    """A failure the user can act on; the message names the value and the fix."""

    exit_code = EXIT_BAD_INPUT


class WrongResult(PerfbotError):
    """A kernel computed a wrong result: the check fails (exit 1), and nothing is timed."""

    exit_code = EXIT_REGRESSION


class BadInput(PerfbotError):
    """Arguments, config or files that perfbot cannot use (exit 2)."""

    exit_code = EXIT_BAD_INPUT


class EnvironmentFailure(PerfbotError):
    """The machine cannot do the job: no CUDA GPU, a tool missing, a service unreachable (exit 3)."""

    exit_code = EXIT_ENVIRONMENT


def listed(names: Iterable[object], shown: int = 5) -> str:
    """Names for a message, the first `shown` of them (each cut to 60 characters) and how many
    more: a file with thousands of long names still gives a line that can be read."""
    items = [text if len(text := str(name)) <= 60 else f"{text[:57]}..." for name in names]
    more = len(items) - shown
    return ", ".join(items[:shown]) + (f" and {more} more" if more > 0 else "")


def unexpected(error: Exception) -> str:
    """An error of perfbot's own code (or of a library it called), in one line for the process
    that reports it: its kind, its message and the line that raised it, so that a rare one can
    be found from the run's message alone."""
    frames = list(traceback.walk_tb(error.__traceback__))  # no source read, unlike extract_tb
    if not frames:
        return f"{type(error).__name__}: {error}"
    frame, line = frames[-1]
    return f"{type(error).__name__}: {error} (raised at {Path(frame.f_code.co_filename).name}:{line})"
