"""Posting: `perfbot comment`."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from ..cli import perfbot
from ..errors import BadInput, PerfbotError
from ..files import read_text
from ..report import fit_comment


@perfbot.command("comment")
@click.option("--repo", required=True, help="Repository as OWNER/NAME.")
@click.option("--pr", type=click.IntRange(min=1), required=True, help="Pull request number.")
@click.option("--body-file", type=click.Path(path_type=Path), required=True,
              help="Markdown to post, e.g. the file `perfbot compare --markdown` wrote. A body over GitHub's "
                   "65,536 characters is cut, with a note.")
@click.option("--sha", default=None,
              help="The commit the report measured. The report is posted only if it is the PR's head; if the PR "
                   "has moved on, only the status is set; if the PR has no such commit, nothing is posted (exit 2).")
@click.option("--status", "state", type=click.Choice(["success", "failure", "error", "pending"]), default=None,
              help="Also set a commit status with this state on --sha (set even when the comment cannot be posted).")
@click.option("--author", default=None,
              help="Login whose marked comment is perfbot's. Default: the token's own identity (GET /user), or "
                   "github-actions[bot] for the Actions token. A GitHub App token needs its APP[bot] login here.")
@click.option("--context", default="perfbot", show_default=True, help="Name of the commit status.")
@click.option("--target-url", default=None, help="Link of the commit status, e.g. the workflow run.")
def comment_command(repo: str, pr: int, body_file: Path, sha: str | None, state: str | None, author: str | None,
                    context: str, target_url: str | None) -> None:
    """Post the report as the PR's one perfbot comment (edited in place on every push).

    Token from GITHUB_TOKEN, API root from GITHUB_API_URL. Transient failures are retried
    within about three minutes; exits 3 when GitHub stays unreachable.

    Example:

        perfbot comment --repo octo/perfbot --pr 7 --body-file comment.md --sha $SHA --status failure
    """
    if state is not None and sha is None:
        raise click.UsageError("--status needs --sha, the commit to set it on")
    if sha is not None and not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise click.BadParameter(f"must be a full 40-hex-digit commit SHA, got {sha!r}", param_hint="--sha")
    from ..github import GitHub  # github3 is needed here only

    body = _read_body(body_file)
    client = GitHub.from_environment()
    standing = client.check_head(repo, pr, sha) if sha is not None else None
    problems: list[PerfbotError] = []
    if state is not None and sha is not None:
        try:
            client.set_status(repo, sha, state, _headline(body), context, target_url)
            click.echo(f"status {state} set on {sha[:12]}")
        except PerfbotError as error:
            problems.append(error)
    if standing is not None and standing.standing == "stale":
        click.echo(f"not posted: {repo}#{pr} has moved on to {standing.head_sha[:12]}; this report is for "
                   f"{sha and sha[:12]}, and the newer run posts its own")
    else:
        try:
            posted = client.upsert_comment(repo, pr, body, author)
            click.echo(f"{posted.action} {posted.url}")
        except PerfbotError as error:
            problems.append(error)
    if problems:
        worst = max(problems, key=lambda e: e.exit_code)
        for problem in problems:
            click.echo(f"perfbot: error: {problem}", err=True)
        sys.exit(worst.exit_code)


def _headline(body: str) -> str:
    first = body.strip().splitlines()[0] if body.strip() else ""
    return first.replace("**perfbot:**", "").strip() or "perfbot"


def _read_body(path: Path) -> str:
    body = read_text(path, "markdown file")
    if not body.strip():
        raise BadInput(f"{path}: is empty; nothing to post")
    return fit_comment(body)
