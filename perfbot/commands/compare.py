"""Deciding and keeping: `perfbot compare`, `baseline update|show`, `export`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..deciding.thresholds import load_policy
from ..errors import EXIT_REGRESSION, BadInput
from ..files import check_output, write_atomic
from ..records import results as results_file
from ..records import store as baseline_store
from .context import check_outputs, emit, project_config, project_policy, store_dir
from .options import option, overwrite_option, project_option, store_option, thresholds_option


@click.command("compare")
@click.argument("files", nargs=-1, metavar="[BASELINE] CURRENT", type=click.Path(path_type=Path))
@click.option(
    "--store",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Compare CURRENT with the newest stored run of its GPU in this store, instead of a BASELINE file.",
)
@thresholds_option
@option(
    "--out-markdown",
    "markdown_path",
    old=["--markdown"],
    type=click.Path(path_type=Path),
    default=None,
    help="Write the PR comment (markdown) here.",
)
@option(
    "--out-json",
    "json_path",
    old=["--json"],
    type=click.Path(path_type=Path),
    default=None,
    help="Write every comparison as JSON here: the comparison file `perfbot comment --comparison` reads.",
)
@overwrite_option
@click.option("--force", is_flag=True, help="Compare runs from different GPU models anyway.")
@project_option
def compare_command(
    files: tuple[Path, ...],
    store: Path | None,
    thresholds_path: Path | None,
    markdown_path: Path | None,
    json_path: Path | None,
    overwrite: bool,
    force: bool,
    project: Path | None,
) -> None:
    """Compare two results files and decide, per benchmark, whether it got slower.

    Exits 1 on a significant slowdown beyond the policy's fail threshold, if CURRENT holds a
    wrong result, or if CURRENT lacks a benchmark that BASELINE's results have under test (the
    baseline judges). The report also goes to $GITHUB_STEP_SUMMARY when that is set.

    Example:

        perfbot compare base.json head.json --out-markdown comment.md
    """
    if store is not None and len(files) != 1:
        raise click.UsageError("with --store, give only CURRENT (the baseline comes from the store)")
    if store is None and len(files) != 2:
        raise click.UsageError("give BASELINE and CURRENT, or --store DIR and CURRENT")
    check_outputs(overwrite, **{"out-markdown": markdown_path, "out-json": json_path})
    current = results_file.load(files[-1])
    if store is not None:
        gpu = current.environment.gpu_name
        if not isinstance(gpu, str):
            raise BadInput(f"{files[-1]}: names no GPU (environment.gpu_name), so it has no stored baseline")
        baseline_path, baseline = baseline_store.latest(store, gpu)
        click.echo(f"baseline: {baseline_path}", err=True)
    else:
        baseline = results_file.load(files[0])
    # --thresholds needs no project; without it, the project's policy (or perfbot's defaults).
    policy = (
        load_policy(thresholds_path) if thresholds_path is not None else project_policy(project_config(project), None)
    )
    from ..deciding.compare import compare  # numpy and the statistics: for this command only

    report = compare(baseline, current, policy, force=force)
    emit(report, markdown_path, json_path, overwrite=overwrite)
    for item in report.added:
        click.echo(f"added (no baseline): {item.kernel} {item.shape} {item.dtype}")
    for item in report.removed:
        click.echo(f"removed (baseline only): {item.kernel} {item.shape} {item.dtype}")
    if report.fails:
        raise click.exceptions.Exit(EXIT_REGRESSION)


@click.group("baseline")
def baseline_group() -> None:
    """Manage the baseline store: one folder per GPU model, every stored run kept as history.

    Example:

        perfbot baseline update results.json && perfbot baseline show
    """


@baseline_group.command("update")
@click.argument("results_path", metavar="RESULTS", type=click.Path(path_type=Path))
@store_option
@project_option
def baseline_update_command(results_path: Path, store: Path | None, project: Path | None) -> None:
    """Store a results file as the newest baseline of its GPU (older ones stay as history).

    Example:

        perfbot baseline update results.json --store .perfbot/store
    """
    loaded = results_file.load(results_path)
    if loaded.failures:
        raise BadInput(f"{results_path}: holds {len(loaded.failures)} wrong result(s); a failing run is no baseline")
    added = baseline_store.add(store_dir(store, project, writes=True), loaded)
    if added.leftovers_removed:
        click.echo(f"removed {added.leftovers_removed} partial file(s) left by interrupted updates", err=True)
    click.echo(f"stored {added.path}")


@baseline_group.command("show")
@option(
    "--gpu-model",
    "gpu",
    old=["--gpu"],
    default=None,
    metavar="NAME",
    help="Only this GPU model (as in environment.gpu_name, e.g. 'NVIDIA H200').",
)
@store_option
@project_option
def baseline_show_command(gpu: str | None, store: Path | None, project: Path | None) -> None:
    """List the stored runs per GPU in the order they were stored; the last of each GPU is its
    baseline. A run's own date (created) is shown beside, and does not decide the order.

    Example:

        perfbot baseline show --gpu-model "NVIDIA H200"
    """
    directory = store_dir(store, project)
    entries = baseline_store.history(directory, gpu)
    partial = baseline_store.leftovers(directory)
    if partial:
        click.echo(
            f"{len(partial)} partial file(s) left by an interrupted update (or one under way); "
            "the next `perfbot baseline update` removes those inside the store",
            err=True,
        )
    if not entries:
        click.echo(f"{directory}: no stored runs" + (f" for {gpu!r}" if gpu else ""))
        return
    newest = {e.path.parent: e.path for e in entries}
    click.echo(f"{'gpu':<20} {'stored (UTC)':<24} {'created':<26} {'runs':>4}")
    for entry in entries:
        mark = "baseline" if newest[entry.path.parent] == entry.path else "history"
        click.echo(
            f"{entry.gpu:<20} {entry.stored:<24} {entry.created:<26} {entry.benchmarks:>4} benchmarks  "
            f"{mark:<8}  {entry.path}"
        )


@click.command("export")
@click.argument("results_path", metavar="RESULTS", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "export_format",
    type=click.Choice(["pytest-benchmark"]),
    default="pytest-benchmark",
    show_default=True,
    help="Target format.",
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="File to write.")
@overwrite_option
def export_command(results_path: Path, export_format: str, out: Path, overwrite: bool) -> None:
    """Write a results file in another tool's format, for dashboards that ingest it.

    Example:

        perfbot export results.json --out results.pytest-benchmark.json
    """
    check_output(out, overwrite=overwrite)
    loaded = results_file.load(results_path)
    from ..records.export import to_pytest_benchmark

    write_atomic(out, json.dumps(to_pytest_benchmark(loaded), indent=1) + "\n", replace=overwrite)
    click.echo(f"wrote {out} ({export_format})")
