"""Planning a run: its settings, and the benchmarks it measures, case by case (each
implementation of a case with its variant values, on every side), with the steps it reports."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import BadInput, listed
from ..loading.package import Loaded
from ..loading.subject import Case, Subject, Suite
from ..records.run import variant_name

if TYPE_CHECKING:
    from .sequential import Stopping

MIN_SAMPLES = 10


@dataclass(frozen=True)
class RunSettings:
    samples: int = 30
    warmup_calls: int = 3
    seed: int = 0
    # The values to measure per variant parameter; a parameter left out takes its default only.
    variants: tuple[tuple[str, tuple[str, ...]], ...] = ()
    kernels: tuple[str, ...] = ()  # implementations; empty: each suite's own list
    skipped: tuple[str, ...] = ()  # implementations left out on purpose
    cases: tuple[str, ...] = ()  # the cases asked for by name (--case); empty: every case of the suites
    modes: tuple[str, ...] = ()  # the modes asked for (--mode); empty: every mode of the cases
    keep_sass: bool = False  # record each Triton kernel's full SASS with it, not only its counts

    def __post_init__(self) -> None:
        if self.samples < MIN_SAMPLES:
            raise BadInput(f"samples must be at least {MIN_SAMPLES} for a meaningful median, got {self.samples}")
        if self.warmup_calls < 1:
            raise BadInput(f"warmup calls must be at least 1, got {self.warmup_calls}")

    def to_wire(self) -> dict[str, Any]:
        """Every field, as JSON carries them to a worker process (worker.py); `from_wire` reads it."""
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, wire: object) -> RunSettings:
        """The settings `to_wire` gave, after JSON (which makes tuples lists): every field there,
        each of its type, and nothing else."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        if not isinstance(wire, dict) or set(wire) != set(fields):
            got = sorted(map(str, wire)) if isinstance(wire, dict) else type(wire).__name__
            raise BadInput(f"run settings: expected the fields {sorted(fields)}, got {got}")
        values = {name: _tupled(value) for name, value in wire.items()}
        for name, value in values.items():
            default = fields[name].default
            if type(value) is not type(default) or (isinstance(value, tuple) and not _only_strings(value)):
                raise BadInput(f"run settings: {name} must be of type {type(default).__name__}, got {value!r}")
        return cls(**values)


def _tupled(value: Any) -> Any:
    """JSON's lists back as the tuples they were."""
    return tuple(_tupled(item) for item in value) if isinstance(value, list | tuple) else value


def _only_strings(value: tuple[Any, ...]) -> bool:
    return all(_only_strings(item) if isinstance(item, tuple) else isinstance(item, str) for item in value)


@dataclass(frozen=True)
class Planned:
    """One benchmark to run: an implementation of a case with its variant values, from one side of
    the run ("" for a plain run; "base" or "head" for an A/B run)."""

    case: Case
    kernel: str  # the implementation
    values: tuple[tuple[str, str], ...]  # every variant parameter it takes, with its value
    side: str = ""
    impl: Any = field(default=None, compare=False, repr=False)
    defaults: tuple[tuple[str, str], ...] = ()
    subject: Any = field(default=None, compare=False, repr=False)
    # "" for the benchmark; OWN_PICKS for an A/B row's second capture, each side at its own
    # autotune picks (alignment.py), timed and paired beside the first.
    arm: str = ""

    @property
    def variant(self) -> dict[str, str]:
        """The parameters set away from their defaults (what results record as the variant)."""
        default = dict(self.defaults)
        return {name: value for name, value in self.values if default.get(name) != value}

    @property
    def name(self) -> str:
        """The benchmark's name, as results show it (records/run.py variant_name)."""
        return variant_name(self.kernel, self.variant, self.case.mode)

    @property
    def key(self) -> str:
        """Unique within a timed group: both sides of an A/B run time the same kernel names."""
        name = self.name + (f" {self.arm}" if self.arm else "")
        return f"{self.side}:{name}" if self.side else name


