"""Measuring: `perfbot run`, `sample`, `show`, `env`, `suites`."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from ..errors import EXIT_REGRESSION, BadInput, EnvironmentFailure, WrongResult
from ..files import check_output
from ..output.run_tables import case_markdown, failures_table, run_markdown, run_table
from ..records import results as results_file
from .context import console, named_options, progress, project_config, warn_of_triton_pin
from .options import (
    Measuring,
    json_option,
    measure_options,
    one_benchmark_options,
    one_samples_option,
    one_variant_option,
    overwrite_option,
    package_option,
    project_option,
)


@click.command("run")
@measure_options
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the results file (JSON, every sample) here.",
)
@overwrite_option
@package_option
@project_option
def run_command(
    measuring: Measuring, out: Path | None, overwrite: bool, package: Path | None, project: Path | None
) -> None:
    """Check and time the kernels on a shape suite, and print a table.

    Every implementation is first checked against a float64 reference; a wrong one is reported
    as a failure and never timed. Exits 1 if any implementation failed. On a host with several
    GPUs of one model the cases are shared out across them (--gpus), and the results file says
    which GPU measured each benchmark. To measure two revisions against each other,
    interleaved, use `perfbot ab`.

    Example:

    \b
        perfbot run --out results.json               # the pr suite
        perfbot run --suite NAME --case CASE --kernel NAME --variant NAME=all --samples 100
        perfbot run --suite a100 --suite models --gpus 2 --out all.json
    """
    from ..jobs.run import measure_package
    from ..measuring.triton_pin import with_pin

    config = project_config(project)
    kernels = package if package is not None else config.kernels_dir
    if out is not None:  # checked again by save(); refused before measuring
        check_output(out, overwrite=overwrite)
    with named_options(), ExitStack() as shown:

        def started(total: int) -> Callable[[str, int], None]:
            # Shown once the suites are chosen: a refusal before that is one line, with no bar above.
            bar = shown.enter_context(progress())
            task = bar.add_task("starting", total=total)
            return lambda label, steps: bar.update(task, advance=steps, description=label)

        result = measure_package(kernels, measuring.names(), measuring.gpus(), started)
    result = replace(result, environment=with_pin(result.environment, config.triton_commit))
    warn_of_triton_pin(config.triton_commit, result.environment)
    if out is not None:
        results_file.save(result, out, overwrite=overwrite)
    terminal = console()
    terminal.print(run_table(result))
    if result.failures:
        terminal.print(failures_table(result))
        raise click.exceptions.Exit(EXIT_REGRESSION)
    if out is not None:
        terminal.print(f"results written to {escape(str(out))}")


@click.command("show")
@click.argument("results_path", metavar="RESULTS", type=click.Path(path_type=Path))
@click.option(
    "--markdown",
    is_flag=True,
    help="Print a markdown table instead (failures are listed after it); every name from the file is escaped.",
)
@click.option(
    "--by-case",
    "by_case",
    metavar="KERNEL",
    default=None,
    help="Markdown, one row per case: KERNEL's median ms next to every other implementation's, "
    "and its speed relative to each.",
)
def show_command(results_path: Path, markdown: bool, by_case: str | None) -> None:
    """Print the table of a stored results file, as `perfbot run` printed it.

    Example:

        perfbot show results.json --markdown
    """
    loaded = results_file.load(results_path)
    if by_case is not None:
        click.echo(case_markdown(loaded, by_case), nl=False)
        return
    if markdown:
        click.echo(run_markdown(loaded), nl=False)
        return
    terminal = console()
    terminal.print(run_table(loaded))
    if loaded.failures:
        terminal.print(failures_table(loaded))


@click.command("env")
@json_option
@project_option
def env_command(as_json: bool, project: Path | None) -> None:
    """Print where a run would be measured: versions, GPU, driver, clocks, and whether the Triton
    is the one the project pins ([tool.perfbot] triton-commit; outside a project, not checked).
    Works without a GPU.

    Example:

        perfbot env --json
    """
    from ..measuring.environment import collect_environment, found_triton_commit
    from ..measuring.triton_pin import with_pin

    environment = collect_environment()
    try:
        environment = with_pin(environment, project_config(project).triton_commit)
    except BadInput:
        if project is not None:  # asked for: its error stands
            raise
    record = asdict(environment)
    if as_json:
        click.echo(json.dumps(record, indent=1))
        return
    found = found_triton_commit()
    record["triton_commit_from"] = found.source if found else "unknown: not in the version, nor PERFBOT_TRITON_COMMIT"
    state = record.pop("gpu_state")["after"]
    for key in (
        "host",
        "python",
        "perfbot",
        "torch",
        "cuda",
        "triton",
        "triton_commit",
        "triton_commit_from",
        "triton_pin",
        "triton_pin_matches",
        "triton_path",
        "gpu_name",
        "gpu_sm_count",
        "gpu_memory_bytes",
        "gpu_l2_bytes",
        "driver",
        "nvml_error",
    ):
        click.echo(f"{key:<20}{'' if record[key] is None else record[key]}")
    for key, value in (state or {}).items():
        click.echo(f"gpu.{key:<16}{value}")


@click.command("suites")
@project_option
@json_option
def suites_command(project: Path | None, as_json: bool) -> None:
    """List the shape suites and their cases.

    With --json, one line of JSON: each suite's implementations and case names, and the modes of
    each case timed in another than the forward, what the baseline workflow's issue job opens
    issues for (docs/files.md).

    Example:

        perfbot suites

        perfbot suites --json
    """
    from ..measuring import subject_process

    # The subject's code runs in a process of its own (subject_process.py): it says what it declares.
    answer = subject_process.ask("suites", {"package": str(project_config(project).kernels_dir)})
    try:
        if as_json:
            from ..records import declared

            every = [s for family in answer["families"] for s in family["suites"]]
            suites = [
                (s["name"], list(s["implementations"]), list(dict.fromkeys(c["name"] for c in s["cases"])))
                for s in every
            ]
            modes: dict[str, dict[str, list[str]]] = {}
            for s in every:
                for case in s["cases"]:
                    modes.setdefault(s["name"], {}).setdefault(case["name"], []).append(case.get("mode", "forward"))
            click.echo(declared.to_text(suites, modes))
            return
        for family in answer["families"]:
            implementations = ", ".join(
                f"{i['name']}{' (under test)' if i['under_test'] else ''}" for i in family["implementations"]
            )
            lead = f"family {family['family']}" if family["family"] else f"subject {family['subject']}"
            click.echo(f"{lead}: {implementations}")
            for suite in family["suites"]:
                click.echo(f"{suite['name']}: {suite['about']}  [{', '.join(suite['implementations'])}]")
                for case in suite["cases"]:
                    params = " ".join(f"{k}={v}" for k, v in case["params"].items())
                    mode = f"  {case['mode']}" if case.get("mode", "forward") != "forward" else ""
                    click.echo(f"  {case['name']:<18} {params}  {case['dtype']}{mode}")
    except (KeyError, TypeError, AttributeError) as error:
        raise EnvironmentFailure(f"the subject's process answered suites that do not read: {error!r}") from None


@click.command("sample")
@one_benchmark_options
@one_variant_option
@one_samples_option
@package_option
@project_option
def sample_command(
    family: str | None,
    suite_name: str | None,
    case_name: str | None,
    mode: str | None,
    kernel: str | None,
    variants: tuple[str, ...],
    samples: int,
    package: Path | None,
    project: Path | None,
) -> None:
    """Check one benchmark, time it, and print its samples in ms, one per line (for bisect).

    Exits 1 if the kernel gives a wrong result, 2 if its code ends or steers the worker process
    that measures it, 3 without a CUDA GPU.

    Example:

    \b
        perfbot sample --suite pr --case CASE --kernel NAME --variant NAME=VALUE
        perfbot sample --suite pr --case CASE --mode backward     # its gradients alone
        perfbot sample --family rmsnorm --suite pr --kernel triton   # rmsnorm/pr, rmsnorm/triton
    """
    from ..jobs.bisect_probers import hand_back
    from ..measuring.recording import Measurement
    from ..measuring.runner import measure_sides
    from ..measuring.worker_sides import WorkerSides, chosen_in, workers

    config = project_config(project)
    kernels = package if package is not None else config.kernels_dir
    one: dict[str, Any] = {"family": family, "suite": suite_name, "case": case_name, "kernel": kernel, "mode": mode}
    one |= {"variants": variants, "samples": samples}
    with workers({"": (kernels, None, None)}, fork=True) as started, named_options():
        chosen = chosen_in(started[""], one)
        measurement = Measurement(chosen.suites, chosen.settings)
        result = measure_sides(WorkerSides(started, chosen.settings), measurement)[""]
    warn_of_triton_pin(config.triton_commit, result.environment)
    for failure in result.failures:
        raise WrongResult(f"{failure.kernel} on {failure.case}: {failure.reason}")
    hand_back(result.benchmarks[0].compiled, result.benchmarks[0].autotune)  # to the bisect that runs this
    for value in result.benchmarks[0].samples_ms:
        click.echo(f"{value:.6f}")
