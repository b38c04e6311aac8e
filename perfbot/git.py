"""Running git: the commands perfbot starts (A/B worktrees, bisect, Triton checkouts, the
kernels' commit) all go through here."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import EnvironmentFailure


def run(repo: Path | None, *args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    """`git -C repo ARGS` (plain `git ARGS` without a repo), output captured as text; the caller
    reads the return code."""
    where = ["-C", str(repo)] if repo is not None else []
    return subprocess.run(["git", *where, *args], capture_output=True, text=True, timeout=timeout)


def commit_of(repo: Path, rev: str) -> str | None:
    """The full SHA of the commit `rev` names in `repo`, or None where it names none."""
    done = run(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    return done.stdout.strip() if done.returncode == 0 else None


@contextmanager
def worktree(repo: Path, sha: str, tree: Path) -> Iterator[Path]:
    """A detached worktree of `sha` at `tree`, removed afterwards; the repository's own working
    copy and HEAD are never touched."""
    added = run(repo, "worktree", "add", "--detach", "--force", str(tree), sha)
    if added.returncode != 0:
        raise EnvironmentFailure(f"git worktree add failed for {sha[:12]}: {added.stderr.strip()}")
    try:
        yield tree
    finally:
        run(repo, "worktree", "remove", "--force", str(tree))
