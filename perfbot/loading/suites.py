"""The suites a subject declares: read from a YAML file or given in Python, checked against the
subject, and cut down to what a run times.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, NotRequired

from pydantic import ConfigDict, Field, TypeAdapter
from typing_extensions import TypedDict

from ..errors import BadInput
from ..records.schema import MAX_DIM, MAX_ITEMS, Name, Text, load_yaml, shown, validate
from .checks import check_name, check_text
from .subject import FORWARD, MODES, Case, Subject, Suite

# The parameters of a case at most: as many as a results file's shape holds (records/run.py).
MAX_PARAMS = 16


class _SuiteFields(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid", strict=True, defer_build=True)  # type: ignore[misc]

    about: NotRequired[Text]
    dtype: NotRequired[Name]
    mode: NotRequired[Name | Annotated[list[Name], Field(min_length=1, max_length=len(MODES))]]
    implementations: NotRequired[Annotated[list[Name], Field(min_length=1, max_length=64)]]
    kernels: NotRequired[Annotated[list[Name], Field(min_length=1, max_length=64)]]  # the older name
    # name, dtype, and integer parameters: checked one by one (_suite), to say which is wrong and why
    # (a parameter of 8.0 or true, too: as no integer)
    # (and a mode: one, or a list of them)
    cases: Annotated[
        list[dict[Name, Name | bool | int | float | Annotated[list[Name], Field(max_length=len(MODES))]]],
        Field(min_length=1, max_length=MAX_ITEMS),
    ]


_SUITES = TypeAdapter(Annotated[dict[Name, _SuiteFields], Field(min_length=1, max_length=256)])


def declared_suites(package: Path, subject: Subject) -> dict[str, Suite]:
    """The subject's suites, checked against it: given in Python (a dict of Suite), or read from
    the file its `suites` names, beside the package's __init__.py."""
    if not isinstance(subject.suites, Mapping):
        return load_suites(package / subject.suites, subject)
    suites = {
        key: _checked_suite(f"{package}: suite {shown(key)}", key, suite, subject)
        for key, suite in subject.suites.items()
    }
    if not suites:
        raise BadInput(f"{package}: subject {subject.name!r} has no suites")
    return suites


def load_suites(path: Path, subject: Subject) -> dict[str, Suite]:
    """A suites file, validated whole (schema.py), then against the subject: every case has a name,
    integer parameters and a dtype the subject has a tolerance for; every implementation named exists
    and takes the modes of the cases it is timed on. A case is timed once in each of its modes (the
    suite's `mode:`, unless the case names its own; `forward` if neither does).

        quick:
          about: small enough for Triton's interpreter
          dtype: float32
          mode: [forward, backward]
          implementations: [triton, torch]
          cases:
            - {name: odd, M: 33, N: 40}
            - {name: one, M: 1, N: 8, mode: forward+backward}
    """
    data = validate(str(path), load_yaml(path, "suites file"), _SUITES, "suites file")
    return {name: _suite(path, name, body, subject) for name, body in data.items()}


def _suite(path: Path, name: str, body: Any, subject: Subject) -> Suite:
    where = f"{path}: suite {name!r}"
    if "implementations" in body and "kernels" in body:
        raise BadInput(f"{where}: name its implementations once (implementations:, or the older kernels:)")
    cases = []
    for index, fields in enumerate(body["cases"]):
        case_name, dtype = fields.get("name"), fields.get("dtype", body.get("dtype"))
        if not isinstance(case_name, str):
            raise BadInput(f"{where}: cases[{index}]: needs a name")
        params = {k: v for k, v in fields.items() if k not in ("name", "dtype", "mode")}
        for mode in _modes(f"{where} case {case_name!r}", fields.get("mode", body.get("mode", FORWARD))):
            cases.append(Case(suite=name, name=case_name, params=params, dtype=dtype, mode=mode))
    named = "implementations" in body or "kernels" in body
    implementations = body.get("implementations", body.get("kernels", list(subject.implementations)))
    suite = Suite(name=name, about=body.get("about", ""), implementations=tuple(implementations), cases=tuple(cases))
    return _checked_suite(where, name, suite, subject, named)


def _modes(where: str, given: Any) -> tuple[str, ...]:
    """A `mode:` of a suite or a case: one mode, or a list of distinct ones."""
    modes = [given] if isinstance(given, str) else given
    if not isinstance(modes, list) or not modes or not all(isinstance(m, str) for m in modes):
        raise BadInput(f"{where}: mode must be one of {', '.join(MODES)}, or a list of them, got {shown(given)}")
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise BadInput(f"{where}: unknown mode {shown(unknown[0])}; modes: {', '.join(MODES)}")
    if len(set(modes)) != len(modes):
        raise BadInput(f"{where}: names a mode twice: {shown(modes)}")
    return tuple(modes)


