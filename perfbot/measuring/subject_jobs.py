"""The jobs a subject's process runs (subject_process.py), each answering with plain data for
the parent to decide on and show: `check` (is each implementation right?), `suites` (what the
subject declares), `selftest` (its timings, for the parent to tally), `ab_plan` (what an A/B
would measure, for `perfbot ab --dry-run`) and `explain` (both sides' compiled kernels)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any


def check_job(
    package: str,
    families: list[str],
    suites: list[str],
    cases: list[str],
    modes: list[str],
    kernels: list[str],
    skipped: list[str],
    variants: list[str],
    seed: int,
    device: str,
    time_limit: float,
    config_time: float,
    progress: Callable[[object], None],
) -> dict[str, Any]:
    """Every implementation of the chosen cases run once and compared with the trusted result."""
    from ..loading.package import load_subject
    from ..loading.selection import chosen, chosen_families
    from .checking import check
    from .planning import settings_for

    subject = load_subject(Path(package), limit=time_limit)
    chosen_suites = chosen(
        subject,
        tuple(suites),
        tuple(cases),
        family_names=tuple(families),
        preferred=("quick", "pr"),
        mode_names=tuple(modes),
    )
    # Every value of every variant parameter unless told otherwise: checking is cheap, and a
    # variant's code path is as likely to be wrong as the default's.
    every = tuple(variants) or tuple(f"{name}=all" for name in subject.subject.variants)
    settings = settings_for(subject, 30, 1, seed, every, tuple(kernels), tuple(skipped))
    progress({"total": sum(len(suite.cases) for suite in chosen_suites)})
    checked = check(subject, chosen_suites, settings, device, progress, limit=time_limit, config_time=config_time)
    # Of kernel families, the ones checked: the combined subject's name lists them all.
    name = "+".join(chosen_families(subject, tuple(families))) if subject.families else subject.subject.name
    return {"subject": name, "device": device, "checked": [dataclasses.asdict(c) for c in checked]}


def suites_job(package: str, progress: Callable[[object], None]) -> dict[str, Any]:
    """The subject's implementations and suites, by family where it has kernel families."""
    from ..loading.families import family_of
    from ..loading.package import load_subject

    subject = load_subject(Path(package))
    listed = []
    for family in subject.families or (None,):
        implementations = subject.implementations.items()
        listed.append(
            {
                "family": family,
                "subject": subject.subject.name,
                "implementations": [
                    {"name": n, "under_test": i.under_test}
                    for n, i in implementations
                    if family_of(n) == family or not family
                ],
                "suites": [
                    {
                        "name": s.name,
                        "about": s.about,
                        "implementations": list(s.implementations),
                        "cases": [dataclasses.asdict(c) for c in s.cases],
                    }
                    for s in subject.suites.values()
                    if family_of(s.name) == family or not family
                ],
            }
        )
    return {"families": listed}


# How many fresh imports the selftest tunes an autotuned kernel in, at most (one per check).
PICK_IMPORTS = 10


def selftest_job(
    package: str,
    benchmark: dict[str, str | None],
    skipped: list[str],
    levels: list[float],
    checks: int,
    samples: int,
    max_samples: int,
    thresholds: str | None,
    interference_percent: float,
    interference_rounds: int,
    gpus: list[dict[str, Any]],
    progress: Callable[[object], None],
) -> dict[str, Any]:
    """`perfbot selftest`'s measuring (measuring/selftest.py): the checks, on each GPU where there
    are several; the interference check; the autotune picks across fresh imports. Told as
    progress: {"task": label, "total": n or None} starts a task, {"advance": n} advances it,
    {"description": label} renames it. The parent tallies and reports."""
    from ..deciding.thresholds import default_policy, load_policy
    from ..loading.package import load_subject
    from ..loading.selection import chosen_implementations, known_implementations, one_benchmark
    from . import interference, selftest
    from .shards import Gpu, on_each_gpu

    subject = load_subject(Path(package))
    case, kernel = one_benchmark(subject, **benchmark)
    skipped_kernels = chosen_implementations(subject, tuple(skipped))
    known_implementations(subject, (kernel,), "--kernel")
    known_implementations(subject, skipped_kernels, "--skip-kernel")
    policy = load_policy(Path(thresholds)) if thresholds is not None else default_policy()
    on_gpus = [Gpu(**gpu) for gpu in gpus]
    chosen = tuple(levels)
    if len(on_gpus) > 1:  # the checks shared out, each GPU's worker checking the kernel itself
        plan = selftest.Plan(
            subject.path, case.suite, case.name, kernel, chosen, samples, max_samples, policy, case.mode
        )
        progress({"task": f"selftest on {len(on_gpus)} GPUs (each calibrating first)", "total": len(on_gpus)})
        arguments = [(plan, n, index) for index, n in enumerate(selftest.shares(checks, len(on_gpus)))]
        parts = on_each_gpu(on_gpus, selftest.checks_in_worker, arguments, lambda gpu: progress({"advance": 1}))
        collected = [check for part in parts for check in part]
    else:
        call = selftest.checked_call(subject, case, kernel)
        progress({"task": "selftest: calibrating the injected sleep", "total": checks})
        collected = selftest.measure_checks(
            call,
            chosen,
            checks,
            samples,
            max_samples,
            policy,
            on_check=lambda: progress({"advance": 1}),
            on_calibrated=lambda: progress({"description": "selftest checks"}),
        )
    crossed = None
    if interference_rounds:
        progress({"task": "interference check", "total": None})
        asked = (
            subject.path,
            case.suite,
            case.name,
            kernel,
            interference_percent,
            interference_rounds,
            policy,
            skipped_kernels,
            case.mode,
        )
        if len(on_gpus) > 1:  # on the first GPU, in its worker
            (crossed,) = on_each_gpu(on_gpus[:1], interference.interference_in_worker, [asked])
        else:
            crossed = interference.interference_in_worker(*asked)
        progress({"total": 1, "advance": 1})
    # Each side of an A/B imports the subject anew, and an autotuned kernel tunes once a side.
    progress({"task": "autotune picks across fresh imports", "total": None})
    picks = selftest.picks_across_imports(subject.path, case, kernel, min(checks, PICK_IMPORTS))
    progress({"total": 1, "advance": 1})
    return {
        "suite": case.suite,
        "case": case.name,
        "kernel": kernel,
        "mode": case.mode,
        "checks": collected,
        "interference": crossed.to_json() if crossed is not None else None,
        "picks": picks.to_json() if picks is not None else None,
    }


