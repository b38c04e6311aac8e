"""The subject: what a repository declares so that perfbot can check and time its kernels.

A repository names a Python package in `[tool.perfbot] kernels` (default `kernels`); the
package defines `subject`, a `Subject`, and registers its implementations on it:

    from perfbot import Subject

    subject = Subject(
        name="rmsnorm",
        inputs=make_inputs,           # (case, generator) -> the inputs, on the generator's device
        reference=rmsnorm_float64,    # (*inputs, **variant) -> the trusted result (float64)
        tolerance={"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2},  # relative error, per dtype
        bytes=lambda case: ...,       # optional: the fewest bytes moved, for GB/s
        suites="suites.yaml",         # beside the package's __init__.py, or a dict of Suite
    )

    @subject.implementation("triton", under_test=True)
    def triton_rmsnorm(x, weight, offset="0"): ...

    @subject.implementation("torch")
    def torch_rmsnorm(x, weight): ...

Every implementation is called as `fn(*inputs, **variant)`. A variant is a named parameter
whose values the subject lists, the default first (`variants={"offset": ("0", "1")}`);
an implementation takes all of them unless it says which (`variants=()` for none). One may bring
its own reference, flops and bytes (a bound: a copy of the input, beside a kernel that reads it
once). Cases are named sets of integer parameters (`{name: wide, rows: 4096, cols: 8192}`) and a
dtype; suites group them
and say which implementations they time.

perfbot loads the package by path (`load_subject`), under a name unique to its path, and the
checkout's own packages it imports by name from that checkout (isolation.py), so that two
checkouts (an A/B run, a bisect) load side by side in one process, each running its own code;
which files that code came from is recorded (provenance.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, NotRequired

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from ..config import find_project_root
from ..errors import BadInput, listed
from ..records.schema import MAX_DIM, MAX_ITEMS, MAX_NAME, MAX_TEXT, Name, Text, clean, load_yaml, shown, validate
from . import guard, isolation, provenance

Params = dict[str, int]


@dataclass(frozen=True)
class Case:
    """One named set of parameters of a suite, with its dtype. `case.M` reads parameter M."""

    suite: str
    name: str
    params: Params
    dtype: str

    def __getattr__(self, name: str) -> int:
        params = self.__dict__.get("params", {})
        if name in params:
            return int(params[name])
        raise AttributeError(f"case {self.__dict__.get('name')!r} has no parameter {name!r}")

    @property
    def shape(self) -> Params:
        return dict(self.params)


@dataclass(frozen=True)
class Suite:
    name: str
    about: str
    implementations: tuple[str, ...]
    cases: tuple[Case, ...]


@dataclass(frozen=True)
class Implementation:
    """One way of computing what the subject computes, timed beside the others."""

    name: str
    fn: Callable[..., Any]  # fn(*inputs, **variant) -> the output
    under_test: bool = False  # the subject's own kernel, as opposed to a baseline
    # A bound, not an alternative: the same inputs doing less (a copy of them, the kernel's main
    # operation alone): shown beside the kernel as a ceiling of its speed, never counted as a baseline.
    bound: bool = False
    variants: tuple[str, ...] | None = None  # the variant parameters it takes; None: all the subject's
    reference: Callable[..., Any] | None = None  # its own trusted result, if not the subject's
    flops: Callable[[Case], int] | None = None
    bytes: Callable[[Case], int] | None = None
    config: Callable[..., dict[str, Any] | None] | None = None  # config(*inputs): its launch config, recorded


@dataclass
class Subject:
    """What a repository measures: how to make inputs for a case, the trusted result and how close
    an implementation must come to it, the implementations, and the suites of cases."""

    name: str
    inputs: Callable[..., Sequence[Any]]  # inputs(case, generator) -> tensors on generator.device
    reference: Callable[..., Any]  # reference(*inputs, **variant) -> the trusted result
    tolerance: Mapping[str, float]  # dtype -> the largest relative error (Frobenius) accepted
    suites: Path | str | Mapping[str, Suite] = "suites.yaml"
    flops: Callable[[Case], int] | None = None
    bytes: Callable[[Case], int] | None = None
    variants: Mapping[str, Sequence[str]] = field(default_factory=dict)  # name -> values, the default first
    # (suite, case) that `perfbot selftest` measures when none is named; else the first case there is.
    default_case: tuple[str, str] | None = None
    implementations: dict[str, Implementation] = field(default_factory=dict)

    def implementation(
        self,
        name: str,
        *,
        under_test: bool = False,
        bound: bool = False,
        variants: Sequence[str] | None = None,
        reference: Callable[..., Any] | None = None,
        flops: Callable[[Case], int] | None = None,
        bytes: Callable[[Case], int] | None = None,
        config: Callable[..., dict[str, Any] | None] | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register the decorated function as an implementation (see the module's docstring)."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.add(
                Implementation(
                    name,
                    fn,
                    under_test=under_test,
                    bound=bound,
                    variants=tuple(variants) if variants is not None else None,
                    reference=reference,
                    flops=flops,
                    bytes=bytes,
                    config=config,
                )
            )
            return fn

        return register

    def add(self, implementation: Implementation) -> None:
        if implementation.name in self.implementations:
            raise ValueError(f"subject {self.name!r}: implementation {implementation.name!r} is registered twice")
        unknown = [v for v in implementation.variants or () if v not in self.variants]
        if unknown:
            raise ValueError(
                f"subject {self.name!r}: implementation {implementation.name!r} takes variant "
                f"{unknown[0]!r}, which the subject does not declare ({sorted(self.variants)})"
            )
        self.implementations[implementation.name] = implementation

    def takes(self, implementation: Implementation) -> tuple[str, ...]:
        """The variant parameters an implementation takes."""
        return tuple(self.variants) if implementation.variants is None else implementation.variants

    def defaults(self) -> dict[str, str]:
        return {name: str(values[0]) for name, values in self.variants.items()}


@dataclass(frozen=True)
class Loaded:
    """A subject loaded from a package, with its suites parsed."""

    path: Path  # the package's folder
    subject: Subject
    suites: dict[str, Suite]
    module: str  # the package's name in sys.modules
    root: Path  # the checkout it belongs to
    # The checkout's own packages, as this load imported them by name: kept out of sys.modules
    # (isolation.py), so that another load imports its own copy.
    modules: Mapping[str, ModuleType]
    sources: provenance.Sources  # the files each implementation's code came from

    @property
    def implementations(self) -> dict[str, Implementation]:
        return self.subject.implementations

    def case(self, suite: str | None, name: str | None) -> Case:
        """A case by suite and name. Neither given: the subject's default case, else the first
        case there is; a name alone: the case of that name in the default case's suite, else in
        the one suite that has it; a suite alone: its first case."""
        default_suite = self.subject.default_case[0] if self.subject.default_case else next(iter(self.suites))
        if suite is None and name is None and self.subject.default_case is not None:
            suite, name = self.subject.default_case
        if suite is None and name is not None:
            having = [s.name for s in self.suites.values() if any(c.name == name for c in s.cases)]
            if default_suite in having:
                having = [default_suite]
            if len(having) > 1:
                raise BadInput(f"case {name!r} is in suites {listed(having)}: name one with --suite")
            if not having:
                raise BadInput(f"no suite has a case {name!r}; `perfbot suites` lists them")
            suite = having[0]
        suite = suite or default_suite
        if suite not in self.suites:
            raise BadInput(f"unknown suite {suite!r}; known: {listed(self.suites)}")
        cases = self.suites[suite].cases
        found = next((c for c in cases if c.name == name), None) if name else cases[0]
        if found is None:
            raise BadInput(f"suite {suite} has no case {name!r}; it has {listed(c.name for c in cases)}")
        return found


def restrict(suites: Sequence[Suite], cases: set[tuple[str, str]]) -> list[Suite]:
    """The suites cut down to the given (suite, case) pairs."""
    kept = []
    for suite in suites:
        chosen = tuple(c for c in suite.cases if (suite.name, c.name) in cases)
        if chosen:
            kept.append(dataclasses.replace(suite, cases=chosen))
    return kept


def without_repeats(suites: Sequence[Suite]) -> list[Suite]:
    """The suites with each case that several of them hold (the same parameters and dtype) timed
    once per implementation: whole in the suite that times the most implementations (the first
    of those), and in each other suite only for the implementations that one lacks, as a suite of
    that one case. A run of several suites then times no benchmark twice (a results file holds
    each benchmark once) and leaves none out."""

    def key(case: Case) -> tuple[Any, ...]:
        return tuple(case.params.items()), case.dtype

    holders: dict[tuple[Any, ...], list[int]] = {}
    for index, suite in enumerate(suites):
        for case in suite.cases:
            holders.setdefault(key(case), []).append(index)
    keeper = {k: min(held, key=lambda i: -len(set(suites[i].implementations))) for k, held in holders.items()}
    timed = {k: set(suites[index].implementations) for k, index in keeper.items()}
    kept = []
    for index, suite in enumerate(suites):
        own = tuple(c for c in suite.cases if keeper[key(c)] == index)
        if own:
            kept.append(dataclasses.replace(suite, cases=own))
        for case in suite.cases:
            lacking = [name for name in suite.implementations if name not in timed[key(case)]]
            if keeper[key(case)] != index and lacking:
                timed[key(case)].update(lacking)
                kept.append(dataclasses.replace(suite, implementations=tuple(lacking), cases=(case,)))
    return kept


def load_subject(package: Path, instance: str = "", limit: float | None = None) -> Loaded:
    """Import the package at `package` by path and take its `subject`. Under a name unique to its
    path, so that two checkouts (an A/B run, a bisect) can be loaded side by side in one process,
    with the checkout's own packages that it imports by name imported from the checkout
    (isolation.py); another `instance` imports the same files again, those packages too, as
    modules of their own (whose kernels Triton then loads anew). Everything the subject declares
    is checked here, so that a mistake in it is one line naming it (exit 2), not a failure in the
    middle of a run. Importing may take `limit` seconds at most (guard.py; by default
    guard.IMPORT_LIMIT_S)."""
    init = package / "__init__.py"
    if not init.is_file():
        raise BadInput(
            f"{package}: not a Python package (no __init__.py); [tool.perfbot] kernels names the "
            "package that defines `subject`"
        )
    root = _checkout(package)
    key = str(package.resolve()) + (f"\0{instance}" if instance else "")
    name = "perfbot_subject_" + hashlib.sha1(key.encode()).hexdigest()[:12]
    module = sys.modules.get(name)
    if module is None:
        with isolation.own_imports(root) as imported:
            module = _import(package, name, init, guard.IMPORT_LIMIT_S if limit is None else limit)
        _OWN_IMPORTS[name] = imported
    subject = getattr(module, "subject", None)
    if not isinstance(subject, Subject):
        raise BadInput(f"{package}: the package defines no `subject` (a perfbot.Subject); see docs/subject.md")
    _check_subject(package, subject)
    if isinstance(subject.suites, Mapping):
        suites = {
            key: _checked_suite(f"{package}: suite {shown(key)}", key, suite, subject)
            for key, suite in subject.suites.items()
        }
        if not suites:
            raise BadInput(f"{package}: subject {subject.name!r} has no suites")
    else:
        suites = load_suites(package / subject.suites, subject)
    functions = {implementation: impl.fn for implementation, impl in subject.implementations.items()}
    sources = provenance.of(root, functions, {*isolation.own_packages(root), name})
    modules = _OWN_IMPORTS.get(name, {})
    return Loaded(
        path=package, subject=subject, suites=suites, module=name, root=root, modules=modules, sources=sources
    )


# The checkout's own packages each loaded subject imported, by the subject's name in sys.modules.
_OWN_IMPORTS: dict[str, dict[str, ModuleType]] = {}


def _checkout(package: Path) -> Path:
    """The project the package belongs to: the nearest folder above it whose pyproject.toml has a
    [tool.perfbot] table, else the package's parent."""
    try:
        return find_project_root(package.parent)
    except BadInput:
        return package.parent.resolve()


