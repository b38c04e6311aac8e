"""`perfbot explain`: what changed in the compiled Triton kernels of two revisions, without
timing anything (jobs/explain.py does the work, output/explain_table.py says it)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..compiling.offline import DEFAULT_GPU, GPUS
from ..files import write_atomic
from .context import (
    check_outputs,
    console,
    given_as,
    named_options,
    project_config,
    told_progress,
    warn_of_triton_pin,
)
from .options import (
    cases_option,
    families_option,
    implementations_option,
    keep_sass_option,
    modes_option,
    option,
    overwrite_option,
    project_option,
    suites_option,
    variants_option,
)

if TYPE_CHECKING:
    from ..compiling.explanation import Explanation

# The --out file's format: its version goes up when a field changes meaning or goes away.
JSON_VERSION = 1


@dataclass(frozen=True)
class ExplainOptions:
    base_rev: str
    head_rev: str | None
    family_names: tuple[str, ...]
    suite_names: tuple[str, ...]
    case_names: tuple[str, ...]
    mode_names: tuple[str, ...]
    kernel_names: tuple[str, ...]
    variants: tuple[str, ...]
    gpu: str | None
    keep_sass: bool
    out: Path | None
    overwrite: bool
    project: Path | None


@click.command("explain")
@click.argument("base_rev", metavar="BASE")
@click.argument("head_rev", metavar="[HEAD]", required=False)
@families_option
@suites_option
@cases_option
@modes_option
@implementations_option
@variants_option
@option(
    "--gpu-model",
    "gpu",
    old=["--gpu"],
    type=click.Choice(sorted(GPUS)),
    default=None,
    help=f"Compile for this GPU model without launching anything, on any machine, CPU inputs. Default: the GPU "
    f"here, each implementation run once on it; without one, {DEFAULT_GPU}.",
)
@keep_sass_option
@option(
    "--out",
    old=["--json"],
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write both sides' compiled kernels and what changed here, as JSON (for a CI artifact).",
)
@overwrite_option
@project_option
@given_as(ExplainOptions)
def explain_command(options: ExplainOptions) -> None:
    """Show what changed in the compiled Triton kernels of git revision BASE against HEAD's
    (default: this checkout's, uncommitted changes included): nothing is timed and no result is
    checked. Each chosen implementation is called once per case and mode on each side, and every
    Triton kernel what that mode times launches is recorded (in `backward`, the backward's kernels;
    --mode chooses): its specialization (constexprs, launch config), registers,
    spills, shared memory, occupancy, SASS instruction counts and digests. A table per
    implementation and case lists what differs, "same machine code" where every kernel's SASS is equal,
    and each side's kernels one line apiece.

    With a CUDA GPU here, each call runs on it, on real inputs. Without one, or with --gpu-model, Triton
    compiles for the named GPU (default: an H200, sm_90, with the ptxas Triton ships) and launches
    nothing, on CPU inputs; the subject's host code must allow that (docs/explain.md). BASE's
    subject decides the cases and what is under test, as in `perfbot ab`. An implementation that
    does not compile on a side is said in one line for that side; the exit code is 0 whenever
    explain could compare (differences are not failures), 2 for bad input (an unknown case, a
    revision that names no commit), 3 where the environment fails.

    Example:

    \b
        perfbot explain origin/main --suite decode --case CASE
        perfbot explain HEAD~1 HEAD --suite pr --kernel all --out explain.json
        perfbot explain origin/main --suite pr --mode backward
        perfbot explain origin/main --gpu-model "NVIDIA A100-SXM4-80GB" --variant NAME=all
    """
    from ..jobs import explain as job
    from ..jobs.ab_sides import Revisions

    target = job.target(options.gpu)  # refuses Triton's interpreter, which compiles nothing
    config = project_config(options.project)
    check_outputs(options.overwrite, out=options.out)
    warn_of_triton_pin(config.triton_commit)
    selection = {
        "suite_names": options.suite_names,
        "case_names": options.case_names,
        "family_names": options.family_names,
        "mode_names": options.mode_names,
    }
    request = job.Request(
        Revisions(options.base_rev, options.head_rev),
        selection,
        options.kernel_names,
        options.variants,
        target,
        options.keep_sass,
    )
    with told_progress() as told, named_options():
        explanation = job.explain(config, request, told)
    if len(set(explanation.pins.values())) > 1:
        click.echo(
            f"perfbot: note: the sides pin different Triton commits (base {explanation.pins['base'][:12]}, head "
            f"{explanation.pins['head'][:12]}); both were compiled with the Triton installed here",
            err=True,
        )
    if options.out is not None:
        write_atomic(options.out, explanation_json(explanation), replace=options.overwrite)
    _print(explanation)


def _print(explanation: Explanation) -> None:
    from ..output.explain_table import header, renderables, tally

    terminal = console()
    terminal.print(header(explanation), markup=False, highlight=False)
    for renderable in renderables(explanation):
        terminal.print(renderable, highlight=False)
    terminal.print(tally(explanation), markup=False, highlight=False)


def explanation_json(explanation: Explanation) -> str:
    """The --out file: both sides' Compiled records and the change, per implementation and case."""
    record: dict[str, Any] = {"perfbot_explain": JSON_VERSION, **dataclasses.asdict(explanation)}
    return json.dumps(record, indent=1, default=str) + "\n"
