"""Posting: `perfbot comment`."""

from __future__ import annotations

import re
from pathlib import Path

import click

from ..errors import BadInput, PerfbotError
from ..files import read_text
from ..output.report import (
    GITHUB_COMMENT_LIMIT,
    MARKER,
    GpuReport,
    comment_markdown,
    fit_comment,
    gpu_comment_markdown,
    gpu_headline,
)
from ..records.schema import GPU_LABEL
from .ab import ERROR_FILE


def _sections(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[tuple[str, Path], ...]:
    parsed: dict[str, Path] = {}
    for value in values:
        label, sep, path = value.partition("=")
        if not sep or not path:
            raise click.BadParameter(f"must be LABEL=FILE, got {value!r}", ctx, param)
        if not GPU_LABEL.fullmatch(label):
            raise click.BadParameter(
                f"{label!r} is not a runner label (1 to 64 letters, digits, '.', '_' or '-', starting with a "
                "letter or digit)",
                ctx,
                param,
            )
        if label in parsed:
            raise click.BadParameter(f"{label!r} is given twice; one section per GPU label", ctx, param)
        parsed[label] = Path(path)
    return tuple(parsed.items())


@click.command("comment")
@click.option("--repo", required=True, help="Repository as OWNER/NAME.")
@click.option("--pr", type=click.IntRange(min=1, max=2**31 - 1), required=True, help="Pull request number.")
@click.option(
    "--comparison",
    "comparison_path",
    type=click.Path(path_type=Path),
    default=None,
    help="The comparison file (`perfbot compare --json`, or comparison.json of `perfbot ab`): "
    "the comment is rendered from it, every value escaped. What the PR check posts.",
)
@click.option(
    "--body-file",
    type=click.Path(path_type=Path),
    default=None,
    help="Or: markdown to post as it is (your own text). A body over GitHub's 65,536 characters is cut, with a note.",
)
@click.option(
    "--section",
    "sections",
    multiple=True,
    metavar="LABEL=FILE",
    callback=_sections,
    help="Or, repeated, one per GPU kind: the runner label its check ran on and its comparison file. All go into "
    "the one comment, a section each under the label (never a name read from the file), sharing GitHub's limit. "
    "A FILE that is missing, a symlink or unreadable gives a section saying that GPU could not measure (and why, "
    "from the first line of an error.txt beside it, as `perfbot ab` leaves one).",
)
@click.option(
    "--sha",
    default=None,
    help="The commit the report measured. The report is posted only if it is the PR's head; if the PR "
    "has moved on, only the status is set; if the PR has no such commit, nothing is posted (exit 2).",
)
@click.option(
    "--status",
    "state",
    type=click.Choice(["success", "failure", "error", "pending"]),
    default=None,
    help="Also set a commit status with this state on --sha (set even when the comment cannot be posted).",
)
@click.option(
    "--author",
    default=None,
    help="Login whose marked comment is perfbot's. Default: the token's own identity (GET /user), or "
    "github-actions[bot] for the Actions token. A GitHub App token needs its APP[bot] login here.",
)
@click.option("--context", default="perfbot", show_default=True, help="Name of the commit status.")
@click.option("--target-url", default=None, help="Link of the commit status, e.g. the workflow run.")
def comment_command(
    repo: str,
    pr: int,
    comparison_path: Path | None,
    body_file: Path | None,
    sections: tuple[tuple[str, Path], ...],
    sha: str | None,
    state: str | None,
    author: str | None,
    context: str,
    target_url: str | None,
) -> None:
    """Post the report as the PR's one perfbot comment (edited in place on every push).

    Token from GITHUB_TOKEN, API root from GITHUB_API_URL. Transient failures are retried
    within about three minutes; exits 3 when GitHub stays unreachable.

    Example:

        perfbot comment --repo octo/perfbot --pr 7 --comparison comparison.json --sha $SHA --status failure

        perfbot comment --repo octo/perfbot --pr 7 --section a100=a100/comparison.json \\
            --section h200=h200/comparison.json --sha $SHA --status success
    """
    if sum((comparison_path is not None, body_file is not None, bool(sections))) != 1:
        raise click.UsageError("give --comparison FILE, --body-file FILE or --section LABEL=FILE ... (one of them)")
    if state is not None and sha is None:
        raise click.UsageError("--status needs --sha, the commit to set it on")
    if sha is not None and not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise click.BadParameter(f"must be a full 40-hex-digit commit SHA, got {sha!r}", param_hint="--sha")
    from ..output.github import GitHub  # github3 is needed here only

    if sections:
        reports = [_gpu_report(label, path) for label, path in sections]
        # Room for the commit line and a stale note below GitHub's limit.
        body, headline = gpu_comment_markdown(reports, GITHUB_COMMENT_LIMIT - 400), gpu_headline(reports)
    else:
        body = _rendered(comparison_path) if comparison_path is not None else _read_body(body_file)  # type: ignore[arg-type]
        headline = _headline(body)
    client = GitHub.from_environment()
    standing = client.check_head(repo, pr, sha) if sha is not None else None
    if sha is not None:
        body = _for_commit(body, sha)
    problems: list[PerfbotError] = []
    if state is not None and sha is not None:
        try:
            client.set_status(repo, sha, state, headline, context, target_url)
            click.echo(f"status {state} set on {sha[:12]}")
        except PerfbotError as error:
            problems.append(error)
    if standing is not None and standing.standing == "stale":
        click.echo(
            f"not posted: {repo}#{pr} has moved on to {standing.head_sha[:12]}; this report is for "
            f"{sha and sha[:12]}, and the newer run posts its own"
        )
    else:
        try:
            posted = client.upsert_comment(repo, pr, body, author)
            click.echo(f"{posted.action} {posted.url}")
            if sha is not None and (moved := client.check_head(repo, pr, sha)).standing == "stale":
                # The PR moved on while this was posted: say so, until the newer run replaces it.
                client.upsert_comment(repo, pr, _stale(body, moved.head_sha), author)
                click.echo(f"marked stale: {repo}#{pr} moved on to {moved.head_sha[:12]} meanwhile")
        except PerfbotError as error:
            problems.append(error)
    if problems:
        worst = max(problems, key=lambda e: e.exit_code)
        for problem in problems:
            click.echo(f"perfbot: error: {problem}", err=True)
        raise click.exceptions.Exit(worst.exit_code)


@click.command("verify-head")
@click.option("--repo", required=True, help="Repository as OWNER/NAME.")
@click.option("--pr", type=click.IntRange(min=1, max=2**31 - 1), required=True, help="Pull request number.")
@click.option("--sha", required=True, help="The commit that must be the pull request's head.")
@click.option(
    "--same-repository",
    is_flag=True,
    help="Also require the pull request to come from a branch of --repo, not from a fork.",
)
def verify_head_command(repo: str, pr: int, sha: str, same_repository: bool) -> None:
    """Exit 0 if SHA is the head of the pull request (from a branch of REPO, with
    --same-repository); else say why in one line and exit 2. The GPU check runs it before any
    of the head's code: an automatic dispatch must name a head of this repository's own.

    Token from GITHUB_TOKEN (pull-requests: read), API root from GITHUB_API_URL.

    Example:

        perfbot verify-head --repo octo/perfbot --pr 7 --sha $SHA --same-repository
    """
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise click.BadParameter(f"must be a full 40-hex-digit commit SHA, got {sha!r}", param_hint="--sha")
    from ..output.github import GitHub

    standing = GitHub.from_environment().check_head(repo, pr, sha)
    if standing.standing != "current":
        raise BadInput(f"{repo}#{pr} has moved on to {standing.head_sha[:12]}; {sha[:12]} is no longer its head")
    if same_repository and standing.head_repository.lower() != repo.lower():
        raise BadInput(
            f"{repo}#{pr} comes from {standing.head_repository}, a fork: a maintainer must start its check by hand"
        )
    click.echo(f"{sha[:12]} is the head of {repo}#{pr} (from {standing.head_repository})")


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
    from ..deciding import comparison

    # Room for the commit line and a stale note below GitHub's limit.
    return comment_markdown(comparison.load(path), GITHUB_COMMENT_LIMIT - 400)


_STOPPED = "no comparison file; its job stopped before comparing"
# More than a section shows of a line (report.MAX_SHOWN): the rest of the file is never read.
_ERROR_BYTES = 1024


def _gpu_report(label: str, path: Path) -> GpuReport:
    """One GPU's section: its comparison file, or why it has none. A symlink is not followed: in
    the PR check, the file comes from a job that ran the pull request's code."""
    from ..deciding import comparison

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
    """The first line of the error file that a GPU's A/B left where it stopped (`perfbot ab`'s
    ERROR_FILE), or "" where there is none to read. Not followed if a symlink, as above; the
    section escapes it like any other value."""
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
    return fit_comment(body, GITHUB_COMMENT_LIMIT - 400)  # room for the commit line and a stale note
