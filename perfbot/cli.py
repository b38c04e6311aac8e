"""The `perfbot` command: a click group of thin commands. Only here do errors become exit codes."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from typing import TYPE_CHECKING

from . import results as results_file
from . import store as baseline_store
from . import triton_build
from .compare import compare
from .config import ProjectConfig, find_project_root, load_project_config
from .errors import EXIT_REGRESSION, BadInput, EnvironmentFailure, PerfbotError, WrongResult
from .export import to_pytest_benchmark
from .report import (
    GITHUB_COMMENT_LIMIT,
    bisect_markdown,
    bisect_table,
    case_markdown,
    comment_markdown,
    compare_table,
    comparison_json,
    failures_table,
    run_markdown,
    run_table,
)
from .thresholds import load_policy

if TYPE_CHECKING:
    from .subject import Subject

# Commands that measure import torch (through runner, subject, environment) when they run, not
# at start-up: the comment job and `perfbot compare` work on machines without it. Likewise
# github3 is imported by `perfbot comment` alone (the GPU machines may lack it).

_project_option = click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="perfbot checkout whose pyproject.toml, kernels/ and suites to use. Default: the nearest above the current directory.",
)


def _project(project: Path | None) -> ProjectConfig:
    return load_project_config(project if project is not None else find_project_root(Path.cwd()))


def _subject(config: ProjectConfig, kernels: Path | None) -> Subject:
    from .subject import load_subject

    return load_subject(kernels if kernels is not None else config.kernels_dir)


class _PerfbotGroup(click.Group):
    """Turns a PerfbotError from any command into its one-line message and exit code."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except PerfbotError as error:
            click.echo(f"perfbot: error: {error}", err=True)
            ctx.exit(error.exit_code)


def _console() -> Console:
    # Tables are wide; when stdout is a file or a CI log, don't wrap them at 80 columns.
    console = Console()
    return console if console.is_terminal else Console(width=200)


@click.group(cls=_PerfbotGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="perfbot")
def perfbot() -> None:
    """Performance-regression bot for the fused GeGLU Triton kernel.

    Exit codes: 0 fine; 1 a significant slowdown or a wrong result; 2 bad input;
    3 the environment failed (no CUDA GPU, a tool missing, GitHub unreachable).
    """


@perfbot.command("run")
@click.option("--suite", "suite_names", multiple=True, default=["pr"], show_default=True,
              help="Shape suite to run (repeat for several). `perfbot suites` lists them.")
@click.option("--kernel", "kernel_names", multiple=True,
              help="Only these implementations (repeat for several). Default: each suite's list.")
@click.option("--approximate", "approximations", multiple=True, type=click.Choice(["none", "tanh"]),
              default=["none"], show_default=True,
              help="GELU variant: none (erf) or tanh; repeat to measure both.")
@click.option("--samples", type=click.IntRange(min=10), default=30, show_default=True,
              help="Timed samples per benchmark, each one CUDA-graph replay after an L2 flush.")
@click.option("--warmup", type=click.IntRange(min=1), default=3, show_default=True,
              help="Untimed calls per implementation before capture (compiles and autotunes).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the results file (JSON, every sample) here.")
@click.option("--overwrite", is_flag=True, help="Replace --out if it exists; without it an existing file is kept.")
@click.option("--kernels", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="kernels/ package to measure instead of the project's.")
@click.option("--against", default=None, metavar="REV",
              help="A/B: also measure the kernels of git revision REV, interleaved with these, and compare.")
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("perfbot-ab"), show_default=True,
              help="With --against: where base.json, head.json, comparison.json and comment.md go.")
@click.option("--thresholds", "thresholds_path", type=click.Path(path_type=Path), default=None,
              help="With --against: regression policy. Default: thresholds.yaml at the project root.")