def _import(package: Path, name: str, init: Path, limit: float) -> Any:
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(package)])
    if spec is None or spec.loader is None:
        raise BadInput(f"{package}: cannot be imported as a package")
    loader = spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        guard.call(f"{package}: importing the package", lambda: loader.exec_module(module), limit)
    except ModuleNotFoundError as error:
        _forget(name)
        if error.name in ("torch", "triton"):
            raise  # the CLI says which extra to install
        raise BadInput(f"{package}: the package does not import: {error}") from None
    except (KeyboardInterrupt, guard.Refused):  # Ctrl-C; sys.exit, or out of time: said by the guard
        _forget(name)
        raise
    except Exception as error:  # noqa: BLE001 -- the subject's own code: its failure, in one line
        _forget(name)
        message = clean(str(error).splitlines()[0], 300) if str(error) else ""
        raise BadInput(f"{package}: the package does not import: {type(error).__name__}: {message}") from None
    return module


def _forget(name: str) -> None:
    for loaded in [key for key in sys.modules if key == name or key.startswith(name + ".")]:
        del sys.modules[loaded]


_NAME, _TEXT = TypeAdapter(Name), TypeAdapter(Text)


def _name(where: str, what: str, value: Any, adapter: TypeAdapter[str] = _NAME) -> None:
    """A name given in Python meets the rule the YAML files' names meet (docs/files.md): results
    record it, and reports print it."""
    try:
        adapter.validate_python(value, strict=True)
    except ValidationError:
        rule = f"1 to {MAX_NAME}" if adapter is _NAME else f"at most {MAX_TEXT:,}"
        raise BadInput(
            f"{where}: {what} must be a string of {rule} characters, no control characters, got {shown(value)}"
        ) from None


