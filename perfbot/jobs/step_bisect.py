"""Bisecting the new slowdowns of a steps file on the GPU runner they were given to: each failing
step's command, word for word as the check printed it, with its outcome, report and state
written into one folder (OUT/ID.json, ID.md, ID.state.json), which the bisect job uploads.

The command runs as a program of its own, `perfbot` found on PATH as the check's line names it,
in the current directory (`--repo .`: a clone of the repository with the commits). Its measure
command runs `perfbot sample` in a worktree of each commit, so the perfbot on PATH is the one that
measures there.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ..errors import EnvironmentFailure
from ..history.steps_file import StepRecord, StepsFile
from . import bisect_outcome
from .bisect_outcome import OutcomeFile


def chosen(steps: StepsFile, runner: str) -> list[StepRecord]:
    """The failing steps with a commit range that the steps file gives to `runner`."""
    return [s for s in steps.steps if s.fails and s.bisect is not None and s.runner == runner]


def command(step: StepRecord, out: Path) -> list[str]:
    """The step's command as printed, with where its outcome, report and state go."""
    if step.bisect is None:
        raise ValueError(f"step {step.id} has no bisect command")
    written = ["--out-json", out / f"{step.id}.json", "--out-markdown", out / f"{step.id}.md"]
    # The folder is this command's own: a re-run replaces the report and resumes from the state.
    return [*step.bisect, *map(str, written), "--overwrite", "--state", str(out / f"{step.id}.state.json")]


def run(step: StepRecord, out: Path) -> OutcomeFile | None:
    """Bisect one step; its outcome, or None where the bisect left none (it crashed or was killed)."""
    argv = command(step, out)
    executable = shutil.which(argv[0])
    if executable is None:
        raise EnvironmentFailure(
            f"{argv[0]} is not on PATH: the bisect runs it, and its measure command runs `perfbot sample` in each "
            "commit's worktree; put the perfbot that measures first on PATH"
        )
    outcome = out / f"{step.id}.json"
    try:
        out.mkdir(parents=True, exist_ok=True)
        outcome.unlink(missing_ok=True)  # an outcome left by an earlier run must not stand for this one
    except OSError as error:
        raise EnvironmentFailure(f"{out}: cannot write the bisect's files there: {error.strerror or error}") from None
    subprocess.run([executable, *argv[1:]], check=False)  # the outcome file, not the exit code, says what it found
    return bisect_outcome.load(outcome) if outcome.is_file() else None


def summary(step: StepRecord, outcome: OutcomeFile) -> str:
    """One line per step for the job's log."""
    said = {
        "culprit": f"culprit {outcome.first_bad}",
        "no-culprit": f"no culprit: {outcome.message}",
        "not-reproduced": f"not reproduced: {outcome.message}",
        "failed": f"the bisect stopped: {outcome.message}",
    }[outcome.result]
    return f"step {step.id} ({step.label} on {step.gpu}): {said}"
