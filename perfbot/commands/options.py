"""The options of the command line that several commands take, each declared once here and put on
every command that takes it: the project, what to measure (many benchmarks, or one), how to time
it and on which GPUs, Triton builds, the store, GitHub, and outputs. Names follow one rule
(CONTRIBUTING.md, "Naming options"); tests/test_options.py fails when an option is written out
again by hand on another command.

An option that was renamed keeps its old spelling for one release: `Option(old=...)` still takes
it, and says on stderr which name replaces it; --help shows only the new one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..loading.subject import MODES
from ..measuring.triton_build import DEFAULT_SOURCE
from ..records.schema import MAX_SAMPLES
from .context import chosen_gpus, given_as, named_options

if TYPE_CHECKING:
    from ..loading.package import Loaded
    from ..loading.subject import Suite
    from ..measuring.planning import RunSettings

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

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


class Option(click.Option):
    """A click option that knows where it was declared (`shared`: the group of this module that
    declared it, None for a command's own) and its old spellings (`old`), which still work for one
    release, each with a warning on stderr that names the new one."""

    def __init__(self, *args: Any, shared: str | None = None, old: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if old and self.is_flag:
            raise TypeError(f"{self.opts[0]}: old spellings are kept for options that take a value")
        self.shared = shared
        self.old = tuple(old)

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        for spelling in self.old:  # a destination of its own, so that its use can be told
            action = "append" if self.multiple else "store"
            parser.add_option(obj=self, opts=[spelling], dest=self._old_dest(spelling), action=action, nargs=self.nargs)

    def consume_value(self, ctx: click.Context, opts: Mapping[str, Any]) -> Any:
        used = [spelling for spelling in self.old if self._old_dest(spelling) in opts]
        if used:
            merged = dict(opts)
            for spelling in used:
                value = merged.pop(self._old_dest(spelling))
                if not ctx.resilient_parsing:
                    click.echo(f"perfbot: warning: {spelling} is deprecated; use {self.opts[0]}", err=True)
                if self.multiple:
                    merged[str(self.name)] = [*merged.get(str(self.name), []), *value]
                else:
                    merged.setdefault(str(self.name), value)
            opts = merged
        return super().consume_value(ctx, opts)

    def _old_dest(self, spelling: str) -> str:
        return f"{self.name} {spelling}"


def option(*decls: str, old: Sequence[str] = (), **attrs: Any) -> Decorator:
    """A command's own option (click.option), taking `old` spellings too, each with a warning."""
    return click.option(*decls, cls=Option, old=old, **attrs)


class Shared:
    """An option declared once, for every command of its group that takes it: a decorator, like
    click.option's. `.was(OLD...)` is the same option on a command where it had another name."""

    def __init__(self, group: str, *decls: str, old: Sequence[str] = (), **attrs: Any) -> None:
        self.group, self.decls, self.old, self.attrs = group, decls, tuple(old), attrs

    def __call__(self, command: Callable[..., Any]) -> Callable[..., Any]:
        put = click.option(*self.decls, cls=Option, shared=self.group, old=self.old, **self.attrs)
        return put(command)

    def was(self, *old: str) -> Shared:
        return Shared(self.group, *self.decls, old=old, **self.attrs)


def _apply(command: Callable[..., Any], options: Sequence[Decorator]) -> Callable[..., Any]:
    for each in reversed(options):
        command = each(command)
    return command


# --- the project ------------------------------------------------------------------------------

project_option = Shared(
    "project",
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The project: a repository whose pyproject.toml has a [tool.perfbot] table (its kernels package, "
    "store and Triton pin). Default: the nearest above the current directory.",
)
package_option = Shared(
    "project",
    "--package",
    "package",
    old=["--kernels"],
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Kernels package to use instead of the project's ([tool.perfbot] kernels).",
)
thresholds_option = Shared(
    "project",
    "--thresholds",
    "thresholds_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Regression policy. Default: thresholds.yaml at the project root; where there is none, perfbot's "
    "defaults, which the report says.",
)

# --- what to measure: many benchmarks (run, ab, check, explain) ---------------------------------

families_option = Shared(
    "benchmarks",
    "--family",
    "family_names",
    multiple=True,
    metavar="NAME",
    help="Only this kernel family, of a package that declares `subjects` (repeat for several). Default: every "
    "family. A bare --suite or --kernel name then means that name in each chosen family (`--suite pr`: every "
    "chosen family's pr); FAMILY/NAME names one.",
)
suites_option = Shared(
    "benchmarks",
    "--suite",
    "suite_names",
    multiple=True,
    metavar="NAME",
    help="Suite to run (repeat for several; `all` for every suite). `perfbot suites` lists them. Default: for "
    "`run` and `explain`, pr if the subject has it, else every suite; for `check`, quick, else as `run`; for "
    "`ab` (the pull-request check), every suite.",
)
cases_option = Shared(
    "benchmarks",
    "--case",
    "case_names",
    multiple=True,
    metavar="NAME",
    help="Only the cases of these names in the chosen suites (repeat for several). Default: every case.",
)
modes_option = Shared(
    "benchmarks",
    "--mode",
    "mode_names",
    multiple=True,
    type=click.Choice(MODES),
    metavar="MODE",
    help="Only the cases timed in this mode (repeat for several): forward, backward (the gradients alone) or "
    "forward+backward (one training step). Default: every mode the suites time each case in.",
)
implementations_option = Shared(
    "benchmarks",
    "--kernel",
    "kernel_names",
    multiple=True,
    metavar="NAME",
    help="Only these implementations (repeat for several). Default: each suite's list; for `explain`, the "
    "implementations under test, the subject's own kernels (`--kernel all`: every one the suites list).",
)
skip_kernel_option = Shared(
    "benchmarks",
    "--skip-kernel",
    "skipped_kernels",
    multiple=True,
    metavar="NAME",
    help="Leave out this implementation (repeat for several), e.g. max-autotune, which sets up too slowly "
    "for every pull request; the report says it was left out (`selftest`: of its interference check).",
)
variants_option = Shared(
    "benchmarks",
    "--variant",
    "variants",
    multiple=True,
    metavar="NAME=VALUE",
    help="This value of one of the subject's variant parameters (repeat for several; NAME=all for every "
    "value). Default: each parameter's default; for `check`, every value.",
)
seed_option = Shared(
    "benchmarks",
    "--seed",
    type=click.IntRange(0, MAX_SEED),
    default=0,
    show_default=True,
    help="Seed of the random inputs.",
)

# --- how to time them, and where ----------------------------------------------------------------

samples_option = Shared(
    "timing",
    "--samples",
    type=click.IntRange(min=10, max=MAX_SAMPLES),
    default=30,
    show_default=True,
    help="Timed samples per benchmark, each one CUDA-graph replay after an L2 flush; for `ab` and `selftest`, "
    "the rounds of a pair before its first look (sequential sampling).",
)
warmup_option = Shared(
    "timing",
    "--warmup",
    type=click.IntRange(min=1, max=MAX_WARMUP),
    default=3,
    show_default=True,
    help="Untimed calls per implementation before capture (compiles and autotunes).",
)
max_samples_option = Shared(
    "timing",
    "--max-samples",
    type=click.IntRange(min=10, max=MAX_SAMPLES),
    default=4000,
    show_default=True,
    help="Rounds per pair at most (sequential sampling): a pair still undecided then is reported inconclusive, "
    "with why.",
)
keep_sass_option = Shared(
    "timing",
    "--keep-sass",
    is_flag=True,
    help="Keep each Triton kernel's full SASS in the results (explain: in its --out file; docs/files.md gives "
    "the size limits); by default only its counts by instruction class are kept.",
)
gpus_option = Shared(
    "gpus",
    "--gpus",
    "gpu_count",
    type=click.IntRange(min=1, max=MAX_GPUS),
    default=None,
    help="Shard the work across the first N visible GPUs, one worker process each (both sides of an A/B "
    "pair stay on one GPU). Default: every visible GPU (CUDA_VISIBLE_DEVICES narrows them).",
)
mixed_gpus_option = Shared(
    "gpus",
    "--mixed-gpus",
    is_flag=True,
    help="Shard across GPUs of different models too (refused by default: their timings do not compare).",
)

# --- one benchmark (sample, selftest, bisect's Triton mode) -------------------------------------

one_family_option = Shared(
    "one benchmark",
    "--family",
    "family",
    default=None,
    metavar="NAME",
    help="Kernel family of the benchmark, of a package that declares `subjects`: bare --suite and --kernel "
    "names are then its. Default: the family of the case.",
)
one_suite_option = Shared(
    "one benchmark",
    "--suite",
    "suite_name",
    default=None,
    metavar="NAME",
    help="Suite of the benchmark. Default: the subject's default case.",
)
one_case_option = Shared(
    "one benchmark",
    "--case",
    "case_name",
    default=None,
    metavar="NAME",
    help="Case of the benchmark. Default: the subject's default case.",
)
one_mode_option = Shared(
    "one benchmark",
    "--mode",
    "mode",
    type=click.Choice(MODES),
    metavar="MODE",
    default=None,
    help="Mode of the benchmark: forward, backward or forward+backward. Default: the first the case is timed in.",
)
one_kernel_option = Shared(
    "one benchmark",
    "--kernel",
    "kernel",
    default=None,
    metavar="NAME",
    help="Implementation to time. Default: the subject's (first) own.",
)
one_variant_option = Shared(
    "one benchmark",
    "--variant",
    "variants",
    multiple=True,
    metavar="NAME=VALUE",
    help="A variant parameter's value (repeat for several parameters). Default: the defaults.",
)
one_samples_option = Shared(
    "one benchmark",
    "--samples",
    type=click.IntRange(min=10, max=MAX_SAMPLES),
    default=20,
    show_default=True,
    help="Timed samples of the benchmark per measurement: what `sample` prints; a round at a commit of `bisect`.",
)

# --- Triton builds (ab, bisect, triton build) ---------------------------------------------------

triton_source_option = Shared(
    "triton builds",
    "--triton-source",
    default=None,
    metavar="REPO",
    help="Triton repository to build from: a path or a git URL (from a URL, only commits on a branch or tag). "
    f"`triton build`'s default: {DEFAULT_SOURCE}. `ab` builds only given it, where BASE and HEAD pin different "
    "Triton commits: both are built, and each side runs with its own.",
)
triton_cache_option = Shared(
    "triton builds",
    "--triton-cache",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="Where built Triton wheels are kept, one folder per commit (and, for `ab`, the environments they are "
    "installed in). Default: ~/.cache/perfbot/triton-wheels.",
)
no_build_isolation_option = Shared(
    "triton builds",
    "--no-build-isolation",
    is_flag=True,
    help="Build Triton with the build tools already installed (pip's --no-build-isolation) instead of fresh ones.",
)

# --- the baseline store, GitHub, outputs --------------------------------------------------------

store_option = Shared(
    "stores",
    "--store",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The baseline store: a folder per GPU model, every stored run kept as history (`perfbot baseline "
    "update` writes it). Default: [tool.perfbot] store of the project (.perfbot/store).",
)
github_repo_option = Shared("github", "--repo", required=True, metavar="OWNER/NAME", help="Repository as OWNER/NAME.")
pull_request_option = Shared(
    "github", "--pr", type=click.IntRange(min=1, max=2**31 - 1), required=True, help="Pull request number."
)
author_option = Shared(
    "github",
    "--author",
    default=None,
    help="Login whose marked comment or issue is perfbot's. Default: the token's own identity (GET /user), or "
    "github-actions[bot] for the Actions token. A GitHub App token needs its APP[bot] login here.",
)
steps_option = Shared(
    "steps",
    "--steps",
    "steps_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The steps file: perfbot history --check --out-steps FILE.",
)
json_option = Shared(
    "outputs", "--json", "as_json", is_flag=True, help="Print it as JSON, for a program to read, in place of the text."
)
overwrite_option = Shared(
    "outputs",
    "--overwrite",
    is_flag=True,
    help="Replace what the --out options name where it exists (a site is rebuilt over the old one); without "
    "it, an existing output is refused before any work (exit 2) and kept.",
)


# --- groups -------------------------------------------------------------------------------------


def choice_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options that choose what to check: suites, cases, implementations, variants, the seed."""
    chosen = (families_option, suites_option, cases_option, modes_option, implementations_option, skip_kernel_option)
    return _apply(command, (*chosen, variants_option, seed_option))


def gpu_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--gpus and --mixed-gpus, for a command that can share its work out across GPUs."""
    return _apply(command, (gpus_option, mixed_gpus_option))


def one_benchmark_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options that name one benchmark: its family, suite, case, mode and implementation."""
    return _apply(command, (one_family_option, one_suite_option, one_case_option, one_mode_option, one_kernel_option))


@dataclass(frozen=True)
class Measuring:
    """What `measure_options` chose: the suites, cases and implementations, the variants, how many
    samples and warmup calls, the seed of the inputs, and the GPUs."""

    family_names: tuple[str, ...]
    suite_names: tuple[str, ...]
    case_names: tuple[str, ...]
    mode_names: tuple[str, ...]
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
            return chosen(
                subject, self.suite_names, self.case_names, every_suite, self.family_names, mode_names=self.mode_names
            )

    def settings(self, subject: Loaded) -> RunSettings:
        from ..measuring.planning import settings_for

        return settings_for(
            subject,
            self.samples,
            self.warmup,
            self.seed,
            self.variants,
            self.kernel_names,
            self.skipped_kernels,
            self.keep_sass,
            self.case_names,
            self.mode_names,
        )

    def names(self, every_suite: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
        """What `suites` and `settings` are given besides the subject, as JSON carries them to the
        worker process that has it loaded (worker.chosen_in)."""
        selection = {
            "suite_names": self.suite_names,
            "case_names": self.case_names,
            "every_suite": every_suite,
            "family_names": self.family_names,
            "mode_names": self.mode_names,
        }
        settings = {
            "samples": self.samples,
            "warmup": self.warmup,
            "seed": self.seed,
            "variants": self.variants,
            "kernel_names": self.kernel_names,
            "skipped_kernels": self.skipped_kernels,
            "keep_sass": self.keep_sass,
            "case_names": self.case_names,
            "mode_names": self.mode_names,
        }
        return selection, settings

    def gpus(self) -> list[Any]:
        """The GPUs to shard across (`chosen_gpus`)."""
        return chosen_gpus(self.gpu_count, self.mixed_gpus)


def measure_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options that choose what `run` and `ab` measure, how many samples, and on which GPUs,
    given to the command as one `measuring: Measuring`."""
    gathered = given_as(Measuring, "measuring")(command)
    timing = (samples_option, warmup_option, gpus_option, mixed_gpus_option, keep_sass_option)
    return _apply(gathered, (choice_options, *timing))