@click.option("--trend-store", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="With --against: also compare with the newest stored run of this GPU here, as one line of trend (never fails).")
@_project_option
def run_command(
    suite_names: tuple[str, ...],
    kernel_names: tuple[str, ...],
    approximations: tuple[str, ...],
    samples: int,
    warmup: int,
    seed: int,
    out: Path | None,
    overwrite: bool,
    kernels: Path | None,
    against: str | None,
    out_dir: Path,
    thresholds_path: Path | None,
    trend_store: Path | None,
    project: Path | None,
) -> None:
    """Check and time the kernels on a shape suite, and print a table.

    Every implementation is first checked against a float64 reference; a wrong one is reported
    as a failure and never timed. Exits 1 if any implementation failed. With --against REV the
    kernels of REV are measured too, interleaved sample by sample, and judged as `perfbot
    compare` does (interleaved thresholds); a failing slowdown is measured again in a second
    interleaved round and fails (exit 1) only if it holds.

    Example:

        perfbot run --suite models --suite decode --out results.json
        perfbot run --suite pr --against origin/main --out-dir ab
    """
    from .runner import RunSettings, plan, progress_steps, run

    config = _project(project)
    subject = _subject(config, kernels)
    unknown = [name for name in suite_names if name not in subject.suites]
    if unknown:
        raise click.BadParameter(f"unknown suite {unknown[0]!r}; known: {', '.join(subject.suites)}", param_hint="--suite")
    if out is not None and out.exists() and not overwrite:  # checked again by save(); fail before measuring
        raise click.BadParameter(f"{out} already exists; choose another name or pass --overwrite", param_hint="--out")
    settings = RunSettings(samples=samples, warmup_calls=warmup, seed=seed,
                           approximations=tuple(dict.fromkeys(approximations)), kernels=kernel_names)
    suites = [subject.suites[name] for name in dict.fromkeys(suite_names)]
    if against is not None:
        policy = load_policy(thresholds_path or config.root / "thresholds.yaml")
        _run_against(config, kernels or config.kernels_dir, subject, suites, settings, against, out_dir, overwrite,
                     policy, trend_store)
        return
    total = progress_steps(plan(subject, suites, settings), settings)
    console = _console()
    with _progress() as progress:
        task = progress.add_task("starting", total=total)
        result = run(subject, suites, settings,
                     on_progress=lambda label, steps: progress.update(task, advance=steps, description=label))
    if out is not None:
        results_file.save(result, out, overwrite=overwrite)
    console.print(run_table(result))
    if result.failures:
        console.print(failures_table(result))
        sys.exit(EXIT_REGRESSION)
    if out is not None:
        console.print(f"results written to {out}")


def _progress() -> Progress:
    return Progress(TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=True)


def _run_against(config: ProjectConfig, kernels_dir: Path, head: Subject, suites: list, settings: object, rev: str,
                 out_dir: Path, overwrite: bool, policy: object, trend_store: Path | None) -> None:
    from .ab import checkout, judge, new_run_id, restrict
    from .runner import plan, progress_steps, run_sides
    from .subject import load_subject

    names = ("base.json", "head.json", "comparison.json", "comment.md")
    if out_dir.exists() and not out_dir.is_dir():
        raise BadInput(f"--out-dir {out_dir}: is a file")
    existing = [n for n in names if (out_dir / n).exists()]
    if existing and not overwrite:
        raise BadInput(f"{out_dir / existing[0]} already exists; choose another --out-dir or pass --overwrite")
    try:
        relative = kernels_dir.resolve().relative_to(config.root.resolve())
    except ValueError:
        raise BadInput(f"--against needs the kernels inside the project ({config.root}), got {kernels_dir}") from None
    with checkout(config.root, rev) as (tree, sha):
        base = load_subject(tree / relative)
        run_id = new_run_id()

        def measure_sides(chosen: list, tag: str) -> tuple:
            total = progress_steps(plan(head, chosen, settings), settings)
            with _progress() as progress:
                task = progress.add_task("starting", total=total)
                sides = run_sides({"base": base, "head": head}, chosen, settings,
                                  lambda label, steps: progress.update(task, advance=steps, description=label),
                                  extra_settings={"ab_run": run_id + tag, "against": sha})
            return sides["base"], sides["head"]

        base_results, head_results = measure_sides(suites, "")
        for name, loaded in (("base.json", base_results), ("head.json", head_results)):
            results_file.save(loaded, out_dir / name, overwrite=overwrite)
        report = judge(base_results, head_results, policy,
                       lambda cases: measure_sides(restrict(suites, cases), "-confirm"))
    if trend_store is not None:
        report = dataclasses.replace(report, trend=_trend(trend_store, head_results, policy))
    _emit(report, out_dir / "comment.md", out_dir / "comparison.json")
    if report.fails:
        sys.exit(EXIT_REGRESSION)


