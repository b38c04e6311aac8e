"""`perfbot run --against REV`: the in-job A/B. The kernels of the current checkout and of REV
(loaded by path from a git worktree) are measured interleaved, sample by sample, on the same
GPU, and judged with the interleaved policy. A failing slowdown must hold in a second
interleaved round of its cases before the check fails.
"""

from __future__ import annotations

import dataclasses
import tempfile
import uuid
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from . import git
from .compare import Report, compare
from .errors import BadInput
from .results import Results
from .thresholds import Policy


@contextmanager
def checkout(root: Path, rev: str) -> Iterator[tuple[Path, str]]:
    """A detached worktree of `rev` (path, full SHA), removed afterwards."""
    sha = git.commit_of(root, rev)
    if sha is None:
        raise BadInput(f"--against {rev!r} is not a commit in {root}")
    with tempfile.TemporaryDirectory(prefix="perfbot-against-") as scratch, \
            git.worktree(root, sha, Path(scratch) / "base") as tree:
        yield tree, sha


def new_run_id() -> str:
    return uuid.uuid4().hex


def confirm(report: Report, policy: Policy,
            remeasure: Callable[[set[tuple[str, str]]], tuple[Results, Results]]) -> Report:
    """Re-measure the cases of every failing comparison in a second interleaved round
    (`remeasure(cases)` returns base and head results); a slowdown fails only if it fails again."""
    failing = [c for c in report.comparisons if c.fails]
    if not failing:
        return report
    base, head = remeasure({(c.current.suite, c.current.case) for c in failing})
    second = {c.current.key: c for c in compare(base, head, policy).comparisons}
    comparisons = []
    for c in report.comparisons:
        if c.fails:
            again = second.get(c.current.key)
            detail = (f"{again.change_percent:+.2f}%, q={again.q_value:.2g}" if again and again.q_value is not None
                      else "not measured again")
            if again is not None and again.fails:
                c = dataclasses.replace(c, reason=f"{c.reason}; confirmed by a second interleaved round ({detail})")
            else:
                c = dataclasses.replace(c, fails=False, reason=f"{c.reason}; NOT confirmed by a second interleaved "
                                                                f"round ({detail}), so it does not fail the check")
        comparisons.append(c)
    return dataclasses.replace(report, comparisons=tuple(comparisons))


def restrict(suites: Sequence, cases: set[tuple[str, str]]) -> list:
    """The suites cut down to the given (suite, case) pairs."""
    kept = []
    for suite in suites:
        chosen = tuple(c for c in suite.cases if (suite.name, c.name) in cases)
        if chosen:
            kept.append(dataclasses.replace(suite, cases=chosen))
    return kept


def judge(base: Results, head: Results, policy: Policy,
          remeasure: Callable[[set[tuple[str, str]]], tuple[Results, Results]]) -> Report:
    if base.settings.get("ab_run") is None or base.settings.get("ab_run") != head.settings.get("ab_run"):
        raise BadInput("both sides must come from one interleaved A/B run")
    return confirm(compare(base, head, policy), policy, remeasure)

