"""Trusting the measurements: `perfbot selftest`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..files import write_atomic
from ..thresholds import load_policy
from .context import console, load_kernels, progress, project_config, project_option


@click.command("selftest")
@click.option("--suite", "suite_name", default="pr", show_default=True, help="Suite of the benchmark to use.")
@click.option("--case", "case_name", default="t5-v1.1-xl", show_default=True, help="Case of the benchmark.")
@click.option("--kernel", default="fused", show_default=True, help="Implementation to time.")
@click.option(
    "--rounds",
    type=click.IntRange(min=5),
    default=100,
    show_default=True,
    help="Comparisons per row (A/A, and A/B at each level).",
)
@click.option(
    "--samples",
    type=click.IntRange(min=10),
    default=30,
    show_default=True,
    help="Samples per side and round; 30 is what `perfbot run` (and so the pull-request check) takes.",
)
@click.option(
    "--levels", default="0.5,1,2,5", show_default=True, help="Injected slowdowns in percent, comma-separated."
)
@click.option(
    "--thresholds",
    "thresholds_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Regression policy. Default: thresholds.yaml at the project root.",
)
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Also write the table as JSON here."
)
@click.option(
    "--keep-samples", is_flag=True, help="With --out: also write every sample of every round (ms), for a closer look."
)
@project_option
def selftest_command(
    suite_name: str,
    case_name: str,
    kernel: str,
    rounds: int,
    samples: int,
    levels: str,
    thresholds_path: Path | None,
    out: Path | None,
    keep_samples: bool,
    project: Path | None,
) -> None:
    """Measure this runner's false-alarm rate (A/A) and the smallest slowdown it detects (A/B
    with a calibrated sleep injected after the kernel), under the rule in force.

    Example:

        perfbot selftest --rounds 100 --out selftest.json
    """
    from rich.table import Table

    from .. import selftest
    from ..runner import DEVICE, make_inputs, require_gpu

    try:
        parsed = tuple(float(v) for v in levels.split(","))
    except ValueError:
        raise click.BadParameter(
            f"must be numbers separated by commas, got {levels!r}", param_hint="--levels"
        ) from None
    if not parsed or any(not 0 < v < 100 for v in parsed):
        raise click.BadParameter("every level must be a percentage between 0 and 100", param_hint="--levels")
    config = project_config(project)
    policy = load_policy(thresholds_path or config.root / "thresholds.yaml")
    subject = load_kernels(config, None)
    if suite_name not in subject.suites or not any(c.name == case_name for c in subject.suites[suite_name].cases):
        raise click.BadParameter(f"no case {case_name!r} in suite {suite_name!r}", param_hint="--case")
    if keep_samples and out is None:
        raise click.UsageError("--keep-samples writes into --out; pass --out FILE too")
    if kernel not in subject.implementations:
        raise click.BadParameter(f"unknown kernel {kernel!r}", param_hint="--kernel")
    require_gpu()
    import torch

    case = next(c for c in subject.suites[suite_name].cases if c.name == case_name)
    x, weight = make_inputs(case, torch.Generator(device=DEVICE).manual_seed(0))
    fn = subject.implementations[kernel].build("none")
    with progress() as bar:
        task = bar.add_task("selftest rounds", total=rounds)
        collected = selftest.measure_rounds(
            lambda: fn(x, weight), parsed, rounds, samples, on_round=lambda: bar.update(task, advance=1)
        )
    result = selftest.tally(collected, parsed, policy)
    table = Table(
        title=f"perfbot selftest: {kernel} on {suite_name}/{case_name} ({result.kernel_ms:.4f} ms), "
        f"{samples}+{samples} samples, {rounds} rounds; {result.rule}",
        title_justify="left",
    )
    for column in (
        "comparison",
        "injected (nominal)",
        "injected (measured)",
        "flagged, one round",
        "flagged and confirmed (pairs)",
    ):
        table.add_column(column, justify="left" if column == "comparison" else "right")
    rows = [("A/A (false alarms)", "0%", "", result.false_alarms)]
    rows += [
        (
            f"A/B +{level.nominal_percent:g}%",
            f"{level.nominal_percent:g}%",
            f"{level.measured_percent:.2f}%",
            level.detections,
        )
        for level in result.levels
    ]
    for name, nominal, measured, flags in rows:
        confirmed = f"{flags.confirmed}/{flags.pairs} ({flags.confirmed / flags.pairs:.1%})" if flags.pairs else "-"
        table.add_row(
            name, nominal, measured, f"{flags.flagged}/{flags.rounds} ({flags.flagged / flags.rounds:.1%})", confirmed
        )
    console().print(table)
    strayed = [level for level in result.levels if not level.as_asked]
    if strayed:
        listed = ", ".join(f"{level.nominal_percent:g}% (measured {level.measured_percent:.2f}%)" for level in strayed)
        console().print(
            f"note: the injection missed {listed}: read those rows by their measured column "
            f"(on a short kernel the sleep kernel's own cost sets a floor)"
        )
    if out is not None:
        record = {**result.to_json(), **({"rounds_ms": collected} if keep_samples else {})}
        write_atomic(out, json.dumps(record, indent=1) + "\n")