def _trend(store: Path, head: object, policy: object) -> str:
    """One line: the head run against the newest stored baseline of its GPU. Never fails."""
    gpu = head.environment.get("gpu_name")
    try:
        path, stored = baseline_store.latest(store, str(gpu))
        report = compare(stored, head, policy)
    except PerfbotError as error:
        return f"no comparison with a stored baseline: {error}"
    slower = [c for c in report.comparisons if c.verdict == "regression"]
    return (f"against the stored baseline of {stored.created or path.name}: geometric mean ratio "
            f"{report.geomean_ratio:.3f}, {len(slower)} significant slowdown(s) across runs "
            f"(cross-run thresholds; informational)")


def _emit(report: object, markdown_path: Path | None, json_path: Path | None) -> None:
    """The terminal table, the PR comment and JSON files, and the job summary when on Actions."""
    _console().print(compare_table(report))
    comment = comment_markdown(report)
    if markdown_path is not None:
        _write_text(markdown_path, comment)
    if json_path is not None:
        _write_text(json_path, json.dumps(comparison_json(report), indent=1, allow_nan=False) + "\n")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a") as handle:
            handle.write(comment + "\n")


@perfbot.command("show")
@click.argument("results_path", metavar="RESULTS", type=click.Path(path_type=Path))
@click.option("--markdown", is_flag=True, help="Print a markdown table instead (failures are listed after it).")
@click.option("--by-case", "by_case", metavar="KERNEL", default=None,
              help="Markdown, one row per case: KERNEL's median ms next to every other implementation's, and its speed relative to each.")
def show_command(results_path: Path, markdown: bool, by_case: str | None) -> None:
    """Print the table of a stored results file, as `perfbot run` printed it.

    Example:

        perfbot show kernels/results/h200-2026-11-30.json --markdown
    """
    loaded = results_file.load(results_path)
    if by_case is not None:
        click.echo(case_markdown(loaded, by_case), nl=False)
        return
    if markdown:
        click.echo(run_markdown(loaded), nl=False)
        for failure in loaded.failures:
            click.echo(f"- FAILED {failure.suite}/{failure.case} {failure.kernel}: {failure.reason}")
        return
    console = _console()
    console.print(run_table(loaded))
    if loaded.failures:
        console.print(failures_table(loaded))


@perfbot.command("env")
@click.option("--json", "as_json", is_flag=True, help="Print the record as JSON.")
def env_command(as_json: bool) -> None:
    """Print where a run would be measured: versions, GPU, driver, clocks. Works without a GPU.

    Example:

        perfbot env --json
    """
    from .environment import collect_environment

    record = collect_environment().to_dict()
    if as_json:
        click.echo(json.dumps(record, indent=1))
        return
    state = record.pop("gpu_state")
    for key, value in record.items():
        click.echo(f"{key:<18}{'' if value is None else value}")
    for key, value in (state or {}).items():
        click.echo(f"gpu.{key:<14}{value}")


@perfbot.command("suites")
@_project_option
def suites_command(project: Path | None) -> None:
    """List the shape suites and their cases.

    Example:

        perfbot suites
    """
    subject = _subject(_project(project), None)
    for suite in subject.suites.values():
        click.echo(f"{suite.name}: {suite.about}  [kernels: {', '.join(suite.kernels)}]")
        for case in suite.cases:
            click.echo(f"  {case.name:<18} M={case.M:<6} K={case.K:<6} N={case.N:<6} {case.dtype}")


def _write_text(path: Path, text: str) -> None:
    """Write a derived report atomically (reports are regenerated, so replacing one is fine)."""
    if path.is_dir():
        raise BadInput(f"{path}: is a directory; give a file name")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _store_dir(store: Path | None, project: Path | None) -> Path:
    return store if store is not None else _project(project).store_dir


