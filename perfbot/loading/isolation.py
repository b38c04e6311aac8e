"""Each checkout's own packages, imported from that checkout.

A subject may import its project's packages by their names (`from pkg.ops.k import f`), as
real kernel repositories do (kernels under `src/pkg/ops/`, the package installed with
`pip install -e`). Python would give both sides of an A/B whichever copy it finds first, so
while a side's subject is imported, the checkout's own top-level packages are imported from
that checkout only, as modules of their own: a finder ahead of every other (an editable
install's finder, a `.pth` entry, sys.path) resolves their names to the checkout, and modules
of those names already imported are set aside. Afterwards the side's modules are taken out of
sys.modules (the subject's functions hold them) and what was there before is put back, so the
other side, or the confirming A/B's fresh import, imports its own copy. provenance.py checks
the outcome.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

# Never one of a checkout's own: the tool that judges (its Subject is the running perfbot's).
TOOL = __name__.partition(".")[0]


def own_packages(root: Path) -> dict[str, Path]:
    """The top-level packages and modules of the checkout at `root`, each with the directory
    that holds it: packages (folders with an __init__.py) and modules (.py files) at the root,
    and every package, module or namespace folder under src/, which wins over the root for a
    name in both (an installed src layout imports from there). perfbot's own and the standard
    library's names are never the checkout's."""
    found: dict[str, Path] = {}
    src = root / "src"
    for folder, namespaces in ((root, False), (src, True)):
        if not folder.is_dir():
            continue
        for entry in sorted(folder.iterdir()):
            name = entry.stem if entry.suffix == ".py" else entry.name
            package = entry.is_dir() and (namespaces or (entry / "__init__.py").is_file())
            module = entry.is_file() and entry.suffix == ".py"
            ordinary = name.isidentifier() and not name.startswith("__")  # not __pycache__, __init__
            if (package or module) and ordinary and name != TOOL and name not in sys.stdlib_module_names:
                found[name] = folder
    return found


class _CheckoutFinder(importlib.abc.MetaPathFinder):
    """Finds the checkout's own top-level names in the checkout; their submodules are then found
    through their package's __path__, which is the checkout's."""

    def __init__(self, places: Mapping[str, Path]):
        self.places = places

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        folder = self.places.get(fullname)
        return importlib.machinery.PathFinder.find_spec(fullname, [str(folder)]) if folder is not None else None


def _take(names: Mapping[str, Path]) -> dict[str, ModuleType]:
    """Remove from sys.modules, and return, the modules of these top-level names."""
    taken = {key: module for key, module in sys.modules.items() if key.partition(".")[0] in names}
    for key in taken:
        del sys.modules[key]
    return taken


@contextmanager
def own_imports(root: Path) -> Iterator[dict[str, ModuleType]]:
    """Within it, the checkout's own packages are imported from `root`, anew; on leaving, the
    modules imported of them are moved from sys.modules into the dict it yields, and whatever
    modules of those names were there before come back."""
    places = own_packages(root)
    imported: dict[str, ModuleType] = {}
    before = _take(places)
    finder = _CheckoutFinder(places)
    sys.meta_path.insert(0, finder)
    importlib.invalidate_caches()  # a checkout made a moment ago: no directory listing cached from before
    try:
        yield imported
    finally:
        sys.meta_path.remove(finder)
        imported.update(_take(places))
        sys.modules.update(before)