def _checked_suite(where: str, key: str, suite: Any, subject: Subject, named: bool = True) -> Suite:
    """A suite, from YAML or from Python, checked against the subject: every implementation it
    names exists (once), every case has a name unique in its mode, one of MODES, a dtype the
    subject has a tolerance for and 1 to MAX_PARAMS integer parameters, each from 1 to MAX_DIM
    (schema.py). An implementation the suite names (`named`: not its default, every
    implementation) takes the mode of each of its cases; of the default, each case times those
    that take its mode (planning.plan)."""
    if not isinstance(suite, Suite) or suite.name != key:
        raise BadInput(f"{where}: must be a perfbot.Suite named {shown(key)}")
    check_name(where, "a suite's name", key)
    check_text(where, "a suite's about", suite.about)
    known = subject.implementations
    timed = suite.implementations
    if not isinstance(timed, tuple | list) or not all(isinstance(n, str) for n in timed):
        raise BadInput(f"{where}: implementations must be a tuple of names, got {shown(timed)}")
    if not suite.implementations:
        raise BadInput(f"{where}: names no implementations")
    for implementation in timed:
        if implementation not in known:
            raise BadInput(f"{where}: unknown implementation {shown(implementation)}; known: {shown(list(known))}")
    if len(set(timed)) != len(timed):
        raise BadInput(f"{where}: names an implementation twice: {shown(list(timed))}")
    if not isinstance(suite.cases, tuple | list) or len(suite.cases) > MAX_ITEMS:
        raise BadInput(f"{where}: cases must be a tuple of at most {MAX_ITEMS:,} cases, got {shown(suite.cases)}")
    if not suite.cases:
        raise BadInput(f"{where}: has no cases")
    for case in suite.cases:
        if not isinstance(case, Case) or case.suite != key:
            raise BadInput(f"{where}: every case must be a perfbot.Case of suite {key!r}, got {shown(case)}")
        check_name(where, "a case's name", case.name)
        if not isinstance(case.mode, str) or case.mode not in MODES:
            raise BadInput(
                f"{where} case {case.name!r}: mode must be one of {', '.join(MODES)}, got {shown(case.mode)}"
            )
        refused = [name for name in timed if named and not known[name].takes_mode(case.mode)]
        if refused:
            impl = known[refused[0]]
            modes = ", ".join(impl.modes) if impl.modes is not None else "forward, as a bound"
            raise BadInput(
                f"{where} case {case.name!r}: implementation {refused[0]!r} is not timed in mode {case.mode!r} "
                f"(its modes: {modes}); give it modes=, or leave it out of the suite"
            )
        if not isinstance(case.params, Mapping):
            raise BadInput(f"{where} case {case.name!r}: parameters must be a dict, got {shown(case.params)}")
        for parameter in case.params:
            check_name(f"{where} case {case.name!r}", "a parameter's name", parameter)
        if not isinstance(case.dtype, str) or case.dtype not in subject.tolerance:
            raise BadInput(
                f"{where} case {case.name!r}: dtype must be one the subject has a tolerance for "
                f"({shown(list(subject.tolerance))}), got {shown(case.dtype)}"
            )
        bad = [
            k for k, v in case.params.items() if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= MAX_DIM
        ]
        if bad or not case.params or len(case.params) > MAX_PARAMS:
            raise BadInput(
                f"{where} case {case.name!r}: parameters must be 1 to {MAX_PARAMS} integers from 1 to 2^40"
                + (f", got {bad[0]}={shown(case.params[bad[0]])}" if bad else f", got {len(case.params)}")
            )
    names = [(case.name, case.mode) for case in suite.cases]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        name, mode = duplicates[0]
        raise BadInput(f"{where}: case name {name!r} appears twice" + (f" in mode {mode}" if mode != FORWARD else ""))
    return suite


def restrict(suites: Sequence[Suite], cases: set[tuple[str, str]]) -> list[Suite]:
    """The suites cut down to the given (suite, case) pairs, each case in every mode it is timed in."""
    return _kept(suites, lambda suite, case: (suite.name, case.name) in cases)


def restrict_modes(suites: Sequence[Suite], cases: set[tuple[str, str, str]]) -> list[Suite]:
    """The suites cut down to the given (suite, case, mode) triples: each case in those modes alone."""
    return _kept(suites, lambda suite, case: (suite.name, case.name, case.mode) in cases)


def _kept(suites: Sequence[Suite], keep: Callable[[Suite, Case], bool]) -> list[Suite]:
    kept = []
    for suite in suites:
        chosen = tuple(c for c in suite.cases if keep(suite, c))
        if chosen:
            kept.append(dataclasses.replace(suite, cases=chosen))
    return kept


def without_repeats(suites: Sequence[Suite]) -> list[Suite]:
    """The suites with each case that several of them hold (the same parameters and dtype) timed
    once per implementation: whole in the suite that times the most implementations (the first
    of those), and in each other suite only for the implementations that none before timed on it.
    A suite keeps, as one, every case none of whose implementations is timed elsewhere (two
    families' cases of one shape time disjoint implementations); a case it shares only in part
    becomes a suite of that one case. A run of several suites then times no benchmark twice (a
    results file holds each benchmark once) and leaves none out."""

    def key(case: Case) -> tuple[Any, ...]:
        return tuple(case.params.items()), case.dtype, case.mode

    holders: dict[tuple[Any, ...], list[int]] = {}
    for index, suite in enumerate(suites):
        for case in suite.cases:
            holders.setdefault(key(case), []).append(index)
    keeper = {k: min(held, key=lambda i: -len(set(suites[i].implementations))) for k, held in holders.items()}
    timed = {k: set(suites[index].implementations) for k, index in keeper.items()}
    kept = []
    for index, suite in enumerate(suites):
        whole: list[Case] = []
        parts: list[Suite] = []
        for case in suite.cases:
            if keeper[key(case)] == index:
                whole.append(case)
                continue
            lacking = [name for name in suite.implementations if name not in timed[key(case)]]
            timed[key(case)].update(lacking)
            if set(lacking) == set(suite.implementations):
                whole.append(case)
            elif lacking:
                parts.append(dataclasses.replace(suite, implementations=tuple(lacking), cases=(case,)))
        if whole:
            kept.append(dataclasses.replace(suite, cases=tuple(whole)))
        kept += parts
    return kept