def _check_subject(package: Path, subject: Subject) -> None:
    """Everything the subject declares, of the types and within the limits the rest relies on."""
    _name(str(package), "the subject's name", subject.name)
    where = f"{package}: subject {subject.name!r}"
    for what in ("inputs", "reference"):
        if not callable(getattr(subject, what)):
            raise BadInput(f"{where}: {what} must be a function")
    for what in ("flops", "bytes"):
        if getattr(subject, what) is not None and not callable(getattr(subject, what)):
            raise BadInput(f"{where}: {what} must be a function of the case, or None")
    _check_implementations(where, subject)
    _check_tolerance(where, subject.tolerance)
    _check_variants(where, subject.variants)
    if not isinstance(subject.suites, str | Path | Mapping):
        raise BadInput(f"{where}: suites must be a file name or a dict of perfbot.Suite, got {shown(subject.suites)}")
    if isinstance(subject.suites, str | Path) and not str(subject.suites).isprintable():
        # The name goes into every message about the file: no line break or control character in it.
        raise BadInput(f"{where}: suites must name a file without control characters, got {shown(str(subject.suites))}")
    default = subject.default_case
    if default is not None and not (isinstance(default, tuple) and len(default) == 2):
        raise BadInput(f"{where}: default_case must be a (suite, case) pair, got {shown(default)}")
    for part in default or ():
        _name(where, "default_case", part)


