"""The two sides of an A/B made ready, nothing timed: each side's tree (a revision checked out, or
the head merged into the base's tip, in a temporary git worktree; the checkout perfbot runs in is
never touched), `checked_out`. Nothing of either subject is loaded here: a measured A/B loads
them from the trees in a worker (jobs/ab.py), a dry run and `perfbot explain` in a process of
their own (measuring/subject_jobs.py), the head's judged by the base's declarations."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from .. import git
from ..config import ProjectConfig, load_project_config
from ..errors import BadInput, PerfbotError
from ..records.run import Merge


@dataclass(frozen=True)
class Revisions:
    """The sides of an A/B: the base's revision, the head's (None: this checkout's kernels,
    uncommitted changes included), and whether the head is measured merged into the base."""

    base: str
    head: str | None = None
    merge: bool = False


@dataclass(frozen=True)
class Trees:
    """An A/B's two sides checked out, nothing loaded: each side's tree and commit, what the head
    was merged into, each side's pinned Triton commit, and where the kernels package lies inside
    each tree."""

    trees: dict[str, tuple[Path, str | None]]
    merge: Merge | None
    pins: dict[str, str]
    relative: Path  # the kernels package, inside each tree
    revisions: dict[str, str]  # how the user named each side, for what is said of it

    def kernels(self) -> dict[str, Path]:
        return {side: tree / self.relative for side, (tree, _) in self.trees.items()}

    def said_of_revisions(self, error: PerfbotError) -> PerfbotError:
        """The error with each side's temporary tree named by its revision, as the user knows it."""
        from ..loading.selection import BadChoice

        def said(text: str) -> str:
            for side, (folder, sha) in self.trees.items():
                if sha is not None:  # a worktree; this checkout is named as it is
                    text = text.replace(f"{folder}/", f"{self.revisions[side]}:").replace(
                        str(folder), self.revisions[side]
                    )
            return text

        if isinstance(error, BadChoice):  # keeps the option it names
            return BadChoice(said(error.reason), error.option)
        return type(error)(said(str(error)))


@contextmanager
def checked_out(config: ProjectConfig, revisions: Revisions) -> Iterator[Trees]:
    """Both sides checked out (the head merged into the base with `revisions.merge`; by default
    this checkout), each with its kernels package; nothing of the subject is loaded. The trees
    live while it does."""
    try:
        relative = config.kernels_dir.resolve().relative_to(config.root.resolve())
    except ValueError:
        raise BadInput(
            f"the A/B needs the kernels inside the project ({config.root}), got {config.kernels_dir}"
        ) from None
    if revisions.merge and not revisions.head:
        raise BadInput(
            "--merge needs HEAD, the head's commit: this checkout's uncommitted changes cannot be merged; "
            "commit them and name the commit"
        )
    with ExitStack() as stack:
        trees: dict[str, tuple[Path, str | None]] = {"base": stack.enter_context(checkout(config.root, revisions.base))}
        trees["head"] = (config.root, None)
        merged_as: Merge | None = None
        if revisions.merge and revisions.head:
            head_tree, merged_as = stack.enter_context(merged(config.root, str(trees["base"][1]), revisions.head))
            trees["head"] = (head_tree, merged_as.head)
        elif revisions.head:
            trees["head"] = stack.enter_context(checkout(config.root, revisions.head))
        head_name = "this checkout"
        if revisions.head:
            head_name = f"{revisions.head} merged into {revisions.base}" if merged_as else revisions.head
        named = {"base": revisions.base, "head": head_name}
        for side in ("base", "head") if revisions.head else ("base",):
            _has_subject(trees[side], relative, named[side])
        pins = {side: load_project_config(tree).triton_commit for side, (tree, _) in trees.items()}
        yield Trees(trees, merged_as, pins, relative, named)


def _has_subject(tree: tuple[Path, str | None], relative: Path, revision: str) -> None:
    """Refused unless the side's tree holds the subject package, said of the revision, never of
    the temporary folder it was checked out in."""
    folder, sha = tree
    commit = f" ({sha[:12]})" if sha else ""
    if not (folder / relative / "__init__.py").is_file():
        raise BadInput(
            f"revision {revision!r}{commit} has no {relative.as_posix()}/__init__.py: an A/B loads each side's "
            f"subject from that side's own commit; commit the subject on {revision!r} first (git add "
            f"{relative.as_posix()} && git commit), or name a revision that has it"
        )


@contextmanager
def checkout(root: Path, rev: str) -> Iterator[tuple[Path, str]]:
    """The project `root` as of `rev`, in a detached worktree removed afterwards: (its path there,
    the full SHA). The project may be a folder of a larger repository (an example in a monorepo)."""
    sha = git.named_commit(root, rev)
    with _worktree(root, sha) as tree:
        yield tree / _inside(root), sha


# The most conflicting paths a refused merge names.
CONFLICTS_NAMED = 3


@contextmanager
def merged(root: Path, base_sha: str, head_rev: str) -> Iterator[tuple[Path, Merge]]:
    """The project `root` as of `head_rev` merged into the base's tip `base_sha`, in a detached
    worktree removed afterwards (the checkout perfbot runs in is never touched): (its path there,
    what was merged). A head that contains the tip already is itself the merge (a fast-forward).
    Measured against the tip, a head shows what merging it would do to the tip, whatever it
    took from the base's branch since it forked (docs/github.md)."""
    head_sha = git.named_commit(root, head_rev)
    if git.is_ancestor(root, head_sha, base_sha):
        raise BadInput(
            f"the head {head_sha[:12]} is already in the history of the base's tip {base_sha[:12]}: "
            "merged, it would add nothing to measure"
        )
    if git.is_ancestor(root, base_sha, head_sha):
        with checkout(root, head_sha) as (tree, _):
            yield tree, Merge(base=base_sha, head=head_sha)
        return
    if not git.share_history(root, base_sha, head_sha):
        raise BadInput(
            f"the head {head_sha[:12]} shares no history with the base's tip {base_sha[:12]}: nothing to merge into"
        )
    with _worktree(root, base_sha) as tree:
        try:
            commit = git.merge(tree, head_sha)
        except git.MergeConflict as conflict:
            named = ", ".join(conflict.paths[:CONFLICTS_NAMED])
            more = len(conflict.paths) - CONFLICTS_NAMED
            raise BadInput(
                f"the head {head_sha[:12]} does not merge into the base's tip {base_sha[:12]}: conflicts in "
                f"{named}{f' and {more} more' if more > 0 else ''}; rebase the head on the base, or merge the "
                "base into it, and measure again"
            ) from None
        yield tree / _inside(root), Merge(base=base_sha, head=head_sha, commit=commit)


def _inside(root: Path) -> Path:
    """Where the project lies in its git repository (a folder of a larger one: an example in a
    monorepo)."""
    top = git.run(root, "rev-parse", "--show-toplevel")
    return root.resolve().relative_to(Path(top.stdout.strip()).resolve()) if top.returncode == 0 else Path()


@contextmanager
def _worktree(root: Path, sha: str) -> Iterator[Path]:
    with (
        tempfile.TemporaryDirectory(prefix="perfbot-ab-") as scratch,
        git.worktree(root, sha, Path(scratch) / "side") as tree,
    ):
        yield tree
