"""What follows a new slowdown on main: `perfbot history bisect-steps` (on the GPU runner) and
`perfbot history open-issues` (on a GitHub-hosted one), the baseline workflow's bisect and issues
jobs."""

from __future__ import annotations

import re
from pathlib import Path

import click

from ..errors import BadInput, EnvironmentFailure, PerfbotError
from .options import author_option, github_repo_option, option, steps_option


@click.command("bisect-steps")
@steps_option
@click.option(
    "--runner",
    required=True,
    help="This runner's label: the failing steps the steps file gives it (their `runner`) are bisected.",
)
@option(
    "--out-dir",
    "out_dir",
    old=["--out"],
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Where each step's outcome (ID.json), report (ID.md) and state (ID.state.json) go.",
)
def bisect_steps_command(steps_path: Path, runner: str, out_dir: Path) -> None:
    """Bisect each new slowdown that the steps file gives to this runner, with the command the
    check printed for it, word for word.

    Run it in a clone of the repository that has the commits (the command's --repo is .), with
    the perfbot that measures first on PATH: the command's measure runs `perfbot sample` in a
    worktree of each commit. Prints a line per step: its culprit, no culprit, or not reproduced.
    Exits 0 when every bisect left its outcome, whatever it found; 3 when one left none.

    Example:

    \b
        PATH="$PWD/.venv/bin:$PATH" perfbot history bisect-steps --steps steps.json --runner h200 --out-dir bisect
    """
    from ..history import steps_file
    from ..jobs import step_bisect

    chosen = step_bisect.chosen(steps_file.load(steps_path), runner)
    if not chosen:
        click.echo(f"no new slowdown to bisect on runner {runner}")
        return
    missing = []
    for step in chosen:
        click.echo(f"bisecting step {step.id} ({step.label} on {step.gpu}): {' '.join(step.bisect or [])}", err=True)
        outcome = step_bisect.run(step, out_dir)
        if outcome is None:
            missing.append(step.id)
            click.echo(f"step {step.id}: the bisect left no outcome (see its output above)")
        else:
            click.echo(step_bisect.summary(step, outcome))
    if missing:
        raise EnvironmentFailure(f"{len(missing)} of {len(chosen)} bisect(s) left no outcome: {', '.join(missing)}")


@click.command("open-issues")
@steps_option
@click.option(
    "--outcomes",
    "outcomes_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="The bisect jobs' artifacts: the outcome of step ID, bisected on runner LABEL, is read from "
    "OUTCOMES/perfbot-bisect-LABEL/ID.json (bisect-steps --out-dir, as the workflow downloads it; symlinks are not "
    "followed).",
)
@click.option(
    "--declared",
    "declared_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="What main's suites declare (`perfbot suites --json` in a checkout of main): a step of a benchmark they do "
    "not declare gets no issue.",
)
@click.option(
    "--max-issues",
    type=click.IntRange(1, 100),
    default=10,
    show_default=True,
    help="The most issues one run opens. Past it, the steps left are named and the command exits 3: no later "
    "check lists them again, so run it again with the same steps file to open the next ones.",
)
@github_repo_option
@click.option("--run-url", default=None, help="The workflow run, named in each issue (an http(s) address).")
@author_option
def open_issues_command(
    steps_path: Path,
    outcomes_dir: Path,
    declared_path: Path,
    max_issues: int,
    repo: str,
    run_url: str | None,
    author: str | None,
) -> None:
    """Open one issue per new slowdown in the steps file, unless its bisect did not reproduce it.

    Only for a benchmark that main's suites declare (--declared), titled with its declared names,
    and at most --max-issues in one run: the steps file is made from the store, which any writer's
    workflow can push to. Each issue holds the step, its culprit (or why there is none), the
    command to reproduce it and the evidence, every value escaped, and ends with a hidden marker
    naming the step: when an issue of the token's with that marker exists, open or closed, none is
    opened, so a re-run opens nothing twice. A failing step that was not bisected (no commit
    range, no runner of its GPU) gets its issue with the reason. Token from GITHUB_TOKEN (issues:
    write), API root from GITHUB_API_URL. Exits 0 when every step is done; 2 for a steps,
    declarations or outcome file that does not read; 3 when a bisect left no outcome (re-run the
    bisect job), when GitHub stays unreachable, and when steps are left past the cap (run it again
    with the same steps file: in the baseline workflow, re-run the issues job alone).

    Example:

    \b
        perfbot suites --json > declared.json
        perfbot history open-issues --steps steps.json --outcomes bisect --declared declared.json --repo octo/perfbot
    """
    from ..history import steps_file
    from ..jobs import step_issues
    from ..records import declared as declarations

    if run_url is not None and not re.fullmatch(r"https?://[^\s\"'<>()\[\]]+", run_url):
        raise BadInput(f"--run-url {run_url!r}: give the workflow run's http(s) address")
    failing = [s for s in steps_file.load(steps_path).steps if s.fails]
    declared = declarations.load(declared_path)
    if not failing:
        click.echo("no new slowdown: no issue to open")
        return
    problems: list[PerfbotError] = []
    planned = []
    for step in failing:
        bench = step.benchmark
        if not declared.declares(bench.suite, bench.case, bench.kernel, bench.mode):
            # Not the store's names: what a writer put there is not echoed.
            click.echo(f"not opened: step {step.id}: main's suites declare no such benchmark")
            continue
        if step_issues.not_bisected(step) is not None:
            planned.append(step_issues.issue(step, None, run_url))
            continue
        try:
            outcome = step_issues.read_outcome(outcomes_dir, step)
        except PerfbotError as error:
            problems.append(error)
            continue
        if outcome.result == "not-reproduced":
            click.echo(
                f"not opened: step {step.id} ({step.label} on {step.gpu}): the bisect did not reproduce it: "
                f"{outcome.message}"
            )
            continue
        planned.append(step_issues.issue(step, outcome, run_url))
    if planned:
        from ..output.github import GitHub  # github3 is needed here only

        opened = 0
        try:
            client = GitHub.from_environment(needed_by="perfbot history open-issues")
            login = author or client.identity()
            for index, issue in enumerate(planned):
                if opened == max_issues:
                    left = [i.step.id for i in planned[index:]]
                    ids = ", ".join(left)
                    click.echo(f"not opened: step(s) {ids}: this run opened {opened} issues, its most (--max-issues)")
                    # The check recorded these steps as reported: no later steps file lists them.
                    problems.append(
                        EnvironmentFailure(
                            f"{len(left)} step(s) left past --max-issues: no later check lists them again; run "
                            "open-issues again with the same steps file, which opens the next ones and none twice "
                            "(in the baseline workflow: re-run the issues job alone)"
                        )
                    )
                    break
                posted = client.open_issue(repo, issue.title, issue.body, issue.marker, issue.since, login)
                opened += posted.action == "created"
                said = "opened" if posted.action == "created" else "exists, not opened again"
                click.echo(f"{said}: {posted.url} (step {issue.step.id})")
        except PerfbotError as error:  # GitHub answers the same for the next issue: stop at the first
            problems.append(error)
    if problems:
        for problem in problems:
            click.echo(f"perfbot: error: {problem}", err=True)
        raise click.exceptions.Exit(max(problems, key=lambda e: e.exit_code).exit_code)
