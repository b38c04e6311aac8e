"""What a subject declares, as `perfbot suites --json` prints it: each suite with the
implementations it times and the names of its cases. The baseline workflow's issue job reads the
declarations of main, to open issues only for benchmarks main declares and to title them with
the declared names, never with text read from the store (docs/history.md, "On GitHub"). Format 1:

    {"format": 1, "suites": {"pr": {"implementations": ["mykernel", "torch"], "cases": ["odd", "large"]}}}

A suite with a case timed in another mode than the forward (loading/subject.py MODES) also has
`modes`: each such case's name, with the modes it is timed in; a case it does not list is timed
in the forward alone, and a suite of forward cases alone has no `modes` (as before modes):

    "pr": {"implementations": ["mykernel"], "cases": ["odd"], "modes": {"odd": ["forward", "backward"]}}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, with_config

from .run import FORWARD, Mode  # FORWARD: the mode of a case `modes` does not list
from .schema import MAX_ITEMS, IntOnly, Name, bad_input, load_json

FORMAT: Final = 1


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass(frozen=True)
class DeclaredSuite:
    implementations: Annotated[list[Name], Field(min_length=1, max_length=MAX_ITEMS)]
    cases: Annotated[list[Name], Field(min_length=1, max_length=MAX_ITEMS)]
    modes: Annotated[
        dict[Name, Annotated[list[Mode], Field(min_length=1, max_length=3)]], Field(max_length=MAX_ITEMS)
    ] = field(default_factory=dict)

    def modes_of(self, case: str) -> list[str]:
        return list(self.modes.get(case, [FORWARD]))


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass(frozen=True)
class Declared:
    format: Annotated[Literal[1], IntOnly]
    suites: Annotated[dict[Name, DeclaredSuite], Field(min_length=1, max_length=MAX_ITEMS)]

    def declares(self, suite: str, case: str, kernel: str, mode: str = FORWARD) -> bool:
        """Whether the subject declares this benchmark: the suite, a case of it timed in the mode,
        and an implementation it times."""
        declared = self.suites.get(suite)
        return (
            declared is not None
            and case in declared.cases
            and mode in declared.modes_of(case)
            and kernel in declared.implementations
        )


_FILE = TypeAdapter(Declared)


def to_text(
    suites: Iterable[tuple[str, list[str], list[str]]], modes: Mapping[str, Mapping[str, list[str]]] | None = None
) -> str:
    """One line of JSON, for a workflow's job output: (suite, implementations, case names) each,
    with `modes` by suite, case name and the modes it is timed in (a case timed in the forward
    alone may be left out), checked as `load` checks it."""
    modes = modes or {}
    data: dict[str, Any] = {"format": FORMAT, "suites": {}}
    for name, kernels, cases in suites:
        others = {case: list(m) for case, m in modes.get(name, {}).items() if list(m) != [FORWARD]}
        data["suites"][name] = {"implementations": kernels, "cases": cases, **({"modes": others} if others else {})}
    try:
        declared = _FILE.validate_json(json.dumps(data), strict=True)
    except ValidationError as error:
        raise bad_input("the subject's declarations", error, "declarations") from None
    written = asdict(declared)
    for suite in written["suites"].values():
        if not suite["modes"]:
            del suite["modes"]  # a suite of forward cases alone, as written before modes
    return json.dumps(written, separators=(",", ":"), ensure_ascii=True)


def load(path: Path) -> Declared:
    return load_json(path, "declarations (perfbot suites --json)", _FILE)
