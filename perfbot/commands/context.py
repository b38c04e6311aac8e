"""What the commands share: the project a command runs in, the options that choose what to
measure, the terminal it writes to, and where a comparison's report goes."""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..config import ProjectConfig, find_project_root, load_project_config
from ..deciding import comparison as comparison_file
from ..deciding.compare import Report
from ..deciding.thresholds import DEFAULT_PATH, Policy, default_policy, load_policy
from ..errors import BadInput, EnvironmentFailure
from ..files import check_output, write_all
from ..output.verdicts import comment_markdown, compare_table
from ..records.schema import MAX_SAMPLES

if TYPE_CHECKING:
    from ..loading.package import Loaded
    from ..loading.subject import Suite
    from ..measuring.planning import RunSettings
    from ..records.run import Environment

# Every number an option takes has a range, so that a huge or odd one is refused as a bad argument
# (exit 2) rather than met deep inside (a seed past 2^64 is torch's error).
MAX_SEED = 2**32 - 1
MAX_GPUS = 1024
MAX_WARMUP = 1000


class FiniteRange(click.FloatRange):
    """click.FloatRange, refusing nan and inf too: nan passes every bound, being never less nor more."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


project_option = click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="perfbot checkout whose pyproject.toml, kernels/ and suites to use. "
    "Default: the nearest above the current directory.",
)
thresholds_option = click.option(
    "--thresholds",
    "thresholds_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Regression policy. Default: thresholds.yaml at the project root; where there is none, perfbot's "
    "defaults, which the report says.",
)
kernels_option = click.option(
    "--kernels",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Package to use instead of the project's ([tool.perfbot] kernels).",
)


family_option = click.option(
    "--family",
    "family_names",
    multiple=True,
    metavar="NAME",
    help="Only this kernel family, of a package that declares `subjects` (repeat for several). Default: every "
    "family. A bare --suite or --kernel name then means that name in each chosen family (`--suite pr`: every "
    "chosen family's pr); FAMILY/NAME names one.",
)

_CHOICE_OPTIONS = (
    family_option,
    click.option(
        "--suite",
        "suite_names",
        multiple=True,
        help="Suite to run (repeat for several; `all` for every suite). `perfbot suites` lists them. Default: for "
        "`run`, pr if the subject has it, else every suite; for `ab` (the pull-request check), every suite.",
    ),
    click.option(
        "--case",
        "case_names",
        multiple=True,
        help="Only the cases of these names in the chosen suites (repeat for several). Default: every case.",
    ),
    click.option(
        "--kernel",
        "kernel_names",
        multiple=True,
        help="Only these implementations (repeat for several). Default: each suite's list.",
    ),
    click.option(
        "--skip-kernel",
        "skipped_kernels",
        multiple=True,
        metavar="NAME",
        help="Leave out this implementation (repeat for several), e.g. max-autotune, which sets up too slowly "
        "for every pull request; the report says it was left out.",
    ),
    click.option(
        "--variant",
        "variants",
        multiple=True,
        metavar="NAME=VALUE",
        help="Measure this value of one of the subject's variant parameters (repeat for several; NAME=all for "
        "every value). Default: each parameter's default.",
    ),
)
_TIMING_OPTIONS = (
    click.option(
        "--samples",
        type=click.IntRange(min=10, max=MAX_SAMPLES),
        default=30,
        show_default=True,
        help="Timed samples per benchmark, each one CUDA-graph replay after an L2 flush.",
    ),
    click.option(
        "--warmup",
        type=click.IntRange(min=1, max=MAX_WARMUP),
        default=3,
        show_default=True,
        help="Untimed calls per implementation before capture (compiles and autotunes).",
    ),
)
_KEEP_SASS_OPTION = click.option(
    "--keep-sass",
    is_flag=True,
    help="Keep each Triton kernel's full SASS in the results (docs/files.md gives the size limits); "
    "by default only its counts by instruction class are kept.",
)
_SEED_OPTION = click.option(
    "--seed", type=click.IntRange(0, MAX_SEED), default=0, show_default=True, help="Seed of the random inputs."
)
max_samples_option = click.option(
    "--max-samples",
    type=click.IntRange(min=10, max=MAX_SAMPLES),
    default=4000,
    show_default=True,
    help="Rounds per pair at most (sequential sampling): a pair still undecided then is reported inconclusive, "
    "with why.",
)
_GPU_OPTIONS = (
    click.option(
        "--gpus",
        "gpu_count",
        type=click.IntRange(min=1, max=MAX_GPUS),
        default=None,
        help="Shard the cases across the first N visible GPUs, one worker process each (both sides of an A/B "
        "pair stay on one GPU). Default: every visible GPU (CUDA_VISIBLE_DEVICES narrows them).",
    ),
    click.option(
        "--mixed-gpus",
        is_flag=True,
        help="Shard across GPUs of different models too (refused by default: their timings do not compare).",
    ),
)


def _apply(command: Callable[..., Any], options: Sequence[Callable[[Any], Any]]) -> Callable[..., Any]:
    for option in reversed(options):
        command = option(command)
    return command


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


@dataclass(frozen=True)
class Measuring:
    """What `measure_options` chose: the suites, cases and implementations, the variants, how many
    samples and warmup calls, the seed of the inputs, and the GPUs."""

    family_names: tuple[str, ...]
    suite_names: tuple[str, ...]
    case_names: tuple[str, ...]
    kernel_names: tuple[str, ...]
    skipped_kernels: tuple[str, ...]
    variants: tuple[str, ...]
    samples: int
    warmup: int
    seed: int
    gpu_count: int | None
    mixed_gpus: bool
    keep_sass: bool

    def suites(self, subject: Loaded, every_suite: bool = False) -> list[Suite]:
        """The suites chosen of the subject's (selection.chosen)."""
        from ..loading.selection import chosen

        with named_options():
            return chosen(subject, self.suite_names, self.case_names, every_suite, self.family_names)

    def settings(self, subject: Loaded) -> RunSettings:
        return run_settings(
            subject,
            self.samples,
            self.warmup,
            self.seed,
            self.variants,
            self.kernel_names,
            self.skipped_kernels,
            self.keep_sass,
            self.case_names,
        )

    def gpus(self) -> list[Any]:
        """The GPUs to shard across (`chosen_gpus`)."""
        return chosen_gpus(self.gpu_count, self.mixed_gpus)


