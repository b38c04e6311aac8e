"""Which files each implementation's code came from, with a sha256 digest of each: recorded with
every side's results, and checked across the two sides of an A/B (docs/subject.md, "How each
side's code is loaded"), so that one checkout measured twice is refused instead of reading "no
change".

An implementation's files are found from its function: the function's own file, then the
modules, functions, classes and Triton JIT functions it reaches through the globals its code
names, its closures and its defaults (a JIT function keeps the Python function in `fn`, and so
do `autotune` and `heuristics`), and theirs in turn. Followed are the subject's modules and the
checkout's own packages (isolation.py) wherever they were imported from, an installed copy
included, since that is the silent case to catch; and any other module whose file is not
installed. Never followed: the standard library, perfbot, PyTorch, Triton and installed
packages. Code a function imports only when it runs is not found.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FunctionType, MethodType, ModuleType
from typing import Any

from ..characters import DESCRIBED, has_control
from ..errors import BadInput
from ..records.schema import MAX_ITEMS

# The files recorded per implementation at most (results.Settings.sources); a project's own
# package, reached whole, has hundreds.
MOST_FILES = MAX_ITEMS
_MOST_ITEMS = 10_000  # of a list or dict searched for kernels: a bigger one is a table, not code
_NEVER = frozenset({"perfbot", "torch", "triton"}) | sys.stdlib_module_names
_INSTALLED = frozenset({"site-packages", "dist-packages"})
_HELP = "see docs/subject.md, 'How each side's code is loaded'"


@dataclass(frozen=True)
class Source:
    path: Path  # resolved
    module: str  # the name its code was imported under
    sha256: str


@dataclass(frozen=True)
class Sources:
    """One side's files, per implementation, and the checkout they should come from."""

    root: Path  # resolved
    files: Mapping[str, tuple[Source, ...]]

    def recorded(self) -> dict[str, dict[str, str]]:
        """As results record them: implementation -> {path: sha256}, a path relative to the
        checkout where the file is inside it, else absolute."""
        return {name: {self.shown(s.path): s.sha256 for s in files} for name, files in self.files.items()}

    def shown(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else str(path)


def of(root: Path, implementations: Mapping[str, Callable[..., Any]], project: Collection[str]) -> Sources:
    """The files of each implementation's code (the module's docstring says which are followed).
    `project`: the top-level module names that are the project's own wherever they were imported
    from (the checkout's packages, the subject's name)."""
    digests: dict[Path, str] = {}
    files = {}
    for name, fn in implementations.items():
        found = _files(fn, project)
        if len(found) > MOST_FILES:
            raise BadInput(f"implementation {name!r} reaches more than {MOST_FILES} files of code, perfbot's limit")
        for path in found:
            if has_control(str(path)):
                raise BadInput(f"implementation {name!r} runs code from a file whose path holds {DESCRIBED}")
            if path not in digests:
                try:
                    digests[path] = hashlib.sha256(path.read_bytes()).hexdigest()
                except OSError as error:
                    raise BadInput(f"implementation {name!r} runs code from {path}, unreadable: {error}") from None
        files[name] = tuple(Source(path, found[path], digests[path]) for path in sorted(found))
    return Sources(root.resolve(), files)


def check(sides: Mapping[str, Sources]) -> None:
    """Refuse, in one line, an A/B whose sides did not each run their own checkout's code: a file
    both sides ran where the two checkouts differ; a file of the other side's checkout; a copy of
    the checkout's own module, from elsewhere (an installed one), that differs from the checkout's."""
    ran = {side: {s.path for files in sources.files.values() for s in files} for side, sources in sides.items()}
    pairs = [(side, mine, other, theirs) for side, mine in sides.items() for other, theirs in sides.items()]
    pairs = [pair for pair in pairs if pair[0] != pair[2]]
    # A file that differs first: of the reasons to refuse, the one that says what would go wrong.
    for _, mine, other, theirs in pairs:
        for name, source in _each(mine):
            place = _counterpart(source, mine.root) or _counterpart(source, theirs.root)
            if source.path in ran[other] and place and _digest(mine.root / place) != _digest(theirs.root / place):
                raise BadInput(
                    f"implementation {name!r}: both sides ran {source.path}, but the checkouts differ in {place}; "
                    f"one checkout would be measured twice ({_HELP})"
                )
    for side, mine, other, theirs in pairs:
        for name, source in _each(mine):
            if source.path.is_relative_to(theirs.root) and not source.path.is_relative_to(mine.root):
                raise BadInput(
                    f"implementation {name!r} of the {side} side ran {source.path}, a file of the {other} side's "
                    f"checkout ({_HELP})"
                )
    for side, mine in sides.items():
        for name, source in _each(mine):
            place = None if source.path.is_relative_to(mine.root) else _counterpart(source, mine.root)
            if place and _digest(mine.root / place) != source.sha256:
                raise BadInput(
                    f"implementation {name!r} of the {side} side ran {source.path}, not its checkout's {place}, "
                    f"which differs: a copy installed or found elsewhere ({_HELP})"
                )


def _each(sources: Sources) -> list[tuple[str, Source]]:
    return [(name, source) for name, files in sources.files.items() for source in files]


def _counterpart(source: Source, root: Path) -> str | None:
    """Where the checkout at `root` holds the file of this source's module: its place there if it
    is inside, else the module's own place (under src/ or the root) if the checkout has one."""
    if source.path.is_relative_to(root):
        return source.path.relative_to(root).as_posix()
    parts = source.module.split(".")
    inside = Path(*parts) if source.path.stem == "__init__" else Path(*parts[:-1])
    for folder in ("src", "."):
        candidate = Path(folder) / inside / source.path.name
        if (root / candidate).is_file():
            return candidate.as_posix()
    return None


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def _files(fn: Any, project: Collection[str]) -> dict[Path, str]:
    """Every file reached from `fn` (module's docstring), with the module it was imported as."""
    found: dict[Path, str] = {}
    seen: set[int] = set()
    todo = [fn]
    while todo:
        value = todo.pop()
        if id(value) not in seen:
            seen.add(id(value))
            todo += _reached(value, project, found)
    return found


def _reached(value: Any, project: Collection[str], found: dict[Path, str]) -> list[Any]:
    """What `value` leads to, recording its file in `found` if it is code that is followed. Asks
    types with type() and namespaces through object's own lookup: none of the subject's code runs."""
    kind = type(value)
    if kind is FunctionType:
        return _function(value, project, found)
    if kind is MethodType:
        return [value.__func__, value.__self__]
    if kind is functools.partial:
        return [value.func, *value.args, *value.keywords.values()]
    if kind in (staticmethod, classmethod):
        return [value.__func__]
    if kind is property:
        return [value.fget, value.fset, value.fdel]
    if kind in (list, tuple, set, frozenset):
        return list(value) if len(value) <= _MOST_ITEMS else []
    if kind is dict:
        return list(value.values()) if len(value) <= _MOST_ITEMS else []
    if isinstance(value, ModuleType):
        namespace = _namespace(value)
        module, file = namespace.get("__name__"), namespace.get("__file__")
        if isinstance(module, str) and isinstance(file, str) and _followed(module, file, project):
            _add(found, file, module)
            return list(namespace.values())
        return []
    if isinstance(value, type):
        module = _namespace(value).get("__module__")
        if not isinstance(module, str) or _top(module) in _NEVER:
            return []
        bases = type.__getattribute__(value, "__mro__")[1:-1]
        return [*_namespace(value).values(), *bases]  # its methods decide by their files
    owner = _namespace(kind).get("__module__")
    if not isinstance(owner, str):
        return []
    if _top(owner) == "triton":  # jit, autotune, heuristics: each keeps the function it wraps in `fn`
        return [_namespace(value).get("fn")]
    if _top(owner) in project:  # an object of the project's own class: a launcher, a kernel holder
        return [kind, *_namespace(value).values()]
    return []


def _function(fn: FunctionType, project: Collection[str], found: dict[Path, str]) -> list[Any]:
    wrapped = _namespace(fn).get("__wrapped__")  # functools.wraps: a decorator's, or torch.compile's
    module = fn.__globals__.get("__name__")
    if not isinstance(module, str) or not _followed(module, fn.__code__.co_filename, project):
        return [wrapped]
    _add(found, fn.__code__.co_filename, module)
    names = [fn.__globals__[name] for name in _names(fn.__code__) if name in fn.__globals__]
    cells = []
    for cell in fn.__closure__ or ():
        try:
            cells.append(cell.cell_contents)
        except ValueError:  # a cell not filled yet
            continue
    return [*names, *cells, *(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values(), wrapped]


def _names(code: CodeType) -> set[str]:
    """The global (and attribute) names a code object and the code nested in it name."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            names |= _names(constant)
    return names


def _followed(module: str, file: str, project: Collection[str]) -> bool:
    top = _top(module)
    if top in project:
        return True
    return top not in _NEVER and not _INSTALLED.intersection(Path(file).parts)


def _top(module: str) -> str:
    return module.partition(".")[0]


def _add(found: dict[Path, str], file: str, module: str) -> None:
    """Record a module's file, and the __init__.py of each package it was imported through: they
    ran first, and a change there (a config set, a function swapped) changes what it runs."""
    path = Path(file)
    if not path.is_file():  # not "<string>", nor a file gone since
        return
    found.setdefault(path.resolve(), module)
    packages = module.split(".")[:-1]
    folder = path.parent.parent if path.name == "__init__.py" else path.parent
    while packages:
        init = folder / "__init__.py"
        if init.is_file():  # a namespace package has none
            found.setdefault(init.resolve(), ".".join(packages))
        packages, folder = packages[:-1], folder.parent


def _namespace(value: Any) -> dict[str, Any]:
    """The object's own namespace, read without running any of its code (no __getattr__)."""
    try:
        namespace = object.__getattribute__(value, "__dict__")
    except Exception:  # noqa: BLE001 -- an object without a namespace of its own
        return {}
    return dict(namespace) if isinstance(namespace, Mapping) else {}
