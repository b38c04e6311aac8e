"""Trusting the measurements: `perfbot selftest`."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import EXIT_REGRESSION, EnvironmentFailure
from ..files import check_output, write_atomic
from ..output.selftest import SelftestAsked, exploits_report, interference_report, picks_line, selftest_report
from ..records.run import variant_name
from .context import (
    chosen_gpus,
    console,
    named_options,
    progress,
    project_config,
    project_policy,
    told_progress,
    warn_of_triton_pin,
)
from .options import (
    FiniteRange,
    gpu_options,
    max_samples_option,
    one_benchmark_options,
    overwrite_option,
    project_option,
    samples_option,
    skip_kernel_option,
    thresholds_option,
)

if TYPE_CHECKING:
    from ..measuring.interference import Interference  # imports torch: only when measuring


@click.command("selftest")
@one_benchmark_options
@click.option(
    "--checks",
    type=click.IntRange(min=4, max=100_000),
    default=100,
    show_default=True,
    help="Sequential A/B checks per row (A/A, and A/B at each level), each one as `perfbot ab` takes it.",
)
@samples_option
@max_samples_option
@click.option(
    "--levels", default="0.5,1,2,5", show_default=True, help="Injected slowdowns in percent, comma-separated."
)
@thresholds_option
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Also write the table as JSON here."
)
@overwrite_option
@click.option(
    "--keep-samples", is_flag=True, help="With --out: also write every sample of every round (ms), for a closer look."
)
@click.option(
    "--interference-rounds",
    type=click.IntRange(min=0, max=100_000),
    default=1600,
    show_default=True,
    help="Rounds of the interference check (0: none): the benchmark slowed on one side of an A/A of its case "
    "and the cases either side of it, every other benchmark's ratio reported as cross-talk. How wide "
    'its intervals get for a number of rounds: docs/method.md, "Cross-talk and side bias, measured".',
)
@click.option(
    "--interference-percent",
    type=FiniteRange(min=0, min_open=True, max=100),
    default=10.0,
    show_default=True,
    help="How much the interference check slows the benchmark.",
)
@skip_kernel_option
@click.option(
    "--exploits",
    is_flag=True,
    help="Instead: run the red-team suite, cheating implementations (a result kept across calls, a patched "
    "timer, os._exit, ...) each in a project of its own as `perfbot run` runs it, and report whether perfbot "
    "caught each one. Needs no project. Exits 1 if one was not caught.",
)
@gpu_options
@project_option
def selftest_command(
    family: str | None,
    suite_name: str | None,
    case_name: str | None,
    mode: str | None,
    kernel: str | None,
    checks: int,
    samples: int,
    max_samples: int,
    levels: str,
    thresholds_path: Path | None,
    out: Path | None,
    overwrite: bool,
    keep_samples: bool,
    interference_rounds: int,
    interference_percent: float,
    skipped_kernels: tuple[str, ...],
    exploits: bool,
    gpu_count: int | None,
    mixed_gpus: bool,
    project: Path | None,
) -> None:
    """Measure this runner's false-alarm rate (A/A) and the smallest slowdown it detects (A/B:
    the kernel followed by a calibrated sleep against the kernel followed by the shortest one),
    under the rule in force: each check is a sequential A/B as the pull-request check takes it,
    and pairs of checks show what confirmation (a second A/B of a failing case) leaves.

    Before the checks, each GPU calibrates the sleep until every level is placed within a tenth
    of itself: up to about 8,000 rounds on a noisy short kernel, outside --max-samples.

    Then the interference check: the benchmark slowed by --interference-percent on one side of
    an A/A of its case and the cases either side of it in its suite, every implementation timed
    as `perfbot ab` times them; every other benchmark's ratio is cross-talk, the largest of them
    reported (a verdict must depend only on the code it judges).

    With --exploits, the red-team suite instead (docs/method.md, "The red-team selftest"):
    each cheating implementation beside an honest kernel, judged as a pull request's would be.

    Example:

    \b
        perfbot selftest --checks 100 --out selftest.json
        perfbot selftest --exploits --out exploits.json
    """
    if exploits:
        red_team(samples, out, overwrite, chosen_gpus(gpu_count, mixed_gpus))
        return
    from ..measuring import selftest, subject_process
    from ..measuring.interference import Interference

    try:
        parsed = tuple(float(v) for v in levels.split(","))
    except ValueError:
        raise click.BadParameter(
            f"must be numbers separated by commas, got {levels!r}", param_hint="--levels"
        ) from None
    if not parsed or any(not 0 < v < 100 for v in parsed):
        raise click.BadParameter("every level must be a percentage between 0 and 100", param_hint="--levels")
    if len({selftest.slowed(v) for v in parsed}) < len(parsed):
        raise click.BadParameter(f"a level is given twice: {levels}", param_hint="--levels")
    if out is not None:  # refused before hours of measuring, not after
        check_output(out, overwrite=overwrite)
    config = project_config(project)
    policy = project_policy(config, thresholds_path)
    warn_of_triton_pin(config.triton_commit)
    if max_samples < samples:
        raise click.BadParameter(f"must be at least --samples ({samples})", param_hint="--max-samples")
    if keep_samples and out is None:
        raise click.UsageError("--keep-samples writes into --out; pass --out FILE too")
    gpus = chosen_gpus(gpu_count, mixed_gpus)
    # The subject's code runs in a process of its own (subject_jobs.selftest_job); this one tallies.
    request = {
        "package": str(config.kernels_dir),
        "benchmark": {
            "family": family,
            "suite_name": suite_name,
            "case_name": case_name,
            "kernel": kernel,
            "mode": mode,
        },
        "skipped": list(skipped_kernels),
        "levels": list(parsed),
        "checks": checks,
        "samples": samples,
        "max_samples": max_samples,
        "thresholds": _policy_file(config, thresholds_path),
        "interference_percent": interference_percent,
        "interference_rounds": interference_rounds,
        "gpus": [dataclasses.asdict(gpu) for gpu in gpus],
    }
    with told_progress() as told, named_options():
        answer = subject_process.ask("selftest", request, told)
    try:
        collected = _checks().validate_python(answer["checks"])
        kernel, suite, case = str(answer["kernel"]), str(answer["suite"]), str(answer["case"])
        kernel = variant_name(kernel, {}, str(answer.get("mode", "forward")))  # as results name it
    except (KeyError, ValueError) as error:  # pydantic's ValidationError is a ValueError
        raise EnvironmentFailure(f"the selftest's process answered checks that do not read: {error}") from None
    crossed = Interference.from_json(answer["interference"]) if answer.get("interference") is not None else None
    picks = selftest.Picks.from_json(answer["picks"]) if answer.get("picks") is not None else None
    result = selftest.tally(collected, parsed, policy)
    checked = SelftestAsked(kernel, suite, case, checks, samples, max_samples, len(gpus))
    for part in selftest_report(result, checked):
        console().print(part)
    if picks is not None:
        console().print(picks_line(picks))
    if crossed is not None:
        print_interference(crossed, selftest.selftest_rule(policy, result.kernel_ms).warn_percent)
    if out is not None:
        record = {
            **result.to_json(),
            "interference": crossed.to_json() if crossed is not None else None,
            "autotune": picks.to_json() if picks is not None else None,
            **({"checks_ms": collected} if keep_samples else {}),
        }
        write_atomic(out, json.dumps(record, indent=1) + "\n", replace=overwrite)


def red_team(samples: int, out: Path | None, overwrite: bool, gpus: list[Any]) -> None:
    """`selftest --exploits`: the control's verdict, each exploit's, the catch rate; exit 1 if the
    control failed or an exploit slipped through."""
    from ..jobs.exploits import EXPLOITS
    from ..jobs.red_team import try_exploits
    from ..measuring.runner import gpu_device

    if out is not None:
        check_output(out, overwrite=overwrite)
    device = gpu_device("perfbot selftest --exploits")
    with progress() as bar:
        task = bar.add_task("exploits", total=len(EXPLOITS) + 1)  # and the control
        team = try_exploits(
            device, gpus, samples, lambda index, name: bar.update(task, completed=index, description=name), EXPLOITS
        )
        bar.update(task, completed=len(EXPLOITS) + 1)
    control, rows = team.control.to_json(), [verdict.to_json() for verdict in team.verdicts]
    for part in exploits_report(control, rows):
        console().print(part)
    if out is not None:
        record = {
            "control": control,
            "exploits": rows,
            "caught": sum(v.caught for v in team.verdicts),
            "run": sum(v.exit_code is not None for v in team.verdicts),
        }
        write_atomic(out, json.dumps(record, indent=1) + "\n", replace=overwrite)
    if not team.passed:
        raise click.exceptions.Exit(EXIT_REGRESSION)


def print_interference(crossed: Interference, warn_percent: float) -> None:
    """The interference check's table and its summary line (output/selftest.py)."""
    for part in interference_report(crossed, warn_percent):
        console().print(part)


def _policy_file(config: Any, thresholds_path: Path | None) -> str | None:
    """The thresholds file project_policy read, for the subject's process to read too; None:
    perfbot's defaults."""
    if thresholds_path is not None:
        return str(thresholds_path)
    own = config.root / "thresholds.yaml"
    return str(own) if os.path.lexists(own) else None


@functools.cache
def _checks() -> Any:
    """The checks' samples as the subject's process answers them: one {name: [ms, ...]} per check."""
    from pydantic import TypeAdapter

    return TypeAdapter(list[dict[str, list[float]]])