def _check_implementations(where: str, subject: Subject) -> None:
    implementations = subject.implementations
    if not isinstance(implementations, dict) or not implementations:
        raise BadInput(f"{where} has no implementations")
    for key, implementation in implementations.items():
        _name(where, "an implementation's name", key)
        if not isinstance(implementation, Implementation) or implementation.name != key:
            raise BadInput(f"{where}: implementation {key!r} must be registered with @subject.implementation")
        if not callable(implementation.fn):
            raise BadInput(f"{where}: implementation {key!r} must be a function")
        for what in ("reference", "flops", "bytes", "config"):
            if getattr(implementation, what) is not None and not callable(getattr(implementation, what)):
                raise BadInput(f"{where}: implementation {key!r}: {what}= must be a function, or None")


def _check_tolerance(where: str, tolerance: Any) -> None:
    if not isinstance(tolerance, Mapping) or not tolerance:
        raise BadInput(f"{where}: tolerance must map each dtype to the largest relative error accepted")
    if len(tolerance) > 16:
        raise BadInput(f"{where}: at most 16 dtypes in tolerance, got {len(tolerance)}")
    for dtype, bound in tolerance.items():
        _name(where, "a dtype of the tolerance", dtype)
        if isinstance(bound, bool) or not isinstance(bound, int | float):
            raise BadInput(f"{where}: tolerance[{dtype!r}] must be a number, got {shown(bound)}")
        if not 0 <= bound < float("inf"):
            raise BadInput(f"{where}: tolerance[{dtype!r}] must be a finite number of at least 0, got {bound!r}")


