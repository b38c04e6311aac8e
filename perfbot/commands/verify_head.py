"""The GPU check's guard: `perfbot verify-head`. Its own module, apart from `perfbot comment`
(github.py), so that it starts without the imports of rendering a report."""

from __future__ import annotations

import os
import re

import click

from ..errors import BadInput
from .options import github_repo_option, pull_request_option


def full_sha(sha: str) -> None:
    """A --sha that is not a full commit SHA, the form GitHub gives a head in, is refused."""
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise click.BadParameter(f"must be a full 40-hex-digit commit SHA, got {sha!r}", param_hint="--sha")


@click.command("verify-head")
@github_repo_option
@pull_request_option
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
    full_sha(sha)
    from ..output.pull_head import DEFAULT_API_URL, read_head

    api_url = os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL
    head = read_head(repo, pr, os.environ.get("GITHUB_TOKEN", ""), api_url)
    if head.sha != sha:
        raise BadInput(f"{repo}#{pr}'s head is {head.sha[:12]}: {sha[:12]} is not, or no longer, its head")
    if same_repository and head.repository.lower() != repo.lower():
        raise BadInput(f"{repo}#{pr} comes from {head.repository}, a fork: a maintainer must start its check by hand")
    click.echo(f"{sha[:12]} is the head of {repo}#{pr} (from {head.repository})")