_store_option = click.option(
    "--store", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Baseline store directory. Default: [tool.perfbot] store of the project (.perfbot/store).",
)


@perfbot.command("compare")
@click.argument("files", nargs=-1, metavar="[BASELINE] CURRENT", type=click.Path(path_type=Path))
@click.option("--store", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Compare CURRENT with the newest stored run of its GPU in this store, instead of a BASELINE file.")
@click.option("--thresholds", "thresholds_path", type=click.Path(path_type=Path), default=None,
              help="Regression policy. Default: thresholds.yaml at the project root.")
@click.option("--markdown", "markdown_path", type=click.Path(path_type=Path), default=None,
              help="Write the PR comment (markdown) here.")
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None,
              help="Write every comparison as JSON here.")
@click.option("--force", is_flag=True, help="Compare runs from different GPU models anyway.")
@_project_option
def compare_command(
    files: tuple[Path, ...],
    store: Path | None,
    thresholds_path: Path | None,
    markdown_path: Path | None,
    json_path: Path | None,
    force: bool,
    project: Path | None,
) -> None:
    """Compare two results files and decide, per benchmark, whether it got slower.

    Exits 1 on a significant slowdown beyond the policy's fail threshold, or if CURRENT holds a
    wrong result. The report also goes to $GITHUB_STEP_SUMMARY when that is set.

    Example:

        perfbot compare base.json head.json --markdown comment.md
    """
    if store is not None and len(files) != 1:
        raise click.UsageError("with --store, give only CURRENT (the baseline comes from the store)")
    if store is None and len(files) != 2:
        raise click.UsageError("give BASELINE and CURRENT, or --store DIR and CURRENT")
    current = results_file.load(files[-1])
    if store is not None:
        gpu = current.environment.get("gpu_name")
        if not isinstance(gpu, str):
            raise BadInput(f"{files[-1]}: names no GPU (environment.gpu_name), so it has no stored baseline")
        baseline_path, baseline = baseline_store.latest(store, gpu)
        click.echo(f"baseline: {baseline_path}", err=True)
    else:
        baseline = results_file.load(files[0])
    policy_path = thresholds_path if thresholds_path is not None else _project(project).root / "thresholds.yaml"
    report = compare(baseline, current, load_policy(policy_path), force=force)
    _emit(report, markdown_path, json_path)
    for item in report.added:
        click.echo(f"added (no baseline): {item.kernel} {item.shape} {item.dtype}")
    for item in report.removed:
        click.echo(f"removed (baseline only): {item.kernel} {item.shape} {item.dtype}")
    if report.fails:
        sys.exit(EXIT_REGRESSION)


@perfbot.group("baseline")
def baseline_group() -> None:
    """Manage the baseline store: one folder per GPU model, every stored run kept as history.

    Example:

        perfbot baseline update results.json && perfbot baseline show
    """


@baseline_group.command("update")
@click.argument("results_path", metavar="RESULTS", type=click.Path(path_type=Path))
@_store_option
@_project_option
def baseline_update_command(results_path: Path, store: Path | None, project: Path | None) -> None:
    """Store a results file as the newest baseline of its GPU (older ones stay as history).

    Example:

        perfbot baseline update results.json --store .perfbot/store
    """
    loaded = results_file.load(results_path)
    if loaded.failures:
        raise BadInput(f"{results_path}: holds {len(loaded.failures)} wrong result(s); a failing run is no baseline")
    click.echo(f"stored {baseline_store.add(_store_dir(store, project), loaded)}")


