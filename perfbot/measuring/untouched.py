"""What a subject's code may not change in the process it runs in: perfbot's own code, and the
clocks and synchronisation a verdict rests on.

The subject's process notes them before the subject is imported (`Untouched()`), with every
perfbot module it will use already imported, and looks again after the subject has run
(`changed`). A module replaced in sys.modules, a function or class of perfbot's replaced (or its
`__code__`), or one of the clocks patched (`torch.cuda.Event.elapsed_time`, `time.perf_counter`
and the rest of CLOCKS) is named, and the parent refuses the run (exit 2).

What this cannot see: code that rewrites the process's memory below Python (ctypes) and puts
every object back as it was; and, in Python, what is not an object's identity or code: the
contents of a table perfbot keeps in a dict or list, a function's defaults and closure cells,
the function a decorator wraps, a property's getter, a member added to a class to shadow its
base's, a module's class swapped, or this note itself found through `gc` and edited.
docs/method.md ("What a subject can and cannot do to a verdict") says what stands behind the
verdict then: the checks of the outputs a graph replay left, and the roofline.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

TOOL = __name__.partition(".")[0]

# The clocks and synchronisation points a timing or a check reads, by (module, attribute path).
CLOCKS = (
    ("time", "perf_counter"),
    ("time", "perf_counter_ns"),
    ("time", "monotonic"),
    ("time", "monotonic_ns"),
    ("time", "time"),
    ("torch", "cuda.Event"),
    ("torch", "cuda.Event.record"),
    ("torch", "cuda.Event.elapsed_time"),
    ("torch", "cuda.Event.synchronize"),
    ("torch", "cuda.synchronize"),
    ("torch", "cuda.CUDAGraph.replay"),
    ("torch", "cuda.graph"),
    ("torch", "testing.assert_close"),
    ("torch", "allclose"),
    ("torch", "isfinite"),
)


# One watched object: its dotted name; the mapping it is found in (a module's namespace, a
# class's; None for sys.modules, read as it is then) and its key there; the object, and its code
# (None where it has none).
Watch = tuple[str, Any, str, object, object]
# Values of these exact types have no __module__ of their own: skipped before asking, which for
# them costs an AttributeError (most of a module's namespace is such values and imported modules).
_PLAIN = frozenset({str, int, float, bool, bytes, tuple, list, dict, set, frozenset, type(None), types.ModuleType})


class Untouched:
    """A note of what the subject may not change, taken now."""

    def __init__(self) -> None:
        self.noted = _watched()  # held, not copied: the objects themselves
        self.clocks = dict(_clocks())

    def changed(self, clocks_only: bool = False) -> list[str]:
        """What differs from the note: names, in a stable order. `clocks_only`: the clocks alone,
        a look of microseconds where the whole one takes a millisecond (after each timed round).
        The whole look reads each watched object where it was found, by its key, and builds no
        name unless it moved: a worker looks after every request."""
        now = dict(_clocks())
        moved = [name for name, seen in self.clocks.items() if not _same(now.get(name), seen)]
        if not clocks_only:
            moved += _moved(self.noted)
        return sorted(moved)

    def refusal(self, clocks_only: bool = False) -> str | None:
        """What the subject changed, as the line that refuses it (the first five names); None if
        nothing."""
        changed = self.changed(clocks_only)
        if not changed:
            return None
        more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        return f"the subject changed what it may not: {', '.join(changed[:5])}{more}"


def _same(now: tuple[object, object] | None, seen: tuple[object, object]) -> bool:
    return now is not None and now[0] is seen[0] and now[1] is seen[1]


def _moved(noted: list[Watch]) -> list[str]:
    """The names of the noted objects no longer where they were, or whose code changed. Missing
    keys are told by KeyError, not by a sentinel: a module global the subject could set."""
    moved = []
    for name, where, key, value, code in noted:
        try:
            found = (sys.modules if where is None else where)[key]
        except KeyError:
            moved.append(name)
            continue
        if found is not value or (code is not None and _code(found) is not code):
            moved.append(name)
    return moved


def _watched() -> list[Watch]:
    """perfbot's modules (as sys.modules holds them), the functions and classes each defines, and
    each class's members."""
    found: list[Watch] = []
    ours = sorted(item for item in _items(sys.modules) if item[0] == TOOL or item[0].startswith(TOOL + "."))
    for name, module in ours:
        if module is None:
            continue
        found.append((name, None, name, module, None))
        namespace = vars(module)
        for attribute, value in _items(namespace):
            if type(value) in _PLAIN or getattr(value, "__module__", None) != name:
                continue  # imported names are watched where they are defined
            found.append((f"{name}.{attribute}", namespace, attribute, value, _code(value)))
            if isinstance(value, type):
                members = vars(value)  # a live view of the class's namespace
                for member, function in _items(members):
                    found.append((f"{name}.{attribute}.{member}", members, member, function, _code(function)))
    return found


def _clocks() -> Iterator[tuple[str, tuple[object, object]]]:
    for home, path in CLOCKS:
        found: Any = sys.modules.get(home)
        for part in path.split("."):
            found = getattr(found, part, None)
        yield f"{home}.{path}", (found, _code(found))


def _items(mapping: Any) -> list[tuple[Any, Any]]:
    """A copy of a mapping's items that another thread may be changing (a subject's thread that
    imports, say): copied again until one copy ran through."""
    for _ in range(100):
        try:
            return list(mapping.items())
        except RuntimeError:  # it changed size while being copied
            continue
    raise RuntimeError("a module's namespace kept changing while perfbot looked at it")


def _code(value: object) -> object:
    """An object's code, held (the id of a freed one could be taken again); None if it has none."""
    function = getattr(value, "__func__", value)  # a classmethod or staticmethod: the function in it
    return getattr(function, "__code__", None)