def settings_for(
    subject: Loaded,
    samples: int,
    warmup: int,
    seed: int,
    variants: tuple[str, ...],
    kernel_names: tuple[str, ...],
    skipped_kernels: tuple[str, ...] = (),
    keep_sass: bool = False,
    case_names: tuple[str, ...] = (),
    mode_names: tuple[str, ...] = (),
) -> RunSettings:
    """The settings of a run of `subject`, from the names its command line gave."""
    from ..loading.selection import chosen_implementations

    return RunSettings(
        samples=samples,
        warmup_calls=warmup,
        seed=seed,
        variants=chosen_variants(subject.subject, variants),
        kernels=chosen_implementations(subject, kernel_names),
        skipped=chosen_implementations(subject, skipped_kernels),
        keep_sass=keep_sass,
        cases=tuple(dict.fromkeys(case_names)),
        modes=tuple(dict.fromkeys(mode_names)),
    )


def chosen_variants(subject: Subject, requested: Sequence[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`--variant NAME=VALUE` options as RunSettings.variants: every value asked for, per parameter;
    `NAME=all` takes every value the subject lists."""
    chosen: dict[str, list[str]] = {}
    for text in requested:
        name, _, value = text.partition("=")
        if name not in subject.variants:
            known = listed(subject.variants) or "none"
            raise BadInput(f"--variant {text!r}: subject {subject.name!r} has no variant {name!r} (it has {known})")
        values = [str(v) for v in subject.variants[name]]
        if value != "all" and value not in values:
            raise BadInput(f"--variant {text!r}: {name} is one of {listed(values, 10)} (or all)")
        for picked in values if value == "all" else [value]:
            chosen.setdefault(name, [])
            if picked not in chosen[name]:
                chosen[name].append(picked)
    return tuple((name, tuple(values)) for name, values in chosen.items())


def plan(
    loaded: Loaded, suites: Sequence[Suite], settings: RunSettings, side: str = "", lenient: bool | None = None
) -> list[list[Planned]]:
    """Benchmarks grouped by case; a group is timed interleaved. The base side of an A/B run
    may lack implementations (it can predate them): those are left out instead of refused.
    `lenient` leaves out what is missing on any side (a run planned whole first, measured case by
    case)."""
    lenient = side == "base" if lenient is None else lenient
    subject = loaded.subject
    unknown = [k for k in (*settings.kernels, *settings.skipped) if k not in subject.implementations]
    if unknown and not lenient:
        raise BadInput(f"unknown implementation {unknown[0]!r}; known: {sorted(subject.implementations)}")
    asked = dict(settings.variants)
    defaults = tuple(subject.defaults().items())
    groups = []
    for suite in suites:
        names = [
            k
            for k in suite.implementations
            if (not settings.kernels or k in settings.kernels) and k not in settings.skipped
        ]
        for case in suite.cases:
            group = []
            for name in names:
                impl = subject.implementations.get(name)
                if impl is None:
                    continue  # the other side of an A/B run may not have it
                if not impl.takes_mode(case.mode):
                    continue  # a suite that times every implementation, on a case in a mode this one lacks
                takes = subject.takes(impl)
                options = [asked.get(param, (dict(defaults)[param],)) for param in takes]
                for values in itertools.product(*options):
                    values_of = tuple(zip(takes, values, strict=True))
                    group.append(Planned(case, name, values_of, side, impl, defaults, subject))
            keys = [planned.key for planned in group]
            if len(set(keys)) != len(keys):  # two benchmarks under one name would overwrite each other
                raise BadInput(f"case {suite.name}/{case.name}: two benchmarks would share the name {keys[0]!r}")
            if group:
                groups.append(group)
    if not groups and not lenient:
        raise BadInput(f"nothing to run: none of the implementations {list(settings.kernels)} is in the chosen suites")
    return groups


def single_cases(suites: Sequence[Suite]) -> list[Suite]:
    """Each case of the suites as a suite of its own, in order: the unit a run measures."""
    return [dataclasses.replace(suite, cases=(case,)) for suite in suites for case in suite.cases]


def case_steps(settings: RunSettings, stopping: Stopping | None = None) -> int:
    """Steps a case reports: one check and then `samples` timing rounds, or with sequential
    sampling (whose rounds are not known ahead) one step for all of them."""
    return 1 + (1 if stopping is not None else settings.samples)


def progress_steps(groups: list[list[Planned]], settings: RunSettings, stopping: Stopping | None = None) -> int:
    """Steps `run` reports: `case_steps` for each case."""
    return len(groups) * case_steps(settings, stopping)
