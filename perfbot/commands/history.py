"""`perfbot history`: the store's runs as a site, and the check for steps no PR showed."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from ..errors import EXIT_REGRESSION, BadInput, EnvironmentFailure
from ..files import check_output
from .autobisect import bisect_steps_command, open_issues_command
from .context import console, existing_store
from .history_ack import ack_command
from .options import option, overwrite_option, project_option, store_option


def _runner_pairs(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[tuple[str, Path], ...]:
    pairs = []
    for value in values:
        label, sep, path = value.partition("=")
        if not sep or not label or not path:
            raise click.BadParameter(f"must be LABEL=RESULTS, got {value!r}", ctx, param)
        pairs.append((label, Path(path)))
    return tuple(pairs)


@click.group("history", invoke_without_command=True)
@store_option
@option(
    # --html is the design's contract with other tooling (the trend site); --out-html, the naming rule's.
    "--html",
    "--out-html",
    "html_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write the site here: index.html and a page per benchmark in b/ (static, works offline). "
    "It is rebuilt whole: the page of a benchmark no longer in the store is removed.",
)
@click.option(
    "--check",
    is_flag=True,
    help="Report the steps no earlier check reported, with their commits and the bisect command; "
    "exit 1 if one is a slowdown of the subject's own implementations that started among the newest runs. "
    "Remembers what it reported in the store's reported-steps.json.",
)
@click.option(
    "--state",
    "state_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where --check remembers the steps it reported. Default: STORE/reported-steps.json.",
)
@option(
    "--out-steps",
    "steps_json",
    old=["--steps-json"],
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --check: also write the new steps here, as JSON records (format 1, perfbot/history/steps_file.py): "
    "each with its id, benchmark, change, runs, commits, whether it fails, the bisect command as a list of "
    "words, and the lines printed for it. Written whether or not there is a step.",
)
@overwrite_option
@click.option(
    "--runner",
    "runner_pairs",
    multiple=True,
    metavar="LABEL=RESULTS",
    callback=_runner_pairs,
    help="With --out-steps: the runner label that bisects the steps of a GPU, and the results file that label "
    "measured (its GPU name decides). Repeat per GPU kind; of two labels of one GPU, the first given wins.",
)
@click.option(
    "--repo-url",
    default=None,
    help="Link each run to its commit there (https://github.com/OWNER/REPO). "
    "Default: from GITHUB_SERVER_URL and GITHUB_REPOSITORY on Actions, else no links.",
)
@click.option(
    "--git",
    "git_repo",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="A clone of the repository: a commit whose subject names a pull request, (#123), links to it.",
)
@project_option
@click.pass_context
def history_command(
    context: click.Context,
    store: Path | None,
    html_dir: Path | None,
    check: bool,
    state_path: Path | None,
    steps_json: Path | None,
    overwrite: bool,
    runner_pairs: tuple[tuple[str, Path], ...],
    repo_url: str | None,
    git_repo: Path | None,
    project: Path | None,
) -> None:
    """The history of every benchmark in a baseline store: the steps in it, a static site, and a
    check for steps that no single pull request showed (ten PRs each 0.3% slower).

    Without --out-html or --check, prints every step found. The subcommands act on the store's
    steps; their options follow their name.

    Example:

    \b
        perfbot history --store .perfbot/store --out-html site --repo-url https://github.com/o/r
        perfbot history --check                     # the project's store
        perfbot history --store .perfbot/store --check --out-steps steps.json --runner h200=h200/main.json
    """
    from ..history import series as history
    from ..history import steps, steps_file
    from ..output import site

    if context.invoked_subcommand is not None:
        given = [p.opts[0] for p in context.command.params if context.params[p.name] not in (None, False, ())]
        if given:  # the subcommand has its own: say where they go rather than ignore them
            raise BadInput(f"{given[0]} goes after the subcommand: perfbot history {context.invoked_subcommand} --help")
        return
    if steps_json is not None and not check:
        raise BadInput("--out-steps needs --check: it writes the steps the check reports")
    if runner_pairs and steps_json is None:
        raise BadInput("--runner needs --out-steps: it names who bisects the steps written there")
    store_dir = existing_store(store, project, writes=check and state_path is None)  # --check's state
    if steps_json is not None:
        check_output(steps_json, overwrite=overwrite)
    runners = steps_file.runners(list(runner_pairs))
    url = repo_url or _actions_repo_url()
    if url is not None and not re.fullmatch(r"https?://[^\s\"'<>]+", url):
        raise BadInput(f"--repo-url {url!r}: give the repository's http(s) address, like https://github.com/o/r")
    read = history.read(store_dir)
    if html_dir is not None:
        pages = site.build(
            read,
            html_dir,
            site.Links(url.rstrip("/") if url else None, site.pull_requests_of(git_repo)),
            overwrite=overwrite,
        )
        click.echo(f"wrote {pages} pages to {html_dir} ({sum(len(r) for r in read.runs.values())} runs)", err=True)
    if check:
        state_file = state_path or store_dir / steps.STATE_FILE
        state = steps.load_state(state_file)
        new = steps.new_steps(read, state)
        printed: list[list[str]] = []  # each step's lines, also its evidence in the steps file
        for found in new:
            printed.append(steps.describe(found, store_dir))
            for line in printed[-1]:
                click.echo(line)
        if steps_json is not None:  # before the state: a step is never recorded as reported but left out
            records = [
                steps_file.record(f, runners.get(f.series.gpu), lines) for f, lines in zip(new, printed, strict=True)
            ]
            steps_file.save(steps_json, records)
        try:
            steps.save_state(state_file, steps.State(reported=[*state.reported, *(f.reported() for f in new)]))
        except OSError as error:
            raise EnvironmentFailure(
                f"{state_file}: cannot record the reported steps: {error.strerror or error}"
            ) from None
        held = steps.held_back(read, state)
        for found in held:  # shown, not recorded: a later check reports it once it is clear
            click.echo(f"held back: {steps.describe(found, store_dir)[0]}")
            if found.attribution is not None:
                click.echo(found.attribution.describe(found.series))
        failing = [f for f in new if f.fails]
        summary = (
            f"{len(new)} new step(s), {len(failing)} of them a recent slowdown of the subject's own"
            if new
            else "no new step"
        )
        click.echo(f"perfbot history: {summary}" + (f"; {len(held)} held back until it is clear whose" if held else ""))
        if failing:
            raise click.exceptions.Exit(EXIT_REGRESSION)
    if html_dir is None and not check:
        _print_steps(steps.find_all(read), store_dir)


def _actions_repo_url() -> str | None:
    server, repository = os.environ.get("GITHUB_SERVER_URL"), os.environ.get("GITHUB_REPOSITORY")
    return f"{server}/{repository}" if server and repository else None


def _print_steps(found: list, store_dir: Path) -> None:
    accept = f"acknowledge one: perfbot history ack --store {shlex.quote(str(store_dir))} --step ID --reason '...'"
    table = Table(
        title=f"steps in the store's history: {len(found)}",
        title_justify="left",
        caption=escape(accept) if found else None,
        caption_justify="left",
    )
    for column in ("GPU", "benchmark", "watched", "change", "whose", "from run", "commits"):
        table.add_column(column)
    table.add_column("step id", no_wrap=True)  # whole, to be copied into `perfbot history ack --step`
    for f in found:
        commits = f"{f.good.commit[:12]}..{f.bad.commit[:12]}" if f.good.commit and f.bad.commit else ""
        watched = f.series.watched_label
        table.add_row(
            escape(f.series.gpu),
            escape(f.series.label),
            escape(watched),
            f"{f.step.change_percent:+.2f}%",
            f.attribution.cause if f.attribution else "a baseline's",
            str(f.after.index + 1),
            commits,
            escape(f.step_id),
        )
    console().print(table)


history_command.add_command(ack_command)
# What follows a new step on main: the baseline workflow's bisect and issue jobs run these.
history_command.add_command(bisect_steps_command)
history_command.add_command(open_issues_command)