@baseline_group.command("show")
@click.option("--gpu", default=None, help="Only this GPU model (as in environment.gpu_name, e.g. 'NVIDIA H200').")
@_store_option
@_project_option
def baseline_show_command(gpu: str | None, store: Path | None, project: Path | None) -> None:
    """List the stored runs per GPU, oldest first; the newest of each GPU is its baseline.

    Example:

        perfbot baseline show --gpu "NVIDIA H200"
    """
    directory = _store_dir(store, project)
    entries = baseline_store.history(directory, gpu)
    if not entries:
        click.echo(f"{directory}: no stored runs" + (f" for {gpu!r}" if gpu else ""))
        return
    newest = {e.gpu: e.path for e in entries}
    for entry in entries:
        mark = "baseline" if newest[entry.gpu] == entry.path else "history"
        click.echo(f"{entry.gpu:<20} {entry.created:<26} {entry.benchmarks:>4} benchmarks  {mark:<8}  {entry.path}")


@perfbot.command("export")
@click.argument("results_path", metavar="RESULTS", type=click.Path(path_type=Path))
@click.option("--format", "export_format", type=click.Choice(["pytest-benchmark"]), default="pytest-benchmark",
              show_default=True, help="Target format.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="File to write.")
@click.option("--overwrite", is_flag=True, help="Replace --out if it exists.")
def export_command(results_path: Path, export_format: str, out: Path, overwrite: bool) -> None:
    """Write a results file in another tool's format, for dashboards that ingest it.

    Example:

        perfbot export results.json --out results.pytest-benchmark.json
    """
    loaded = results_file.load(results_path)
    if out.exists() and not overwrite:
        raise BadInput(f"{out}: already exists; choose another name or pass --overwrite")
    _write_text(out, json.dumps(to_pytest_benchmark(loaded), indent=1) + "\n")
    click.echo(f"wrote {out} ({export_format})")


@perfbot.command("comment")
@click.option("--repo", required=True, help="Repository as OWNER/NAME.")
@click.option("--pr", type=click.IntRange(min=1), required=True, help="Pull request number.")
@click.option("--body-file", type=click.Path(path_type=Path), required=True,
              help="Markdown to post, e.g. the file `perfbot compare --markdown` wrote.")
@click.option("--author", default=None,
              help="Login whose marked comment may be edited. Default: any bot account (GITHUB_TOKEN posts as github-actions[bot]).")
@click.option("--status", "state", type=click.Choice(["success", "failure", "error", "pending"]), default=None,
              help="Also set a commit status with this state on --sha.")
@click.option("--sha", default=None, help="Commit for --status.")
@click.option("--context", default="perfbot", show_default=True, help="Name of the commit status.")
@click.option("--target-url", default=None, help="Link of the commit status, e.g. the workflow run.")
def comment_command(repo: str, pr: int, body_file: Path, author: str | None, state: str | None, sha: str | None,
                    context: str, target_url: str | None) -> None:
    """Post the report as the PR's one perfbot comment (edited in place on every push).

    Token from GITHUB_TOKEN, API root from GITHUB_API_URL. Transient failures are retried;
    exits 3 when GitHub stays unreachable. With --status the commit status is set even if the
    comment could not be posted, so the verdict stays visible.

    Example:

        perfbot comment --repo octo/perfbot --pr 7 --body-file comment.md --status failure --sha $SHA
    """
    if (state is None) != (sha is None):
        raise click.UsageError("--status and --sha go together")
    if sha is not None and not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise click.BadParameter(f"must be a full 40-hex-digit commit SHA, got {sha!r}", param_hint="--sha")
    from .github import GitHub  # github3 is needed here only

    body = _read_body(body_file)
    client = GitHub.from_environment()
    problems = []
    try:
        posted = client.upsert_comment(repo, pr, body, author)
        click.echo(f"{posted.action} {posted.url}")
    except PerfbotError as error:
        problems.append(error)
    if state is not None and sha is not None:
        headline = body.splitlines()[0].replace("**perfbot:**", "").strip() if body.strip() else "perfbot"
        try:
            client.set_status(repo, sha, state, headline, context, target_url)
            click.echo(f"status {state} set on {sha[:12]}")
        except PerfbotError as error:
            problems.append(error)
    if problems:
        worst = max(problems, key=lambda e: e.exit_code)
        for problem in problems:
            click.echo(f"perfbot: error: {problem}", err=True)
        sys.exit(worst.exit_code)


def _read_body(path: Path) -> str:
    if path.is_dir():
        raise BadInput(f"{path}: is a directory, not a markdown file")
    try:
        body = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise BadInput(f"{path}: cannot read it as UTF-8 text: {error}") from None
    if not body.strip():
        raise BadInput(f"{path}: is empty; nothing to post")
    if len(body) > GITHUB_COMMENT_LIMIT:
        raise BadInput(f"{path}: {len(body)} characters, over GitHub's {GITHUB_COMMENT_LIMIT} for a comment")
    return body


@perfbot.group("triton")
def triton_group() -> None:
    """Triton builds for CI and bisection.

    Example:

        perfbot triton build --commit 7c56a5e40f7fd928dfd5c72902d5def0097db73a
    """


@triton_group.command("build")
@click.option("--commit", default=None, help="Commit to build. Default: [tool.perfbot] triton-commit of the project.")
@click.option("--source", default=triton_build.DEFAULT_SOURCE, show_default=True,
              help="Triton repository: a local path or a git URL.")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Wheel cache, one folder per commit. Default: ~/.cache/perfbot/triton-wheels.")
@click.option("--no-build-isolation", is_flag=True,
              help="Build with the build tools already installed (pip's --no-build-isolation) instead of fresh ones.")
@_project_option
def triton_build_command(commit: str | None, source: str, cache: Path | None, no_build_isolation: bool,
                         project: Path | None) -> None:
    """Build a Triton wheel at a commit, or take it from the cache; prints the wheel's path.

    Exits 3 if the build fails, with the end of its log.

    Example:

        perfbot triton build --commit 7c56a5e4 --source ~/src/triton --cache /ci/wheels
    """
    commit = commit or _project(project).triton_commit
    wheel, built = triton_build.build(commit, source, cache, build_isolation=not no_build_isolation)
    click.echo(f"{'built' if built else 'cache hit'}: {wheel}", err=True)
    click.echo(str(wheel))


@perfbot.command("sample")
@click.option("--suite", "suite_name", required=True, help="Suite of the benchmark.")
@click.option("--case", "case_name", required=True, help="Case (shape) within the suite.")
@click.option("--kernel", default="fused", show_default=True, help="Implementation to time.")
@click.option("--approximate", type=click.Choice(["none", "tanh"]), default="none", show_default=True,
              help="GELU variant.")
@click.option("--samples", type=click.IntRange(min=10), default=20, show_default=True, help="Samples to print.")
@click.option("--kernels", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="kernels/ package to measure instead of the project's.")
@_project_option
def sample_command(suite_name: str, case_name: str, kernel: str, approximate: str, samples: int,
                   kernels: Path | None, project: Path | None) -> None:
    """Check one benchmark, time it, and print its samples in ms, one per line (for bisect).

    Exits 1 if the kernel gives a wrong result, 3 without a CUDA GPU.

    Example:

        perfbot sample --suite pr --case t5-v1.1-xl --kernel fused --samples 30
    """
    import dataclasses

    from .runner import RunSettings, run

    subject = _subject(_project(project), kernels)
    if suite_name not in subject.suites:
        raise click.BadParameter(f"unknown suite {suite_name!r}; known: {', '.join(subject.suites)}", param_hint="--suite")
    suite = subject.suites[suite_name]
    cases = tuple(c for c in suite.cases if c.name == case_name)
    if not cases:
        raise click.BadParameter(f"suite {suite_name} has no case {case_name!r}; it has "
                                 f"{', '.join(c.name for c in suite.cases)}", param_hint="--case")
    settings = RunSettings(samples=samples, approximations=(approximate,), kernels=(kernel,))
    result = run(subject, [dataclasses.replace(suite, cases=cases, kernels=(kernel,))], settings)
    for failure in result.failures:
        raise WrongResult(f"{failure.kernel} on {failure.case}: {failure.reason}")
    for value in result.benchmarks[0].samples_ms:
        click.echo(f"{value:.6f}")


@perfbot.command("bisect")
@click.option("--repo", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Git repository to bisect (a Triton checkout unless --measure is given).")
@click.option("--good", required=True, help="A revision where the benchmark was fast.")
@click.option("--bad", required=True, help="A later revision where it is slower.")
@click.option("--build", "build_command", default=None, help="Shell command that builds a commit, run in its worktree.")
@click.option("--measure", "measure_command", default=None,
              help="Shell command run in the worktree that prints samples in ms, one per line.")
@click.option("--suite", "suite_name", default="pr", show_default=True, help="Triton mode: suite of the benchmark.")
@click.option("--case", "case_name", default="t5-v1.1-xl", show_default=True, help="Triton mode: case of the benchmark.")
@click.option("--kernel", default="fused", show_default=True, help="Triton mode: implementation to time.")
@click.option("--samples", type=click.IntRange(min=10), default=20, show_default=True,
              help="Triton mode: samples per measurement round.")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Triton mode: wheel cache. Default: ~/.cache/perfbot/triton-wheels.")
@click.option("--no-build-isolation", is_flag=True,
              help="Triton mode: build with the build tools already installed (pip's --no-build-isolation).")
@click.option("--state", "state_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="State file, for resuming. Default: one per repository, ends and commands under ~/.cache/perfbot/bisect.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the table as markdown here.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.01, show_default=True,
              help="Significance level of the one-sided Mann-Whitney U tests.")
@click.option("--min-slowdown", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="Percent by which bad must be slower than good to bisect at all.")
@click.option("--max-rounds", type=click.IntRange(min=1), default=3, show_default=True,
              help="Measurement rounds for a commit before an ambiguous one is classified by the nearer median.")
@click.option("--max-probes", type=click.IntRange(min=0), default=None,
              help="Stop after measuring this many new commits (resume by running the same command again).")
@_project_option
def bisect_command(repo: Path, good: str, bad: str, build_command: str | None, measure_command: str | None,
                   suite_name: str, case_name: str, kernel: str, samples: int, cache: Path | None,
                   no_build_isolation: bool, state_path: Path | None, report_path: Path | None, alpha: float, min_slowdown: float,
                   max_rounds: int, max_probes: int | None, project: Path | None) -> None:
    """Find the commit that made a benchmark slower, with statistics at every step.

    Each probed commit is checked out in a worktree of its own (your working copy is never
    touched). A commit whose build or measure fails is skipped, never blamed. Prints
    `first bad commit: <sha>` and exits 0 when found; exits 2 when bad is not significantly
    slower than good.

    Example:

        perfbot bisect --repo . --good v1 --bad main --build "make" --measure "./bench --ms"
    """
    from .bisect import CommandProber, TritonProber, bisect

    if not (repo / ".git").exists() and not repo.is_dir():
        raise BadInput(f"--repo {repo}: no such directory")
    if build_command is not None and measure_command is None:
        raise click.UsageError("--build needs --measure (the command that prints the samples)")
    workdir = Path(tempfile.mkdtemp(prefix="perfbot-bisect-"))
    try:
        if measure_command is not None:
            prober = CommandProber(repo, build_command or "true", measure_command, workdir)
        else:
            config = _project(project)
            sample_args = ["--project", str(config.root), "--suite", suite_name, "--case", case_name,
                           "--kernel", kernel, "--samples", str(samples)]
            prober = TritonProber(repo, cache or triton_build.default_cache(), sample_args,
                                  build_isolation=not no_build_isolation)

        def shown(probe) -> None:
            what = f"skipped ({probe.unusable})" if probe.unusable else f"{len(probe.samples)} samples, median {probe.median_ms:.4f} ms"
            click.echo(f"probed {probe.sha[:12]} {probe.subject[:50]}: {what}", err=True)

        outcome = bisect(repo, good, bad, prober, state_path=state_path, alpha=alpha,
                         min_slowdown_percent=min_slowdown, max_rounds=max_rounds, max_probes=max_probes,
                         on_probe=shown)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    _console().print(bisect_table(outcome))
    click.echo(f"state: {outcome.state_path}", err=True)
    if report_path is not None:
        _write_text(report_path, bisect_markdown(outcome, str(repo)))
    for note in outcome.non_monotonic:
        click.echo(f"not monotonic: {note}")
    if outcome.first_bad is None:
        raise EnvironmentFailure(
            "the first bad commit is one of " + ", ".join(c[:12] for c in outcome.candidates)
            + ": the commits between could not be built or measured")
    click.echo(f"first bad commit: {outcome.first_bad}")


@perfbot.command("selftest")
@click.option("--suite", "suite_name", default="pr", show_default=True, help="Suite of the benchmark to use.")
@click.option("--case", "case_name", default="t5-v1.1-xl", show_default=True, help="Case of the benchmark.")
@click.option("--kernel", default="fused", show_default=True, help="Implementation to time.")
@click.option("--rounds", type=click.IntRange(min=5), default=100, show_default=True,
              help="Comparisons per row (A/A, and A/B at each level).")
@click.option("--samples", type=click.IntRange(min=10), default=10, show_default=True,
              help="Samples per side and round, as in a pull-request check.")
@click.option("--levels", default="0.5,1,2,5", show_default=True, help="Injected slowdowns in percent, comma-separated.")
@click.option("--thresholds", "thresholds_path", type=click.Path(path_type=Path), default=None,
              help="Regression policy. Default: thresholds.yaml at the project root.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Also write the table as JSON here.")
@_project_option
def selftest_command(suite_name: str, case_name: str, kernel: str, rounds: int, samples: int, levels: str,
                     thresholds_path: Path | None, out: Path | None, project: Path | None) -> None:
    """Measure this runner's false-alarm rate (A/A) and the smallest slowdown it detects (A/B
    with a calibrated sleep injected after the kernel), under the rule in force.

    Example:

        perfbot selftest --rounds 100 --out selftest.json
    """
    from rich.table import Table

    from . import selftest
    from .runner import DEVICE, _inputs, require_gpu

    try:
        parsed = tuple(float(v) for v in levels.split(","))
    except ValueError:
        raise click.BadParameter(f"must be numbers separated by commas, got {levels!r}", param_hint="--levels") from None
    if not parsed or any(not 0 < v < 100 for v in parsed):
        raise click.BadParameter("every level must be a percentage between 0 and 100", param_hint="--levels")
    config = _project(project)
    policy = load_policy(thresholds_path or config.root / "thresholds.yaml")
    subject = _subject(config, None)
    if suite_name not in subject.suites or not any(c.name == case_name for c in subject.suites[suite_name].cases):
        raise click.BadParameter(f"no case {case_name!r} in suite {suite_name!r}", param_hint="--case")
    if kernel not in subject.implementations:
        raise click.BadParameter(f"unknown kernel {kernel!r}", param_hint="--kernel")
    require_gpu()
    import torch

    case = next(c for c in subject.suites[suite_name].cases if c.name == case_name)
    x, weight = _inputs(case, torch.Generator(device=DEVICE).manual_seed(0))
    fn = subject.implementations[kernel].build("none")
    with _progress() as progress:
        task = progress.add_task("selftest rounds", total=rounds)
        collected = selftest.measure_rounds(lambda: fn(x, weight), parsed, rounds, samples,
                                            on_round=lambda: progress.update(task, advance=1))
    result = selftest.tally(collected, parsed, policy)
    table = Table(title=f"perfbot selftest: {kernel} on {suite_name}/{case_name}, {samples}+{samples} samples, "
                        f"{rounds} rounds; {result.rule}", title_justify="left")
    for column in ("comparison", "injected (nominal)", "injected (measured)", "flagged", "rate"):
        table.add_column(column, justify="left" if column == "comparison" else "right")
    table.add_row("A/A (false alarms)", "0%", "", f"{result.false_alarms}/{rounds}", f"{result.false_alarms / rounds:.1%}")
    for level in result.levels:
        table.add_row(f"A/B +{level.nominal_percent:g}%", f"{level.nominal_percent:g}%",
                      f"{level.measured_percent:.2f}%", f"{level.detected}/{level.rounds}",
                      f"{level.detected / level.rounds:.1%}")
    _console().print(table)
    if out is not None:
        _write_text(out, json.dumps(result.to_json(), indent=1) + "\n")
