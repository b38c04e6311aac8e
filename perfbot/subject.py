"""The measured subject: a checkout's `kernels/` package, loaded by path, and its shape suites."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from .errors import BadInput
from .files import read_text

DTYPES = ("float16", "bfloat16", "float32")
_SUITE_KEYS = {"about", "dtype", "kernels", "cases"}
_CASE_KEYS = {"name", "M", "K", "N", "dtype"}


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
        except Exception:
            del sys.modules[name]
            raise
    suites = load_suites(Path(module.SUITES_FILE), set(module.IMPLEMENTATIONS))
    return Subject(path=kernels_dir, module=module, suites=suites)


def load_suites(path: Path, known_kernels: set[str]) -> dict[str, Suite]:
    text = read_text(path, "suites file")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise BadInput(f"{path}: cannot read the suites: {error}") from None
    if not isinstance(data, dict) or not data:
        raise BadInput(f"{path}: expected a mapping of suite name -> suite")
    return {name: _parse_suite(path, str(name), body, known_kernels) for name, body in data.items()}


def _parse_suite(path: Path, name: str, body: Any, known_kernels: set[str]) -> Suite:
    where = f"{path}: suite {name!r}"
    if not isinstance(body, dict):
        raise BadInput(f"{where}: expected a mapping with keys {sorted(_SUITE_KEYS)}")
    _reject_unknown(where, body, _SUITE_KEYS)
    kernels = body.get("kernels", sorted(known_kernels))
    if not isinstance(kernels, list) or not kernels:
        raise BadInput(f"{where}: kernels must be a non-empty list")
    for kernel in kernels:
        if kernel not in known_kernels:
            raise BadInput(f"{where}: unknown kernel {kernel!r}; known: {sorted(known_kernels)}")
    cases = body.get("cases")
    if not isinstance(cases, list) or not cases:
        raise BadInput(f"{where}: cases must be a non-empty list")
    parsed = tuple(_parse_case(where, name, case, body.get("dtype")) for case in cases)
    names = [case.name for case in parsed]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise BadInput(f"{where}: case name {duplicates[0]!r} appears twice")
    return Suite(name=name, about=str(body.get("about", "")), kernels=tuple(kernels), cases=parsed)


def _parse_case(where: str, suite: str, case: Any, suite_dtype: Any) -> Case:
    if not isinstance(case, dict):
        raise BadInput(f"{where}: each case must be a mapping with keys {sorted(_CASE_KEYS)}, got {case!r}")
    _reject_unknown(f"{where} case {case.get('name')!r}", case, _CASE_KEYS)
    dtype = case.get("dtype", suite_dtype)
    if dtype not in DTYPES:
        raise BadInput(f"{where} case {case.get('name')!r}: dtype must be one of {DTYPES}, got {dtype!r}")
    for dim in ("M", "K", "N"):
        value = case.get(dim)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise BadInput(f"{where} case {case.get('name')!r}: {dim} must be a positive integer, got {value!r}")
    if not isinstance(case.get("name"), str) or not case["name"]:
        raise BadInput(f"{where}: every case needs a name, got {case!r}")
    return Case(suite=suite, name=case["name"], M=case["M"], K=case["K"], N=case["N"], dtype=dtype)


def _reject_unknown(where: str, mapping: dict, allowed: set[str]) -> None:
    unknown = sorted(set(mapping) - allowed, key=str)
    if unknown:
        raise BadInput(f"{where}: unknown key {unknown[0]!r}; allowed: {sorted(allowed)}")