def ab_plan_job(
    base: str, head: str, selection: dict[str, Any], settings: dict[str, Any], progress: Callable[[object], None]
) -> dict[str, Any]:
    """What an A/B of the two packages would measure (`perfbot ab --dry-run`), planned as the run
    plans it: the head under the base's declarations, each side from its own checkout, the suites
    the base's subject chooses by `selection` (selection.chosen's names) and `settings`
    (planning.settings_for's). Per side, the implementations timed, each with its role and the
    files its code came from; what the head lacks; how the declarations differ."""
    from ..loading import declarations
    from ..loading.selection import chosen
    from .planning import plan, settings_for
    from .worker import names_from_json

    loaded_sides = declarations.load_sides(Path(base), Path(head))
    subjects, base_subject = loaded_sides.subjects, loaded_sides.subjects["base"]
    suites = chosen(base_subject, **names_from_json(selection))
    run = settings_for(base_subject, **names_from_json(settings))
    # Each side planned as the run plans it: what a side lacks is left out, not refused.
    groups = {side: plan(loaded, suites, run, side, lenient=True) for side, loaded in subjects.items()}
    sides = {}
    for side, loaded in subjects.items():
        timed = {p.kernel for group in groups[side] for p in group}
        recorded = loaded.sources.recorded()
        sides[side] = [
            {
                "name": name,
                "role": "under test" if impl.under_test else "bound" if impl.bound else "baseline",
                "files": recorded.get(name, {}),
                "within_subject": all(_in_package(path, loaded) for path in recorded.get(name, {})),
            }
            for name, impl in loaded.implementations.items()
            if name in timed
        ]
    planned = [p for group in groups["base"] for p in group]
    return {
        "suites": [suite.name for suite in suites],
        "benchmarks": {side: sum(map(len, planned_groups)) for side, planned_groups in groups.items()},
        "sides": sides,
        "missing": [
            {"name": f.name, "suite": f.suite, "case": f.case, "reason": f.reason}
            for f in declarations.missing_failures(loaded_sides.missing, planned)
        ],
        "declared": declarations.differences(base_subject, loaded_sides.head_own, suites),
    }


def explain_job(
    base: str,
    head: str,
    selection: dict[str, list[str]],
    kernel_names: list[str],
    variants: list[str],
    target: dict[str, Any],
    keep_sass: bool,
    progress: Callable[[object], None],
) -> dict[str, Any]:
    """`perfbot explain`'s compiling of both sides (compiled_sides.py)."""
    from ..compiling.explanation import Target
    from .compiled_sides import compiled_sides
    from .worker import names_from_json

    capability = target.get("capability")
    where = Target(str(target["gpu"]), bool(target["launched"]), tuple(capability) if capability else None)
    return compiled_sides(
        Path(base),
        Path(head),
        names_from_json(selection),
        tuple(kernel_names),
        tuple(variants),
        where,
        keep_sass,
        progress,
    )


def _in_package(path: str, loaded: Any) -> bool:
    """Whether a recorded file (relative to its checkout, or absolute) is in the subject's package."""
    place = Path(path) if Path(path).is_absolute() else loaded.sources.root / path
    return place.resolve().is_relative_to(loaded.path.resolve())


JOBS: dict[str, Callable[..., dict[str, Any]]] = {
    "check": check_job,
    "suites": suites_job,
    "selftest": selftest_job,
    "ab_plan": ab_plan_job,
    "explain": explain_job,
}