def choice_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options that choose what to check: suites, cases, implementations, variants, the seed."""
    return _apply(command, (*_CHOICE_OPTIONS, _SEED_OPTION))


def measure_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options that choose what `run` and `ab` measure, how many samples, and on which GPUs,
    given to the command as one `measuring: Measuring`."""
    gathered = given_as(Measuring, "measuring")(command)
    return _apply(gathered, (*_CHOICE_OPTIONS, *_TIMING_OPTIONS, _SEED_OPTION, *_GPU_OPTIONS, _KEEP_SASS_OPTION))


def gpu_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--gpus and --mixed-gpus, for a command that can share its work out across GPUs."""
    return _apply(command, _GPU_OPTIONS)


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


def run_settings(
    subject: Loaded,
    samples: int,
    warmup: int,
    seed: int,
    variants: tuple[str, ...],
    kernel_names: tuple[str, ...],
    skipped_kernels: tuple[str, ...] = (),
    keep_sass: bool = False,
    case_names: tuple[str, ...] = (),
) -> RunSettings:
    from ..loading.selection import chosen_implementations
    from ..measuring.planning import RunSettings, chosen_variants

    return RunSettings(
        samples=samples,
        warmup_calls=warmup,
        seed=seed,
        variants=chosen_variants(subject.subject, variants),
        kernels=chosen_implementations(subject, kernel_names),
        skipped=chosen_implementations(subject, skipped_kernels),
        keep_sass=keep_sass,
        cases=tuple(dict.fromkeys(case_names)),
    )


def project_config(project: Path | None) -> ProjectConfig:
    return load_project_config(project if project is not None else find_project_root(Path.cwd()))


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


def load_kernels(config: ProjectConfig, kernels: Path | None, limit: float | None = None) -> Loaded:
    """The subject, its import limited to `limit` seconds (by default guard.IMPORT_LIMIT_S)."""
    from ..loading.package import load_subject

    return load_subject(kernels if kernels is not None else config.kernels_dir, limit=limit)


def console() -> Console:
    # Tables are wide; when stdout is a file or a CI log, don't wrap them at 80 columns.
    terminal = Console()
    return terminal if terminal.is_terminal else Console(width=200)


def progress() -> Progress:
    return Progress(
        TextColumn("{task.description:<28}", markup=False),  # case names, not markup
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )


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
