"""Posting: `perfbot comment`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..cli import perfbot
import re

from ..errors import BadInput, PerfbotError
from ..files import read_text
from ..report import GITHUB_COMMENT_LIMIT


@perfbot.command("comment")
@click.option("--repo", required=True, help="Repository as OWNER/NAME.")
@click.option("--pr", type=click.IntRange(min=1), required=True, help="Pull request number.")
@click.option("--body-file", type=click.Path(path_type=Path), required=True,
              help="Markdown to post, e.g. the file `perfbot compare --markdown` wrote.")
@click.option("--author", default=None,
              help="Login whose marked comment may be edited. Default: any bot account (GITHUB_TOKEN posts as github-actions[bot]).")
@click.option("--status", "state", type=click.Choice(["success", "failure", "error", "pending"]), default=None,
              help="Also set a commit status with this state on --sha.")
@click.option("--sha", default=None, help="Commit for --status.")
@click.option("--context", default="perfbot", show_default=True, help="Name of the commit status.")
@click.option("--target-url", default=None, help="Link of the commit status, e.g. the workflow run.")
def comment_command(repo: str, pr: int, body_file: Path, author: str | None, state: str | None, sha: str | None,
                    context: str, target_url: str | None) -> None:
    """Post the report as the PR's one perfbot comment (edited in place on every push).

    Token from GITHUB_TOKEN, API root from GITHUB_API_URL. Transient failures are retried;
    exits 3 when GitHub stays unreachable. With --status the commit status is set even if the
    comment could not be posted, so the verdict stays visible.

    Example:

        perfbot comment --repo octo/perfbot --pr 7 --body-file comment.md --status failure --sha $SHA
    """
    if (state is None) != (sha is None):
        raise click.UsageError("--status and --sha go together")
    if sha is not None and not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise click.BadParameter(f"must be a full 40-hex-digit commit SHA, got {sha!r}", param_hint="--sha")
    from ..github import GitHub  # github3 is needed here only

    body = _read_body(body_file)
    client = GitHub.from_environment()
    problems = []
    try:
        posted = client.upsert_comment(repo, pr, body, author)
        click.echo(f"{posted.action} {posted.url}")
    except PerfbotError as error:
        problems.append(error)
    if state is not None and sha is not None:
        headline = body.splitlines()[0].replace("**perfbot:**", "").strip() if body.strip() else "perfbot"
        try:
            client.set_status(repo, sha, state, headline, context, target_url)
            click.echo(f"status {state} set on {sha[:12]}")
        except PerfbotError as error:
            problems.append(error)
    if problems:
        worst = max(problems, key=lambda e: e.exit_code)
        for problem in problems:
            click.echo(f"perfbot: error: {problem}", err=True)
        sys.exit(worst.exit_code)


def _read_body(path: Path) -> str:
    body = read_text(path, "markdown file")
    if not body.strip():
        raise BadInput(f"{path}: is empty; nothing to post")
    if len(body) > GITHUB_COMMENT_LIMIT:
        raise BadInput(f"{path}: {len(body)} characters, over GitHub's {GITHUB_COMMENT_LIMIT} for a comment")
    return body
