"""What the commands share besides their options (options.py): the project a command runs in,
the terminal it writes to, where a comparison's report goes, and the library's refusals said as
click says a bad argument."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..config import ProjectConfig, find_project_root, load_project_config
from ..deciding.thresholds import DEFAULT_PATH, Policy, default_policy, load_policy
from ..errors import BadInput, EnvironmentFailure
from ..files import Inside, check_output, write_all

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from ..deciding.compare import Report
    from ..records.run import Environment


def given_as(cls: type[Any], keyword: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator: the command's parameters that `cls` (a dataclass) has fields for, given to it
    as one `cls`, as the argument `keyword`; without `keyword`, every parameter, as its only
    argument. What the command hands on is then one typed object, not a long list."""
    names = [each.name for each in dataclasses.fields(cls)]

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)  # click reads the help and the options from what it wraps
        def gathering(**given: Any) -> Any:
            if keyword is None:
                return command(cls(**given))
            gathered = cls(**{name: given.pop(name) for name in names})
            return command(**given, **{keyword: gathered})

        return gathering

    return decorate


def chosen_gpus(count: int | None, mixed: bool) -> list[Any]:
    """The GPUs to shard across (shards.Gpu); one or none: measure in this process."""
    from ..measuring.shards import choose, visible_gpus

    visible = visible_gpus()
    if not visible and count in (None, 1):
        return []  # no NVML to list them: the one CUDA sees, in this process
    return choose(visible, count, mixed)


@contextmanager
def named_options() -> Iterator[None]:
    """The library's refusal of a name (selection.BadChoice) said as click says a bad argument:
    naming the option that took it, and where to read more."""
    from ..loading.selection import BadChoice

    try:
        yield
    except BadChoice as error:
        if error.option is None:
            raise click.UsageError(error.reason) from None
        raise click.BadParameter(error.reason, param_hint=error.option) from None


def project_config(project: Path | None) -> ProjectConfig:
    return load_project_config(project if project is not None else find_project_root(Path.cwd()))


def store_dir(store: Path | None, project: Path | None, *, writes: bool = False) -> Path:
    """The baseline store: --store, else the project's ([tool.perfbot] store). A command that
    `writes` in the project's store, where it lies in the project (the default .perfbot/store, a
    relative path), holds it to the containment rule: it must not lead out of the project through a
    symlink (files.py). --store, or a path out of the project in the table, is the user's choice."""
    if store is not None:
        return store
    config = project_config(project)
    root = Path(os.path.abspath(config.root))
    if writes and Path(os.path.abspath(config.store_dir)).is_relative_to(root):
        Inside(root, "the project").check(config.store_dir, follow=True)
    return config.store_dir


def existing_store(store: Path | None, project: Path | None, *, writes: bool = False) -> Path:
    """The baseline store of a command that reads one (`store_dir`): it must be a folder."""
    directory = store_dir(store, project, writes=writes)
    try:
        folder = directory.is_dir()
    except OSError as error:  # a name too long for the system, say
        raise BadInput(f"baseline store {directory}: cannot read it: {error.strerror or error}") from None
    if not folder:
        what = "is not a folder" if os.path.lexists(directory) else "no such folder"
        raise BadInput(f"baseline store {directory}: {what}; `perfbot baseline update RESULTS` makes one")
    return directory


def warn_of_triton_pin(pin: str, environment: Environment | None = None, side: str | None = None) -> None:
    """One warning line on stderr when the Triton (`environment`'s, else the one imported here) is
    not the pinned one, or cannot be told to be (measuring/triton_pin.py); `side`: an A/B's."""
    from ..measuring import triton_pin
    from ..measuring.environment import triton_commit, triton_version

    if environment is not None:
        warning = triton_pin.recorded_check(environment, pin).warning
    else:
        warning = triton_pin.check(triton_version(), triton_commit(), pin).warning
    if warning:
        click.echo(f"perfbot: warning: {f'the {side} side: ' if side else ''}{warning}", err=True)


def project_policy(config: ProjectConfig, thresholds_path: Path | None) -> Policy:
    """The policy a command judges with: --thresholds, or the project's own thresholds.yaml, or
    where it has none perfbot's defaults, said on the terminal here and in the report (its note)."""
    if thresholds_path is not None:
        return load_policy(thresholds_path)
    own = config.root / "thresholds.yaml"
    if os.path.lexists(own):
        return load_policy(own)
    policy = default_policy()
    click.echo(
        f"perfbot: note: {own}: no such file; judging with perfbot's defaults ({DEFAULT_PATH}); "
        "copy that file there to set the project's own",
        err=True,
    )
    return policy


def console() -> Console:
    from rich.console import Console

    # Tables are wide; when stdout is a file or a CI log, don't wrap them at 80 columns.
    terminal = Console()
    return terminal if terminal.is_terminal else Console(width=200)


def progress() -> Progress:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description:<28}", markup=False),  # case names, not markup
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )


@contextmanager
def told_progress() -> Iterator[Callable[[object], None]]:
    """A progress bar told by a subject's process (subject_jobs.py), shown from its first task: a
    refusal before that is one line, with no bar above it. {"task": label, "total": n or None}
    starts a task, {"advance": n} advances it, {"description": label} renames it, and {"total":
    n} sets how many steps it has."""
    with ExitStack() as shown:
        bar: list[Progress] = []
        task: list[Any] = []

        def told(message: object) -> None:
            if not isinstance(message, dict):
                return
            if "task" in message:
                if not bar:
                    bar.append(shown.enter_context(progress()))
                task[:] = [bar[0].add_task(str(message["task"]), total=message.get("total"))]
            elif task:
                total = message.get("total")
                advance, description = int(message.get("advance", 0)), message.get("description")
                bar[0].update(task[0], advance=advance, description=description)
                if isinstance(total, int):
                    bar[0].update(task[0], total=total)

        yield told


def check_outputs(overwrite: bool, **paths: Path | None) -> None:
    """The output rule (files.py) for each output a command was given, by its option's name, before
    any work is done; two options naming one file are refused."""
    given = {option: path for option, path in paths.items() if path is not None}
    for path in given.values():
        check_output(path, overwrite=overwrite)
    names = list(given)
    for index, option in enumerate(names):
        for other in names[index + 1 :]:
            if Path(os.path.abspath(given[option])) == Path(os.path.abspath(given[other])):
                raise BadInput(f"--{option} and --{other} name one file, {given[option]}; give each its own")


def emit(report: Report, markdown_path: Path | None, json_path: Path | None, *, overwrite: bool) -> None:
    """The PR comment and the comparison file (written together, or neither), the job summary
    when on Actions, then the terminal table."""
    from ..deciding import comparison as comparison_file
    from ..output.verdicts import comment_markdown, compare_table

    summary = comparison_file.summarize(report)
    comment = comment_markdown(summary)
    outputs = {markdown_path: comment, json_path: comparison_file.to_text(summary)}
    write_all({path: text for path, text in outputs.items() if path is not None}, replace=overwrite)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        try:
            with open(step_summary, "a", encoding="utf-8") as handle:
                handle.write(comment + "\n")
        except OSError as error:
            raise EnvironmentFailure(
                f"GITHUB_STEP_SUMMARY={step_summary}: cannot append the report: {error.strerror or error}"
            ) from None
    console().print(compare_table(summary))
