"""Running git: the commands perfbot starts (A/B worktrees and merges, bisect, Triton checkouts,
the kernels' commit and whether they differ from it) all go through here."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import BadInput, EnvironmentFailure

# What git runs for perfbot's own worktrees and merges: none of the repository's hooks (a hook
# is code of whoever set up the checkout, and none of it belongs in a measurement).
NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
# A merge perfbot makes for itself: unsigned, and never resolved by a conflict resolution git
# remembered. Its identity is perfbot's (the environment, which outranks any configuration), so
# it works where the checkout has none configured.
_OWN_MERGE = (*NO_HOOKS, "-c", "commit.gpgSign=false", "-c", "rerere.enabled=false")
_OWN_NAME = {
    "GIT_AUTHOR_NAME": "perfbot",
    "GIT_AUTHOR_EMAIL": "perfbot@localhost",
    "GIT_COMMITTER_NAME": "perfbot",
    "GIT_COMMITTER_EMAIL": "perfbot@localhost",
}


class MergeConflict(Exception):
    """A merge that does not apply: `paths` are the files git could not merge."""

    def __init__(self, paths: list[str]):
        super().__init__(", ".join(paths))
        self.paths = paths


def run(
    repo: Path | None, *args: str, timeout: float | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """`git -C repo ARGS` (plain `git ARGS` without a repo), output captured as text, with `env`
    added to the environment; the caller reads the return code."""
    where = ["-C", str(repo)] if repo is not None else []
    environment = {**os.environ, **env} if env else None
    return subprocess.run(["git", *where, *args], capture_output=True, text=True, timeout=timeout, env=environment)


def commit_of(repo: Path, rev: str) -> str | None:
    """The full SHA of the commit `rev` names in `repo`, or None where it names none."""
    done = run(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    return done.stdout.strip() if done.returncode == 0 else None


def named_commit(repo: Path, rev: str) -> str:
    """The full SHA of the commit `rev` names in `repo`; a rev that names none is refused."""
    sha = commit_of(repo, rev)
    if sha is None:
        raise BadInput(f"{rev!r} is not a commit in {repo}")
    return sha


@contextmanager
def worktree(repo: Path, sha: str, tree: Path) -> Iterator[Path]:
    """A detached worktree of `sha` at `tree`, removed afterwards; the repository's own working
    copy and HEAD are never touched."""
    added = run(repo, *NO_HOOKS, "worktree", "add", "--detach", "--force", str(tree), sha)
    if added.returncode != 0:
        raise EnvironmentFailure(f"git worktree add failed for {sha[:12]}: {added.stderr.strip()}")
    try:
        yield tree
    finally:
        run(repo, "worktree", "remove", "--force", str(tree))


def is_ancestor(repo: Path, ancestor: str, descendant: str) -> bool:
    """Whether commit `ancestor` is in the history of `descendant` (a commit is its own)."""
    done = run(repo, "merge-base", "--is-ancestor", ancestor, descendant)
    if done.returncode not in (0, 1):
        raise EnvironmentFailure(
            f"git merge-base failed for {ancestor[:12]} and {descendant[:12]}: {done.stderr.strip()}"
        )
    return done.returncode == 0


def share_history(repo: Path, one: str, other: str) -> bool:
    """Whether the two commits have a common ancestor (unrelated histories have none)."""
    return run(repo, "merge-base", one, other).returncode == 0


def merge(tree: Path, sha: str) -> str:
    """Merge commit `sha` into the detached HEAD of worktree `tree` with a merge commit
    (`--no-ff`, even where a fast-forward would do), HEAD its first parent, and return the merge
    commit's SHA. Dated as `sha` is and with git's plain message, so that merging the same two
    commits again makes the same commit. Raises MergeConflict where the merge does not apply."""
    date = run(tree, "log", "-1", "--format=%cI", sha).stdout.strip()
    merged = run(
        tree,
        *_OWN_MERGE,
        "merge",
        "--no-ff",
        "--no-edit",
        "--no-log",
        "--no-verify-signatures",
        "--quiet",
        sha,
        env={**_OWN_NAME, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date},
    )
    if merged.returncode != 0:
        conflicts = run(tree, "diff", "--name-only", "--diff-filter=U").stdout.splitlines()
        if conflicts:
            raise MergeConflict(conflicts)
        raise EnvironmentFailure(f"git merge of {sha[:12]} failed: {(merged.stderr or merged.stdout).strip()}")
    return run(tree, "rev-parse", "HEAD").stdout.strip()


def kernels_revision(path: Path) -> dict[str, Any]:
    """The git commit the kernels directory is at, and whether its files differ from it (a
    results file measured from uncommitted kernels must not pass for that commit's)."""
    return {"kernels_commit": git_commit(path), "kernels_dirty": _git_dirty(path)}


def git_commit(path: Path) -> str | None:
    done = _git_or_none(path, "rev-parse", "HEAD")
    return (done.stdout.strip() or None) if done is not None else None


def _git_dirty(path: Path) -> bool | None:
    done = _git_or_none(path, "status", "--porcelain", "--", ".")
    return bool(done.stdout.strip()) if done is not None else None


def _git_or_none(path: Path, *args: str) -> subprocess.CompletedProcess | None:
    """A git command that succeeded, or None (not a repository, no git, git hanging)."""
    try:
        done = run(path, *args, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done if done.returncode == 0 else None
