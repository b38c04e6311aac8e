"""`perfbot comment`'s flow: the PR comment's body made from a comparison file, a markdown file
or one section per GPU; named for the commit it measured and posted only while that commit is
the PR's head; and the commit status set beside it.

The command parses its options into a `CommentRequest` and calls `post_report`, which says each
step as it is done and returns the failures left over: a status that could not be set does not
keep the comment from being posted, nor the other way round.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..deciding import comparison
from ..errors import BadInput, PerfbotError
from ..files import read_text
from .markdown import MARKER
from .verdicts import GITHUB_COMMENT_LIMIT, GpuReport, comment_markdown, fit_comment, gpu_comment_markdown, gpu_headline

# Where an A/B that stopped before its verdict says why, in the line it printed: the PR check's
# comment job shows it for a GPU that has no comparison file (a head that does not merge, say).
ERROR_FILE = "error.txt"
# Room for the commit line and a stale note below GitHub's limit.
_ROOM = GITHUB_COMMENT_LIMIT - 400
_STOPPED = "no comparison file; its job stopped before comparing"
# More than a section shows of a line (markdown.MAX_SHOWN): the rest of the file is never read.
_ERROR_BYTES = 1024


@dataclass(frozen=True)
class CommentRequest:
    """What to post where. The body comes from one of `sections` (LABEL, comparison file),
    `comparison` or `body_file`, tried in that order."""

    repo: str  # OWNER/NAME
    pr: int
    comparison: Path | None = None
    body_file: Path | None = None
    sections: tuple[tuple[str, Path], ...] = ()
    sha: str | None = None  # the commit the report measured
    state: str | None = None  # a commit status to set on `sha`
    author: str | None = None  # whose marked comment is perfbot's; default: the token's identity
    context: str = "perfbot"
    target_url: str | None = None


@dataclass(frozen=True)
class Commented:
    """The failures of a posting, none when all went through."""

    problems: tuple[PerfbotError, ...] = ()

    @property
    def exit_code(self) -> int:
        return max((problem.exit_code for problem in self.problems), default=0)


def post_report(request: CommentRequest, say: Callable[[str], None]) -> Commented:
    """Set the status (if asked) and post or edit the PR's one perfbot comment, unless the PR has
    moved on past `sha`; `say` is told each step. A PR that lacks `sha` is refused (BadInput)
    before anything is posted."""
    from .github import GitHub  # github3 is needed here only

    repo, pr, sha = request.repo, request.pr, request.sha
    body, headline = _body(request)
    client = GitHub.from_environment(needed_by="perfbot comment")
    standing = client.check_head(repo, pr, sha) if sha is not None else None
    if sha is not None:
        body = _for_commit(body, sha)
    problems: list[PerfbotError] = []
    if request.state is not None and sha is not None:
        try:
            client.set_status(repo, sha, request.state, headline, request.context, request.target_url)
            say(f"status {request.state} set on {sha[:12]}")
        except PerfbotError as error:
            problems.append(error)
    if standing is not None and standing.standing == "stale":
        say(
            f"not posted: {repo}#{pr} has moved on to {standing.head_sha[:12]}; this report is for "
            f"{sha and sha[:12]}, and the newer run posts its own"
        )
    else:
        try:
            posted = client.upsert_comment(repo, pr, body, request.author)
            say(f"{posted.action} {posted.url}")
            if sha is not None and (moved := client.check_head(repo, pr, sha)).standing == "stale":
                # The PR moved on while this was posted: say so, until the newer run replaces it.
                client.upsert_comment(repo, pr, _stale(body, moved.head_sha), request.author)
                say(f"marked stale: {repo}#{pr} moved on to {moved.head_sha[:12]} meanwhile")
        except PerfbotError as error:
            problems.append(error)
    return Commented(tuple(problems))


def _body(request: CommentRequest) -> tuple[str, str]:
    """The comment's markdown and the one line of it the commit status carries."""
    if request.sections:
        reports = [_gpu_report(label, path) for label, path in request.sections]
        return gpu_comment_markdown(reports, _ROOM), gpu_headline(reports)
    if request.comparison is not None:
        body = _rendered(request.comparison)
    elif request.body_file is not None:
        body = _read_body(request.body_file)
    else:
        raise BadInput("nothing to post: give a comparison file, a markdown file or a section per GPU")
    return body, _headline(body)


def _for_commit(body: str, sha: str) -> str:
    """The report with the commit it measured named above the marker."""
    lines = body.rstrip("\n").split("\n")
    at = len(lines) - 1 if lines[-1].strip() == MARKER else len(lines)
    return "\n".join([*lines[:at], "", f"<sub>Measured commit: {sha}</sub>", *lines[at:]]) + "\n"


def _stale(body: str, head: str) -> str:
    return (
        f"_This report is for an earlier commit: the pull request has moved on to {head[:12]}, whose check "
        f"will replace it._\n\n{body}"
    )


def _headline(body: str) -> str:
    first = body.strip().splitlines()[0] if body.strip() else ""
    return first.replace("**perfbot:**", "").strip() or "perfbot"


def _rendered(path: Path) -> str:
    return comment_markdown(comparison.load(path), _ROOM)


def _gpu_report(label: str, path: Path) -> GpuReport:
    """One GPU's section: its comparison file, or why it has none. A symlink is not followed: in
    the PR check, the file comes from a job that ran the pull request's code."""
    if path.is_symlink() or not path.exists():
        said = _error_line(path.with_name(ERROR_FILE))
        return GpuReport(
            label, None, f"its job stopped before comparing: {said}" if said else _STOPPED + " (see the workflow run)"
        )
    try:
        return GpuReport(label, comparison.load(path))
    except BadInput as error:
        return GpuReport(label, None, f"its comparison file could not be read: {str(error).removeprefix(f'{path}: ')}")


def _error_line(path: Path) -> str:
    """The first line of the error file that a GPU's A/B left where it stopped (ERROR_FILE), or ""
    where there is none to read. Not followed if a symlink, as above; the section escapes it like
    any other value."""
    if path.is_symlink() or not path.is_file():
        return ""
    try:
        with path.open("rb") as handle:
            text = handle.read(_ERROR_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _read_body(path: Path) -> str:
    body = read_text(path, "markdown file")
    if not body.strip():
        raise BadInput(f"{path}: is empty; nothing to post")
    return fit_comment(body, _ROOM)
