"""`perfbot check`: every implementation of every chosen case run once and compared with the
subject's trusted result; nothing is timed. Where there is no GPU it runs on the CPU, the Triton
kernels in Triton's interpreter: slow, so a subject keeps small cases for it (a suite of its own,
`quick` by convention)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from ..errors import EnvironmentFailure
from ..loading.package import Loaded
from ..loading.subject import Case, Suite
from ..records.run import variant_name
from . import interpreted_libdevice

if TYPE_CHECKING:
    from .planning import RunSettings


@dataclass(frozen=True)
class Checked:
    """One implementation of one case: right, or what was wrong."""

    case: Case
    name: str  # the implementation with its variant, "triton[1]"
    relative_error: float | None
    bound: float
    problem: str | None = None  # None: right

    @property
    def right(self) -> bool:
        return self.problem is None


def choose_device(requested: str | None) -> str:
    """Where to check: the GPU if there is one, else the CPU. On the CPU, Triton kernels run in
    Triton's interpreter, which must be chosen before triton is first imported (a kernel defined
    after an import without it fails in the interpreter), and is given libdevice's functions
    before the subject imports them: call this first."""
    interpreting = os.environ.get("TRITON_INTERPRET") == "1"
    device = requested or ("cuda" if torch.cuda.is_available() and not interpreting else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise EnvironmentFailure("--device cuda: no CUDA GPU is visible (torch.cuda.is_available() is False)")
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    interpreted_libdevice.install()  # where TRITON_INTERPRET=1 only
    return device


def check(
    loaded: Loaded,
    suites: Sequence[Suite],
    settings: RunSettings,
    device: str,
    on_case: Callable[[str], None] = lambda label: None,
    limit: float | None = None,
) -> list[Checked]:
    """Check the suites' cases on `device`, case by case; `on_case(label)` is told of each done.
    Each call into the subject may take `limit` seconds at most (guard.py)."""
    from .groups import check_group  # after choose_device, as all that runs the subject
    from .planning import plan

    generator = torch.Generator(device=device).manual_seed(settings.seed)
    checked = []
    for group in plan(loaded, suites, settings):
        case = group[0].case
        ready, failed = check_group(group, generator, loaded.subject, limit)
        outcomes = {
            variant_name(r.planned.kernel, r.planned.variant): Checked(
                case, variant_name(r.planned.kernel, r.planned.variant), r.check.relative_error, r.check.bound
            )
            for r in ready
        }
        for _, f in failed:
            name = variant_name(f.kernel, f.variant)
            outcomes[name] = Checked(case, name, f.relative_error, loaded.subject.tolerance_for(case), f.reason)
        checked += [outcomes[variant_name(p.kernel, p.variant)] for p in group]  # in the suite's order
        on_case(f"{case.suite}/{case.name}")
    return checked
