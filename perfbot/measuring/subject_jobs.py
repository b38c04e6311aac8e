"""The jobs a subject's process runs (subject_process.py), each answering with plain data for
the parent to decide on and show: `check` (is each implementation right?) and `suites` (what
the subject declares)."""

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


JOBS: dict[str, Callable[..., dict[str, Any]]] = {"check": check_job, "suites": suites_job}
