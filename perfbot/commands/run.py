"""Measuring: `perfbot run` (and its in-job A/B), `sample`, `show`, `env`, `suites`."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from pathlib import Path

import click

from ..cli import console, emit, load_kernels, perfbot, progress, project_config, project_option

from .. import results as results_file
from .. import store as baseline_store
from ..ab import restrict
from ..compare import compare
from ..config import ProjectConfig
from ..errors import EXIT_REGRESSION, BadInput, PerfbotError, WrongResult
from ..report import case_markdown, failures_table, run_markdown, run_table
from ..subject import Subject
from ..thresholds import Policy, load_policy


@perfbot.command("run")
@click.option("--suite", "suite_names", multiple=True, default=["pr"], show_default=True,
              help="Shape suite to run (repeat for several). `perfbot suites` lists them.")
@click.option("--case", "case_names", multiple=True,
              help="Only the cases of these names in the chosen suites (repeat for several). Default: every case.")
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
@click.option("--head", default=None, metavar="REV",
              help="With --against: measure the kernels of git revision REV as the head instead of this checkout's. "
                   "The suites and thresholds still come from this checkout (the PR check runs in the base's).")
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("perfbot-ab"), show_default=True,
              help="With --against: where base.json, head.json, comparison.json and comment.md go.")
@click.option("--thresholds", "thresholds_path", type=click.Path(path_type=Path), default=None,
              help="With --against: regression policy. Default: thresholds.yaml at the project root.")
@click.option("--trend-store", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="With --against: also compare with the newest stored run of this GPU here, as one line of trend (never fails).")
@click.option("--triton-env", "triton_envs", multiple=True, metavar="SIDE=DIR",
              help="With --against: run SIDE (base or head) in a worker process with the Triton installed in DIR "
                   "first on PYTHONPATH; the sides then alternate sample by sample, one process each.")
@click.option("--triton-source", default=None, metavar="REPO",
              help="With --against, when REV pins another Triton commit than this checkout: build both pinned "
                   "commits from this Triton repository (path or URL) and run each side with its own.")
@click.option("--triton-cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Wheel and environment cache for --triton-source. Default: ~/.cache/perfbot/triton-wheels.")
@project_option
def run_command(
    suite_names: tuple[str, ...],
    case_names: tuple[str, ...],
    kernel_names: tuple[str, ...],
    approximations: tuple[str, ...],
    samples: int,
    warmup: int,
    seed: int,
    out: Path | None,
    overwrite: bool,
    kernels: Path | None,
    against: str | None,
    head: str | None,
    out_dir: Path,
    thresholds_path: Path | None,
    trend_store: Path | None,
    triton_envs: tuple[str, ...],
    triton_source: str | None,
    triton_cache: Path | None,
    project: Path | None,
) -> None:
    """Check and time the kernels on a shape suite, and print a table.

    Every implementation is first checked against a float64 reference; a wrong one is reported
    as a failure and never timed. Exits 1 if any implementation failed. With --against REV the
    kernels of REV are measured too, interleaved sample by sample, and judged as `perfbot
    compare` does (interleaved thresholds); a failing slowdown is measured again in a second
    interleaved round and fails (exit 1) only if it holds. If REV pins another Triton commit,
    each side runs in a worker process with its own Triton (--triton-source or --triton-env).

    Example:

    \b
        perfbot run --suite models --suite decode --out results.json
        perfbot run --suite pr --against origin/main --out-dir ab
        perfbot run --suite pr --against origin/main --triton-source ~/src/triton
    """
    from ..runner import RunSettings, plan, progress_steps, run

    config = project_config(project)
    subject = load_kernels(config, kernels)
    unknown = [name for name in suite_names if name not in subject.suites]
    if unknown:
        raise click.BadParameter(f"unknown suite {unknown[0]!r}; known: {', '.join(subject.suites)}", param_hint="--suite")
    if out is not None and out.exists() and not overwrite:  # checked again by save(); fail before measuring
        raise click.BadParameter(f"{out} already exists; choose another name or pass --overwrite", param_hint="--out")
    settings = RunSettings(samples=samples, warmup_calls=warmup, seed=seed,
                           approximations=tuple(dict.fromkeys(approximations)), kernels=kernel_names)
    suites = [subject.suites[name] for name in dict.fromkeys(suite_names)]
    if case_names:
        suites = _only_cases(suites, case_names)
    if against is None and (triton_envs or triton_source or triton_cache or head):
        raise click.UsageError("--head, --triton-env, --triton-source and --triton-cache only apply to an A/B run "
                               "(--against REV)")
    if against is not None:
        policy = load_policy(thresholds_path or config.root / "thresholds.yaml")
        tritons = TritonChoice(_parse_triton_envs(triton_envs), triton_source, triton_cache)
        _run_against(config, kernels or config.kernels_dir, subject, suites, settings, against, head, out_dir,
                     overwrite, policy, trend_store, tritons)
        return
    total = progress_steps(plan(subject, suites, settings), settings)
    terminal = console()
    with progress() as bar:
        task = bar.add_task("starting", total=total)
        result = run(subject, suites, settings,
                     on_progress=lambda label, steps: bar.update(task, advance=steps, description=label))
    if out is not None:
        results_file.save(result, out, overwrite=overwrite)
    terminal.print(run_table(result))
    if result.failures:
        terminal.print(failures_table(result))
        sys.exit(EXIT_REGRESSION)
    if out is not None:
        terminal.print(f"results written to {out}")


def _only_cases(suites: list, names: tuple[str, ...]) -> list:
    known = {case.name for suite in suites for case in suite.cases}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise click.BadParameter(f"no case {unknown[0]!r} in the chosen suites; they have {', '.join(sorted(known))}",
                                 param_hint="--case")
    return restrict(suites, {(suite.name, case.name) for suite in suites for case in suite.cases if case.name in names})


@dataclasses.dataclass(frozen=True)
class TritonChoice:
    """Which Triton each side of an A/B run gets: given environments, or builds of the pinned
    commits from a source repository, or (neither) the one installed here."""

    envs: dict[str, Path]
    source: str | None
    cache: Path | None


def _parse_triton_envs(values: tuple[str, ...]) -> dict[str, Path]:
    envs = {}
    for value in values:
        side, _, directory = value.partition("=")
        if side not in ("base", "head") or not directory:
            raise click.BadParameter(f"expected base=DIR or head=DIR, got {value!r}", param_hint="--triton-env")
        if not Path(directory).is_dir():
            raise click.BadParameter(f"{directory}: no such directory", param_hint="--triton-env")
        envs[side] = Path(directory).resolve()
    return envs


def _run_against(config: ProjectConfig, kernels_dir: Path, running: Subject, suites: list, settings: object, rev: str,
                 head_rev: str | None, out_dir: Path, overwrite: bool, policy: Policy, trend_store: Path | None,
                 tritons: TritonChoice) -> None:
    """The in-job A/B. The running checkout's suites and thresholds decide; its kernels are the
    head unless `head_rev` names another commit (the PR check runs in the base's checkout, so
    that a pull request cannot judge itself)."""
    from ..ab import checkout, judge, new_run_id
    from ..config import load_project_config
    from ..runner import plan, progress_steps, run_sides
    from ..subject import load_subject
    from ..worker import run_in_workers, workers

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
    with contextlib.ExitStack() as stack:
        trees = {"base": stack.enter_context(checkout(config.root, rev))}
        trees["head"] = stack.enter_context(checkout(config.root, head_rev)) if head_rev else (config.root, None)
        subjects = {"base": load_subject(trees["base"][0] / relative),
                    "head": load_subject(trees["head"][0] / relative) if head_rev else running}
        pins = {side: load_project_config(tree).triton_commit for side, (tree, _) in trees.items()}
        specs = _worker_specs({side: tree / relative for side, (tree, _) in trees.items()}, pins, tritons, rev)
        run_id = new_run_id()
        started = stack.enter_context(workers(specs)) if specs else None
        revisions = {"against": trees["base"][1], **({"head": trees["head"][1]} if head_rev else {})}

        def measure_sides(chosen: list, tag: str) -> tuple:
            total = progress_steps(plan(running, chosen, settings), settings)
            extra = {"ab_run": run_id + tag, **revisions, "triton_commits": pins}
            with progress() as bar:
                task = bar.add_task("starting", total=total)
                advance = lambda label, steps: bar.update(task, advance=steps, description=label)  # noqa: E731
                if started:
                    sides = run_in_workers(started, chosen, settings, advance, extra_settings=extra)
                else:
                    sides = run_sides(subjects, chosen, settings, advance, extra_settings=extra)
            return sides["base"], sides["head"]

        base_results, head_results = measure_sides(suites, "")
        for name, loaded in (("base.json", base_results), ("head.json", head_results)):
            results_file.save(loaded, out_dir / name, overwrite=overwrite)
        report = judge(base_results, head_results, policy,
                       lambda cases: measure_sides(restrict(suites, cases), "-confirm"))
        other = "head" if head_rev else "base"
        report = dataclasses.replace(report, policy_change=_policy_change(policy, trees[other][0], suites,
                                                                          subjects[other]))
    if trend_store is not None:
        report = dataclasses.replace(report, trend=_trend(trend_store, head_results, policy))
    emit(report, out_dir / "comment.md", out_dir / "comparison.json")
    if report.fails:
        sys.exit(EXIT_REGRESSION)


def _policy_change(policy: Policy, other_tree: Path, suites: list, other: Subject) -> tuple[str, ...]:
    """What the other side's thresholds.yaml and suites would have judged differently: the
    lead line, then one line per difference. Empty when they agree."""
    from ..thresholds import changes

    lines = []
    try:
        lines += [f"thresholds {line}" for line in changes(policy, load_policy(other_tree / "thresholds.yaml"))]
    except PerfbotError as error:
        lines.append(f"the other side's thresholds.yaml does not load: {error}")
    for suite in suites:
        mine = {(c.name, tuple(c.shape.items()), c.dtype) for c in suite.cases}
        theirs_suite = other.suites.get(suite.name)
        theirs = {(c.name, tuple(c.shape.items()), c.dtype) for c in theirs_suite.cases} if theirs_suite else set()
        lines += [f"suite {suite.name}: case {name} only in the checkout that judged" for name, *_ in sorted(mine - theirs)]
        lines += [f"suite {suite.name}: case {name} only on the other side (not measured)"
                  for name, *_ in sorted(theirs - mine)]
    if not lines:
        return ()
    lead = ("This check measured the suites and applied the thresholds.yaml of the checkout that ran it; "
            "the other side's differ:")
    return (lead, *lines)


def _worker_specs(kernels: dict[str, Path], pins: dict[str, str], tritons: TritonChoice,
                  rev: str) -> dict[str, tuple[Path, Path | None, str | None]]:
    """Empty when both sides share the Triton installed here (measured in this process); else,
    per side, what its worker process runs: (kernels, Triton environment or None, commit)."""
    if tritons.envs:
        return {side: (kernels[side], tritons.envs.get(side), None) for side in ("base", "head")}
    if pins["base"] == pins["head"]:
        return {}
    if tritons.source is None:
        raise BadInput(f"{rev} pins Triton {pins['base'][:12]} and the head {pins['head'][:12]}: each side needs "
                       "its own; pass --triton-source REPO to build both, or --triton-env base=DIR --triton-env head=DIR")
    from .. import triton_build

    return {side: (kernels[side], triton_build.environment(pins[side], tritons.source, tritons.cache), pins[side])
            for side in ("base", "head")}


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


@perfbot.command("show")
@click.argument("results_path", metavar="RESULTS", type=click.Path(path_type=Path))
@click.option("--markdown", is_flag=True, help="Print a markdown table instead (failures are listed after it); "
                                               "every name from the file is escaped.")
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
        return
    terminal = console()
    terminal.print(run_table(loaded))
    if loaded.failures:
        terminal.print(failures_table(loaded))


@perfbot.command("env")
@click.option("--json", "as_json", is_flag=True, help="Print the record as JSON.")
def env_command(as_json: bool) -> None:
    """Print where a run would be measured: versions, GPU, driver, clocks. Works without a GPU.

    Example:

        perfbot env --json
    """
    from ..environment import collect_environment

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
@project_option
def suites_command(project: Path | None) -> None:
    """List the shape suites and their cases.

    Example:

        perfbot suites
    """
    subject = load_kernels(project_config(project), None)
    for suite in subject.suites.values():
        click.echo(f"{suite.name}: {suite.about}  [kernels: {', '.join(suite.kernels)}]")
        for case in suite.cases:
            click.echo(f"  {case.name:<18} M={case.M:<6} K={case.K:<6} N={case.N:<6} {case.dtype}")


@perfbot.command("sample")
@click.option("--suite", "suite_name", required=True, help="Suite of the benchmark.")
@click.option("--case", "case_name", required=True, help="Case (shape) within the suite.")
@click.option("--kernel", default="fused", show_default=True, help="Implementation to time.")
@click.option("--approximate", type=click.Choice(["none", "tanh"]), default="none", show_default=True,
              help="GELU variant.")
@click.option("--samples", type=click.IntRange(min=10), default=20, show_default=True, help="Samples to print.")
@click.option("--kernels", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="kernels/ package to measure instead of the project's.")
@project_option
def sample_command(suite_name: str, case_name: str, kernel: str, approximate: str, samples: int,
                   kernels: Path | None, project: Path | None) -> None:
    """Check one benchmark, time it, and print its samples in ms, one per line (for bisect).

    Exits 1 if the kernel gives a wrong result, 3 without a CUDA GPU.

    Example:

        perfbot sample --suite pr --case t5-v1.1-xl --kernel fused --samples 30
    """
    from ..runner import RunSettings, run

    subject = load_kernels(project_config(project), kernels)
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
