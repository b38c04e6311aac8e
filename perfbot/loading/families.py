"""Several kernels in one repository: a package's `subjects`, each a kernel family with its own
inputs, reference, tolerance and suites, combined into the one subject the rest of perfbot runs
(docs/subject.md, "Several kernels").

Every name of a family is prefixed with the family's, "<family>/<name>": its implementations
("rmsnorm/triton") and suites ("rmsnorm/pr"), always, so that a benchmark's name never changes
when a family is added or one is chosen for a run; results, the store and history then keep the
families apart by name. Each combined implementation carries its family's reference, counts and
variant parameters; the combined inputs hand each case to its family as the family declared it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BadInput, listed
from ..records.schema import shown
from .checks import check_subject
from .subject import Case, Implementation, Subject, Suite
from .suites import declared_suites

SEPARATOR = "/"


@dataclass
class Families(Subject):
    """Kernel families combined into one subject: each case is its family's, checked within its
    family's tolerance and given to its family's inputs as the family declared it."""

    families: dict[str, Subject] = field(default_factory=dict)
    # (suite, case, mode) of the combined subject -> the family and the case as the family declared it
    originals: dict[tuple[str, str, str], tuple[Subject, Case]] = field(default_factory=dict)

    def original(self, case: Case) -> tuple[Subject, Case]:
        found = self.originals.get((case.suite, case.name, case.mode))
        if found is None:
            raise BadInput(f"case {case.suite}/{case.name}: of none of the families {listed(self.families)}")
        return found

    def tolerance_for(self, case: Case) -> float:
        family, original = self.original(case)
        return family.tolerance_for(original)

    def grad_tolerance_for(self, case: Case) -> float:
        family, original = self.original(case)
        return family.grad_tolerance_for(original)

    def grad_inputs_for(self, case: Case) -> Sequence[int] | None:
        family, original = self.original(case)
        return family.grad_inputs_for(original)

    def has_own_reference(self, implementation: Implementation) -> bool:
        # Each combined implementation carries a reference: its own, or else its family's.
        family = self.families.get(family_of(implementation.name) or "")
        return family is None or implementation.reference is not family.reference


def prefixed(family: str, name: str) -> str:
    return f"{family}{SEPARATOR}{name}"


def family_of(name: str) -> str | None:
    """The family a prefixed name belongs to; None for a name without one."""
    family, separator, _ = name.partition(SEPARATOR)
    return family if separator else None


def combine(package: Path, subjects: Any) -> tuple[Families, dict[str, Suite]]:
    """The package's `subjects` as one subject and its suites, every name prefixed with its
    family's. Each family is checked as a subject on its own, its suites read beside the module
    that made it (a `suites` path relative to that module's folder; an absolute one as it is)."""
    where = f"{package}: subjects"
    if not isinstance(subjects, list | tuple) or not subjects:
        raise BadInput(f"{where} must be a non-empty list of perfbot.Subject, got {shown(subjects)}")
    families: dict[str, Subject] = {}
    for family in subjects:
        if not isinstance(family, Subject) or isinstance(family, Families):
            raise BadInput(f"{where} must be a list of perfbot.Subject, got {shown(family)}")
        check_subject(package, family)
        if SEPARATOR in family.name:
            raise BadInput(f"{where}: a family's name must not hold {SEPARATOR!r}, got {family.name!r}")
        if family.name in families:
            raise BadInput(f"{where}: two families are named {family.name!r}; give each its own name")
        families[family.name] = family
    variants = _variants(where, list(families.values()))
    tolerance: dict[str, float] = {}  # what results record: the loosest bound per dtype (each benchmark has its own)
    for family in families.values():
        for dtype, bound in family.tolerance.items():
            tolerance[dtype] = max(bound, tolerance.get(dtype, bound))
    first = next(iter(families.values()))
    combined = Families(
        name="+".join(families),
        inputs=_unrouted,
        reference=_unrouted,
        tolerance=tolerance,
        suites={},
        variants=variants,
        default_case=(prefixed(first.name, first.default_case[0]), first.default_case[1])
        if first.default_case
        else None,
        families=families,
    )
    combined.inputs = lambda case, generator: _routed(combined, case, generator)
    suites: dict[str, Suite] = {}
    for name, family in families.items():
        for impl in family.implementations.values():
            combined.add(_implementation(name, family, impl))
        folder = family.defined_in.parent if family.defined_in is not None else package
        for suite in declared_suites(folder, family).values():
            renamed = prefixed(name, suite.name)
            cases = tuple(dataclasses.replace(case, suite=renamed) for case in suite.cases)
            for case, original in zip(cases, suite.cases, strict=True):
                combined.originals[(renamed, case.name, case.mode)] = (family, original)
            implementations = tuple(prefixed(name, each) for each in suite.implementations)
            suites[renamed] = Suite(renamed, suite.about, implementations, cases)
    combined.suites = suites
    return combined, suites


def _implementation(family_name: str, family: Subject, impl: Implementation) -> Implementation:
    """A family's implementation under its prefixed name, carrying what it would take from its
    family. A bound counts only its own flops and bytes (groups.py), so it is given none."""
    return dataclasses.replace(
        impl,
        name=prefixed(family_name, impl.name),
        variants=family.takes(impl),
        reference=impl.reference or family.reference,
        flops=impl.flops if impl.bound else impl.flops or family.flops,
        bytes=impl.bytes if impl.bound else impl.bytes or family.bytes,
    )


def _variants(where: str, families: Sequence[Subject]) -> dict[str, tuple[str, ...]]:
    """Every family's variant parameters; one that two families declare must list the same values."""
    union: dict[str, tuple[str, ...]] = {}
    owner: dict[str, str] = {}
    for family in families:
        for parameter, values in family.variants.items():
            if parameter in union and union[parameter] != tuple(values):
                raise BadInput(
                    f"{where}: families {owner[parameter]!r} and {family.name!r} both declare variant {parameter!r}, "
                    f"with values {list(union[parameter])} and {list(values)}; give them one list, or other names"
                )
            union.setdefault(parameter, tuple(values))
            owner.setdefault(parameter, family.name)
    return union


def _routed(combined: Families, case: Case, generator: Any) -> Any:
    family, original = combined.original(case)
    return family.inputs(original, generator)


def _unrouted(*args: Any, **kwargs: Any) -> Any:
    """The combined subject's own reference: never called, since each implementation carries its
    family's."""
    raise BadInput("a combined subject has no reference of its own: each implementation carries its family's")
