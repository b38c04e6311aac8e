"""The measured subject: a checkout's `kernels/` package, loaded by path, and its shape suites."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, Literal, NotRequired

from pydantic import ConfigDict, Field, TypeAdapter
from typing_extensions import TypedDict

from .errors import BadInput
from .schema import MAX_ITEMS, Dim, Name, Text, load_yaml, validate

DTYPES = ("float16", "bfloat16", "float32")


@dataclass(frozen=True)
class Case:
    """One shape of a suite: x is [M, K], weight [2N, K], out [M, N]."""

    suite: str
    name: str
    M: int
    K: int
    N: int
    dtype: str

    @property
    def shape(self) -> dict[str, int]:
        return {"M": self.M, "K": self.K, "N": self.N}

    def flops(self, computes: str) -> int:
        # The matmul's multiply-adds; the GeGLU epilogue is O(M N) and left out.
        return 0 if computes == "copy" else 2 * self.M * self.K * 2 * self.N

    def bytes_moved(self, computes: str) -> int:
        """The fewest bytes `computes` must move through memory: each input read once, the
        output written once."""
        size = {"float16": 2, "bfloat16": 2, "float32": 4}[self.dtype]
        weight = 2 * self.N * self.K
        if computes == "copy":
            return 2 * weight * size
        outputs = self.M * self.N * (2 if computes == "matmul" else 1)
        return (self.M * self.K + weight + outputs) * size


@dataclass(frozen=True)
class Suite:
    name: str
    about: str
    kernels: tuple[str, ...]
    cases: tuple[Case, ...]


@dataclass(frozen=True)
class Subject:
    """A loaded kernels package: its implementations by name and its suites by name."""

    path: Path
    module: ModuleType
    suites: dict[str, Suite]

    @property
    def implementations(self) -> dict[str, Any]:
        return self.module.IMPLEMENTATIONS


def restrict(suites: Sequence[Suite], cases: set[tuple[str, str]]) -> list[Suite]:
    """The suites cut down to the given (suite, case) pairs."""
    kept = []
    for suite in suites:
        chosen = tuple(c for c in suite.cases if (suite.name, c.name) in cases)
        if chosen:
            kept.append(dataclasses.replace(suite, cases=chosen))
    return kept


def load_subject(kernels_dir: Path) -> Subject:
    """Import `kernels_dir` as a package under a name unique to its path, so that two checkouts
    (an A/B run, a bisect) can be loaded side by side in one process."""
    init = kernels_dir / "__init__.py"
    if not init.is_file():
        raise BadInput(f"{kernels_dir}: not a kernels package (no __init__.py)")
    name = "perfbot_subject_" + hashlib.sha1(str(kernels_dir.resolve()).encode()).hexdigest()[:12]
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(kernels_dir)])
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except ModuleNotFoundError as error:
            del sys.modules[name]
            if error.name in ("torch", "triton"):
                raise  # the CLI says which extra to install
            raise BadInput(f"{kernels_dir}: the kernels package does not import: {error}") from None
        except Exception as error:  # noqa: BLE001 -- the subject's own code: its failure is the subject's, said in one line
            del sys.modules[name]
            raise BadInput(
                f"{kernels_dir}: the kernels package does not import: "
                f"{type(error).__name__}: {str(error).splitlines()[0][:300] if str(error) else ''}"
            ) from None
    if not isinstance(getattr(module, "IMPLEMENTATIONS", None), dict) or not hasattr(module, "SUITES_FILE"):
        raise BadInput(f"{kernels_dir}: the kernels package must define IMPLEMENTATIONS (a dict) and SUITES_FILE")
    suites = load_suites(Path(module.SUITES_FILE), set(module.IMPLEMENTATIONS))
    return Subject(path=kernels_dir, module=module, suites=suites)


class _CaseFields(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid", strict=True)  # type: ignore[misc]

    name: Name
    M: Dim
    K: Dim
    N: Dim
    dtype: NotRequired[Literal["float16", "bfloat16", "float32"]]


class _SuiteFields(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid", strict=True)  # type: ignore[misc]

    about: NotRequired[Text]
    dtype: NotRequired[Literal["float16", "bfloat16", "float32"]]
    kernels: NotRequired[Annotated[list[Name], Field(min_length=1, max_length=64)]]
    cases: Annotated[list[_CaseFields], Field(min_length=1, max_length=MAX_ITEMS)]


_SUITES = TypeAdapter(Annotated[dict[Name, _SuiteFields], Field(min_length=1, max_length=256)])


def load_suites(path: Path, known_kernels: set[str]) -> dict[str, Suite]:
    """The suites file, validated whole (schema.py), then against the subject's kernels."""
    data = validate(str(path), load_yaml(path, "suites file"), _SUITES, "suites file")
    return {name: _parse_suite(path, name, body, known_kernels) for name, body in data.items()}


def _parse_suite(path: Path, name: str, body: Any, known_kernels: set[str]) -> Suite:
    where = f"{path}: suite {name!r}"
    kernels = body.get("kernels", sorted(known_kernels))
    for kernel in kernels:
        if kernel not in known_kernels:
            raise BadInput(f"{where}: unknown kernel {kernel!r}; known: {sorted(known_kernels)}")
    cases = []
    for case in body["cases"]:
        dtype = case.get("dtype", body.get("dtype"))
        if dtype is None:
            raise BadInput(f"{where} case {case['name']!r}: no dtype, here or in its suite; one of {DTYPES}")
        cases.append(Case(suite=name, name=case["name"], M=case["M"], K=case["K"], N=case["N"], dtype=dtype))
    names = [case.name for case in cases]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise BadInput(f"{where}: case name {duplicates[0]!r} appears twice")
    return Suite(name=name, about=body.get("about", ""), kernels=tuple(kernels), cases=tuple(cases))
