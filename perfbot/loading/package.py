"""A subject's package, imported by path (`load_subject`), and the subject it gives, checked and
with its suites parsed (`Loaded`)."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..config import find_project_root
from ..errors import BadInput, listed
from ..records.schema import clean
from . import guard, isolation, provenance
from .checks import check_subject
from .families import Families, combine
from .subject import FORWARD, Case, Implementation, Subject, Suite
from .suites import declared_suites


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
    def families(self) -> tuple[str, ...]:
        """The kernel families of a package's `subjects`; none for a package's one `subject`."""
        return tuple(self.subject.families) if isinstance(self.subject, Families) else ()

    @property
    def implementations(self) -> dict[str, Implementation]:
        return self.subject.implementations

    def case(self, suite: str | None, name: str | None, mode: str | None = None) -> Case:
        """A case by suite and name, in `mode` (None: the first mode it is timed in). Neither
        given: the subject's default case, else the first case there is; a name alone: the case of
        that name in the default case's suite, else in the one suite that has it, among the suites
        that time it in `mode` where any does (the forward where no mode is given); a suite alone:
        its first case."""
        default_suite = self.subject.default_case[0] if self.subject.default_case else next(iter(self.suites))
        if suite is None and name is None and self.subject.default_case is not None:
            suite, name = self.subject.default_case
        if suite is None and name is not None:
            having = [s.name for s in self.suites.values() if any(c.name == name for c in s.cases)]
            if mode is not None:  # the suites that time it in that mode, though the default's does not
                having = self._timing(having, name, mode) or having
            if default_suite in having:
                having = [default_suite]
            if len(having) > 1:  # of suites timing it in other modes too, the ones of the forward
                having = self._timing(having, name, FORWARD) or having
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
        if mode is not None and found.mode != mode:
            modes = [c.mode for c in cases if c.name == found.name]
            found = next((c for c in cases if c.name == found.name and c.mode == mode), None)
            if found is None:
                raise BadInput(
                    f"--mode: case {suite}/{name or cases[0].name} is not timed in {mode}, but in {listed(modes)}"
                )
        return found

    def _timing(self, suites: list[str], name: str, mode: str) -> list[str]:
        """Those of the suites that time the case of that name in `mode`."""
        return [s for s in suites if any(c.name == name and c.mode == mode for c in self.suites[s].cases)]


def load_subject(package: Path, instance: str = "", limit: float | None = None) -> Loaded:
    """Import the package at `package` by path and take its `subject`. Under a name unique to its
    path, so that two checkouts (an A/B run, a bisect) can be loaded side by side in one process,
    with the checkout's own packages that it imports by name imported from the checkout
    (isolation.py); another `instance` imports the same files again, those packages too, as
    modules of their own (whose kernels Triton then loads anew). Everything the subject declares
    is checked here (checks.py, suites.py), so that a mistake in it is one line naming it (exit 2), not a failure in the
    middle of a run. Importing may take `limit` seconds at most (guard.py; by default
    guard.IMPORT_LIMIT_S)."""
    init = package / "__init__.py"
    if not init.is_file():
        raise BadInput(
            f"{package}: not a Python package (no __init__.py); [tool.perfbot] kernels names the "
            "package that defines `subject` or `subjects`"
        )
    root = _checkout(package)
    key = str(package.resolve()) + (f"\0{instance}" if instance else "")
    name = "perfbot_subject_" + hashlib.sha1(key.encode()).hexdigest()[:12]
    module = sys.modules.get(name)
    if module is None:
        with isolation.own_imports(root) as imported:
            module = _import(package, name, init, guard.IMPORT_LIMIT_S if limit is None else limit)
        _OWN_IMPORTS[name] = imported
    subject, suites = _declared(package, module)
    functions = {implementation: impl.fn for implementation, impl in subject.implementations.items()}
    sources = provenance.of(root, functions, {*isolation.own_packages(root), name})
    modules = _OWN_IMPORTS.get(name, {})
    return Loaded(
        path=package, subject=subject, suites=suites, module=name, root=root, modules=modules, sources=sources
    )


def _declared(package: Path, module: Any) -> tuple[Subject, dict[str, Suite]]:
    """The package's `subject`, or its `subjects` (kernel families) combined into one
    (families.py), checked, with its suites."""
    subject, subjects = getattr(module, "subject", None), getattr(module, "subjects", None)
    if subjects is not None:
        if subject is not None:
            raise BadInput(f"{package}: the package defines both `subject` and `subjects`; keep one")
        return combine(package, subjects)
    if not isinstance(subject, Subject):
        raise BadInput(
            f"{package}: the package defines no `subject` (a perfbot.Subject) nor `subjects` (a list of them); "
            "see docs/subject.md"
        )
    check_subject(package, subject)
    return subject, declared_suites(package, subject)


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
