"""Which suites, cases, families and implementations a name means: the rules every command that
chooses by name follows (run, ab, check, explain, sample, selftest, bisect), without click, so
that a job can choose as a command does.

Of kernel families (families.py), a bare name means that name in each chosen family (`pr`: every
chosen family's pr), FAMILY/NAME that family's. A name that means nothing the subject has is a
BadChoice, which names the option that takes such names, for the command line to say.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..errors import BadInput, listed
from .families import Families, family_of, prefixed
from .subject import MODES
from .suites import restrict, without_repeats

if TYPE_CHECKING:
    from .package import Loaded
    from .subject import Case, Suite


class BadChoice(BadInput):
    """A name that chooses nothing the subject has (exit 2). `option` is the command-line option
    that takes such names (`--suite`), None where the fix is to give one; `reason` says what is
    wrong without it, for a command line that names the option its own way."""

    def __init__(self, reason: str, option: str | None = None) -> None:
        super().__init__(f"{option}: {reason}" if option else reason)
        self.reason = reason
        self.option = option


def chosen(
    subject: Loaded,
    suite_names: tuple[str, ...],
    case_names: tuple[str, ...],
    every_suite: bool = False,
    family_names: tuple[str, ...] = (),
    preferred: tuple[str, ...] = ("pr",),
    mode_names: tuple[str, ...] = (),
) -> list[Suite]:
    """The suites named, cut down to the cases named, and to the modes named (each case in those
    of its modes). None named: the first of `preferred` the subject has (the pull-request suite: a
    quick run by hand), else, or with `every_suite` (the A/B), every suite; of kernel families,
    that for each family chosen (`chosen_families`)."""
    names = _suite_names(subject, suite_names, chosen_families(subject, family_names), every_suite, preferred)
    unknown = [name for name in names if name not in subject.suites]
    if unknown:
        raise BadChoice(f"unknown suite {unknown[0]!r}; known: {listed(subject.suites)}", "--suite")
    suites = in_modes(without_repeats([subject.suites[name] for name in dict.fromkeys(names)]), mode_names)
    if not case_names:
        return suites
    known = {case.name for suite in suites for case in suite.cases}
    missing = [name for name in case_names if name not in known]
    if missing:
        raise BadChoice(f"no case {missing[0]!r} in the chosen suites; they have {listed(sorted(known))}", "--case")
    return restrict(
        suites, {(suite.name, case.name) for suite in suites for case in suite.cases if case.name in case_names}
    )


def in_modes(suites: list[Suite], mode_names: tuple[str, ...]) -> list[Suite]:
    """The suites cut down to the cases in these modes (--mode); none named: every case. A mode
    no chosen case is timed in chooses nothing: a BadChoice."""
    if not mode_names:
        return suites
    unknown = [name for name in mode_names if name not in MODES]
    if unknown:
        raise BadChoice(f"unknown mode {unknown[0]!r}; modes: {listed(MODES)}", "--mode")
    kept = [dataclasses.replace(suite, cases=tuple(c for c in suite.cases if c.mode in mode_names)) for suite in suites]
    kept = [suite for suite in kept if suite.cases]
    if not kept:
        timed = sorted({case.mode for suite in suites for case in suite.cases})
        raise BadChoice(
            f"no case of the chosen suites is timed in {listed(mode_names)}; they are in {listed(timed)}", "--mode"
        )
    return kept


def chosen_families(subject: Loaded, family_names: tuple[str, ...]) -> tuple[str, ...]:
    """The kernel families named (--family), else every one the subject has (none for a package's
    one `subject`)."""
    if family_names and not subject.families:
        raise BadChoice(
            f"subject {subject.subject.name!r} has no kernel families: its package defines `subject`, not `subjects`",
            "--family",
        )
    unknown = [name for name in family_names if name not in subject.families]
    if unknown:
        raise BadChoice(f"unknown family {unknown[0]!r}; known: {listed(subject.families)}", "--family")
    return tuple(dict.fromkeys(family_names)) or subject.families


def _suite_names(
    subject: Loaded, names: tuple[str, ...], families: tuple[str, ...], every_suite: bool, preferred: tuple[str, ...]
) -> list[str]:
    """The suites `chosen` takes, by name; of kernel families, a bare name is that suite of each
    chosen family that has one, FAMILY/NAME that family's."""
    groups = [(family, [s for s in subject.suites if family_of(s) == family]) for family in families]
    if not families:
        groups = [("", list(subject.suites))]
    literal = [prefixed(family, "all") for family in families] or ["all"]  # a suite named all
    if names == ("all",) and not any(name in subject.suites for name in literal):
        return [name for _, own in groups for name in own]
    if not names:
        picked = []
        for family, own in groups:
            wanted = [prefixed(family, name) if family else name for name in preferred]
            first = next((name for name in wanted if name in own), None)
            picked += [first] if first is not None and not every_suite else own
        return picked
    if not families:
        return list(names)
    picked = []
    for name in names:
        owner = family_of(name)
        if owner is not None and owner not in families:
            known = f"family {owner!r} is not chosen" if owner in subject.families else f"no family {owner!r}"
            raise BadChoice(f"suite {name!r}: {known}; families: {listed(families)}", "--suite")
        matching = [name] if owner is not None else [prefixed(f, name) for f in families]
        found = [each for each in matching if each in subject.suites]
        if not found:
            raise BadChoice(
                f"no chosen family has a suite {name!r}; known: {listed(s for _, own in groups for s in own)}",
                "--suite",
            )
        picked += found
    return picked