def _check_variants(where: str, variants: Any) -> None:
    if not isinstance(variants, Mapping) or len(variants) > 16:
        raise BadInput(f"{where}: variants must map at most 16 parameters to their values, got {shown(variants)}")
    for parameter, values in variants.items():
        _name(where, "a variant parameter's name", parameter)
        if not isinstance(values, tuple | list) or not values or not all(isinstance(v, str) and v for v in values):
            raise BadInput(
                f"{where}: variants[{parameter!r}] must list its values as strings, the default first, "
                f"got {shown(values)}"
            )
        for value in values:
            _name(where, f"a value of variants[{parameter!r}]", value)
        if len(set(values)) != len(values):
            raise BadInput(f"{where}: variants[{parameter!r}] lists a value twice: {shown(list(values))}")


class _SuiteFields(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid", strict=True)  # type: ignore[misc]

    about: NotRequired[Text]
    dtype: NotRequired[Name]
    implementations: NotRequired[Annotated[list[Name], Field(min_length=1, max_length=64)]]
    kernels: NotRequired[Annotated[list[Name], Field(min_length=1, max_length=64)]]  # the older name
    # name, dtype, and integer parameters: checked one by one (_suite), to say which is wrong and why
    cases: Annotated[list[dict[Name, Name | int | float]], Field(min_length=1, max_length=MAX_ITEMS)]


_SUITES = TypeAdapter(Annotated[dict[Name, _SuiteFields], Field(min_length=1, max_length=256)])


def load_suites(path: Path, subject: Subject) -> dict[str, Suite]:
    """A suites file, validated whole (schema.py), then against the subject: every case has a name,
    integer parameters and a dtype the subject has a tolerance for; every implementation named exists.

        quick:
          about: small enough for Triton's interpreter
          dtype: float32
          implementations: [triton, torch]
          cases:
            - {name: odd, M: 33, N: 40}
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
        params = {k: v for k, v in fields.items() if k not in ("name", "dtype")}
        cases.append(Case(suite=name, name=case_name, params=params, dtype=dtype))
    implementations = body.get("implementations", body.get("kernels", list(subject.implementations)))
    suite = Suite(name=name, about=body.get("about", ""), implementations=tuple(implementations), cases=tuple(cases))
    return _checked_suite(where, name, suite, subject)


def _checked_suite(where: str, key: str, suite: Any, subject: Subject) -> Suite:
    """A suite, from YAML or from Python, checked against the subject: every implementation it
    names exists (once), every case has a unique name, a dtype the subject has a tolerance for
    and 1 to 16 integer parameters from 1 to 2^40."""
    if not isinstance(suite, Suite) or suite.name != key:
        raise BadInput(f"{where}: must be a perfbot.Suite named {shown(key)}")
    _name(where, "a suite's name", key)
    _name(where, "a suite's about", suite.about, _TEXT)
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
        _name(where, "a case's name", case.name)
        if not isinstance(case.params, Mapping):
            raise BadInput(f"{where} case {case.name!r}: parameters must be a dict, got {shown(case.params)}")
        for parameter in case.params:
            _name(f"{where} case {case.name!r}", "a parameter's name", parameter)
        if not isinstance(case.dtype, str) or case.dtype not in subject.tolerance:
            raise BadInput(
                f"{where} case {case.name!r}: dtype must be one the subject has a tolerance for "
                f"({shown(list(subject.tolerance))}), got {shown(case.dtype)}"
            )
        bad = [
            k for k, v in case.params.items() if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= MAX_DIM
        ]
        if bad or not case.params or len(case.params) > 16:
            raise BadInput(
                f"{where} case {case.name!r}: parameters must be 1 to 16 integers from 1 to 2^40"
                + (f", got {bad[0]}={shown(case.params[bad[0]])}" if bad else f", got {len(case.params)}")
            )
    names = [case.name for case in suite.cases]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise BadInput(f"{where}: case name {duplicates[0]!r} appears twice")
    return suite
