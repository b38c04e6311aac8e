"""What a subject declares, as `perfbot suites --json` prints it: each suite with the
implementations it times and the names of its cases. The baseline workflow's issue job reads the
declarations of main, to open issues only for benchmarks main declares and to title them with
the declared names, never with text read from the store (docs/history.md, "On GitHub"). Format 1:

    {"format": 1, "suites": {"pr": {"implementations": ["mykernel", "torch"], "cases": ["odd", "large"]}}}
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, with_config

from .schema import MAX_ITEMS, IntOnly, Name, bad_input, load_json

FORMAT: Final = 1


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass(frozen=True)
class DeclaredSuite:
    implementations: Annotated[list[Name], Field(min_length=1, max_length=MAX_ITEMS)]
    cases: Annotated[list[Name], Field(min_length=1, max_length=MAX_ITEMS)]


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass(frozen=True)
class Declared:
    format: Annotated[Literal[1], IntOnly]
    suites: Annotated[dict[Name, DeclaredSuite], Field(min_length=1, max_length=MAX_ITEMS)]

    def declares(self, suite: str, case: str, kernel: str) -> bool:
        """Whether the subject declares this benchmark: the suite, a case of it, and an
        implementation it times."""
        declared = self.suites.get(suite)
        return declared is not None and case in declared.cases and kernel in declared.implementations


_FILE = TypeAdapter(Declared)


def to_text(suites: Iterable[tuple[str, list[str], list[str]]]) -> str:
    """One line of JSON, for a workflow's job output: (suite, implementations, case names) each,
    checked as `load` checks it."""
    data = {
        "format": FORMAT,
        "suites": {name: {"implementations": kernels, "cases": cases} for name, kernels, cases in suites},
    }
    try:
        declared = _FILE.validate_json(json.dumps(data), strict=True)
    except ValidationError as error:
        raise bad_input("the subject's declarations", error, "declarations") from None
    return json.dumps(asdict(declared), separators=(",", ":"), ensure_ascii=True)


def load(path: Path) -> Declared:
    return load_json(path, "declarations (perfbot suites --json)", _FILE)