def chosen_implementations(subject: Loaded, names: tuple[str, ...]) -> tuple[str, ...]:
    """Implementations named (--kernel, --skip-kernel): of kernel families, a bare name is that
    implementation of each family that has one. One of none is left as named, for the plan to
    refuse (or to leave out, on an A/B's base)."""
    found: list[str] = []
    for name in names:
        matching = [prefixed(f, name) for f in subject.families if prefixed(f, name) in subject.implementations]
        found += [name] if name in subject.implementations or not matching else matching
    return tuple(dict.fromkeys(found))


def known_implementations(subject: Loaded, names: tuple[str, ...], option: str) -> None:
    """Refuses the first of `names` that is no implementation of the subject's, naming `option`."""
    unknown = [name for name in names if name not in subject.implementations]
    if unknown:
        raise BadChoice(f"unknown implementation {unknown[0]!r}; known: {listed(subject.implementations)}", option)


def own_implementation(subject: Loaded, family: str | None = None) -> str:
    """The subject's first implementation under test (of `family`, if given): what a command times
    when none is named."""
    own = [
        name
        for name, impl in subject.implementations.items()
        if impl.under_test and (family is None or family_of(name) == family)
    ]
    if not own:
        of = f" in family {family!r}" if family is not None else ""
        raise BadChoice(
            f"subject {subject.subject.name!r} marks no implementation under_test{of}; name one with --kernel"
        )
    return own[0]


def one_benchmark(
    subject: Loaded,
    family: str | None,
    suite_name: str | None,
    case_name: str | None,
    kernel: str | None,
    mode: str | None = None,
) -> tuple[Case, str]:
    """The case (in `mode`, else the first it is timed in) and the implementation of a command
    that times one benchmark. Of kernel families, bare names are the family's (--family, else the
    case's), and no suite named is the family's default case, else its first suite."""
    if family is not None:
        chosen_families(subject, (family,))
        if suite_name is not None and family_of(suite_name) is None:
            suite_name = prefixed(family, suite_name)
        if suite_name is None:
            default = subject.subject.families[family].default_case if isinstance(subject.subject, Families) else None
            if default is not None and case_name is None:
                suite_name, case_name = prefixed(family, default[0]), default[1]
            else:
                suite_name = next(name for name in subject.suites if family_of(name) == family)
    case = subject.case(suite_name, case_name, mode)
    family = family_of(case.suite) if subject.families else None
    if kernel is not None and family is not None and family_of(kernel) is None:
        kernel = prefixed(family, kernel)
    return case, kernel or own_implementation(subject, family)
