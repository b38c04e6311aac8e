"""The jobs a subject's process runs (subject_process.py), each answering with plain data for
the parent to decide on and show: `check` (is each implementation right?), `suites` (what the
subject declares) and `selftest` (its timings, for the parent to tally)."""

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
        subject, tuple(suites), tuple(cases), family_names=tuple(families), preferred=("quick", "pr")
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
        plan = selftest.Plan(subject.path, case.suite, case.name, kernel, chosen, samples, max_samples, policy)
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
        asked = (subject.path, case.suite, case.name, kernel, interference_percent, interference_rounds, policy)
        if len(on_gpus) > 1:  # on the first GPU, in its worker
            (crossed,) = on_each_gpu(on_gpus[:1], interference.interference_in_worker, [(*asked, skipped_kernels)])
        else:
            crossed = interference.interference_in_worker(*asked, skipped_kernels)
        progress({"total": 1, "advance": 1})
    # Each side of an A/B imports the subject anew, and an autotuned kernel tunes once a side.
    progress({"task": "autotune picks across fresh imports", "total": None})
    picks = selftest.picks_across_imports(subject.path, case, kernel, min(checks, PICK_IMPORTS))
    progress({"total": 1, "advance": 1})
    return {
        "suite": case.suite,
        "case": case.name,
        "kernel": kernel,
        "checks": collected,
        "interference": crossed.to_json() if crossed is not None else None,
        "picks": picks.to_json() if picks is not None else None,
    }


JOBS: dict[str, Callable[..., dict[str, Any]]] = {"check": check_job, "suites": suites_job, "selftest": selftest_job}
