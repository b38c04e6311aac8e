"""Posting: `perfbot comment` (its check of a head: verify_head.py)."""

from __future__ import annotations

from pathlib import Path

import click

from ..output.comment import CommentRequest, post_report
from ..records.schema import GPU_LABEL
from .context import given_as
from .options import author_option, github_repo_option, pull_request_option
from .verify_head import full_sha


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
@github_repo_option
@pull_request_option
@click.option(
    "--comparison",
    type=click.Path(path_type=Path),
    default=None,
    help="The comparison file (`perfbot compare --out-json`, or comparison.json of `perfbot ab`): "
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
@author_option
@click.option("--context", default="perfbot", show_default=True, help="Name of the commit status.")
@click.option("--target-url", default=None, help="Link of the commit status, e.g. the workflow run.")
@given_as(CommentRequest)
def comment_command(request: CommentRequest) -> None:
    """Post the report as the PR's one perfbot comment (edited in place on every push).

    Token from GITHUB_TOKEN, API root from GITHUB_API_URL. Transient failures are retried
    within about three minutes; exits 3 when GitHub stays unreachable.

    Example:

        perfbot comment --repo octo/perfbot --pr 7 --comparison comparison.json --sha $SHA --status failure

        perfbot comment --repo octo/perfbot --pr 7 --section a100=a100/comparison.json \\
            --section h200=h200/comparison.json --sha $SHA --status success
    """
    if sum((request.comparison is not None, request.body_file is not None, bool(request.sections))) != 1:
        raise click.UsageError("give --comparison FILE, --body-file FILE or --section LABEL=FILE ... (one of them)")
    if request.state is not None and request.sha is None:
        raise click.UsageError("--status needs --sha, the commit to set it on")
    if request.sha is not None:
        full_sha(request.sha)
    commented = post_report(request, say=click.echo)
    for problem in commented.problems:
        click.echo(f"perfbot: error: {problem}", err=True)
    if commented.problems:
        raise click.exceptions.Exit(commented.exit_code)
