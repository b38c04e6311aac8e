"""`perfbot check`: every implementation of every chosen case run once and compared with the
subject's trusted result; nothing is timed. Where there is no GPU it runs on the CPU, the Triton
kernels in Triton's interpreter: slow, so a subject keeps small cases for it (a suite of its own,
`quick` by convention)."""

from __future__ import annotations

import dataclasses
import os
import random
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import torch

from ..compiling import tuning
from ..errors import EnvironmentFailure
from ..loading.guard import CONFIG_TIME_S
from ..loading.package import Loaded
from ..loading.subject import Suite
from ..records.autotune import AutotunePick, config_text
from . import interpreted_libdevice
from .checked import Checked

if TYPE_CHECKING:
    from .planning import Planned, RunSettings


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
    config_time: float = CONFIG_TIME_S,
) -> list[Checked]:
    """Check the suites' cases on `device`, case by case; `on_case(label)` is told of each done.
    Each call into the subject may take `limit` seconds at most (guard.py). An implementation
    that launches `triton.autotune`d kernels is checked at every config they may choose
    (`each_config`), nothing timed; its rows name each config."""
    from .planning import plan

    generator = torch.Generator(device=device).manual_seed(settings.seed)
    checked = []
    for group in plan(loaded, suites, settings):
        case = group[0].case
        for planned in group:  # in the suite's order
            checked += each_config(planned, generator, loaded, limit, config_time, settings.seed)
        on_case(f"{case.suite}/{case.name}")
    return checked


def each_config(
    planned: Planned, generator: torch.Generator, loaded: Loaded, limit: float | None, config_time: float, seed: int
) -> list[Checked]:
    """One implementation of one case checked at each config its autotuned kernels may choose:
    round r runs, for every (kernel, key), the r-th of the configs pruning leaves it, until every
    config of every kernel has run once. Past `config_time` seconds in all, the rounds are a
    sample drawn from `seed` (the first always among them), and the last row says so."""
    from .groups import check_group  # after choose_device, as all that runs the subject

    case = planned.case
    name = planned.name
    rows, rounds, started, index = [], [0], time.monotonic(), 0
    drawn: str | None = None
    while index < len(rounds):
        with tuning.session(forced=rounds[index]) as noted:
            ready, failed = check_group([planned], generator, loaded.subject, limit)
        configs = _label(noted.picks.values())
        if ready:
            r = ready[0]
            rows.append(Checked(case, name, r.check.relative_error, r.check.bound, config=configs))
        for _, f in failed:
            bound = f.error_bound if f.error_bound is not None else loaded.subject.tolerance_for(case)
            rows.append(Checked(case, name, f.relative_error, bound, f.reason, configs))
        if index == 0:
            total = max(noted.candidates.values(), default=1)
            took = time.monotonic() - started
            affordable = total if took * total <= config_time else max(1, int(config_time // max(took, 1e-9)))
            others = list(range(1, total))
            if affordable < total:
                draw = random.Random(f"{seed}/{case.suite}/{case.name}/{name}")
                others = sorted(draw.sample(others, affordable - 1))
                drawn = (
                    f"{affordable} of {total} configs checked, drawn with seed {seed}: one took {took:.1f} s, "
                    f"and --config-time {config_time:g} allows about {affordable}"
                )
            rounds += others
        index += 1
    if drawn is not None:
        rows[-1] = dataclasses.replace(rows[-1], note=drawn)
    return rows


def _label(picks: Iterable[AutotunePick]) -> str | None:
    """The configs a round ran, per autotuned kernel (a kernel of one config is no choice)."""
    chosen = sorted({(p.kernel, config_text(p.config)) for p in picks if p.origin != "only config"})
    return "; ".join(f"{kernel}: {config}" for kernel, config in chosen) or None
