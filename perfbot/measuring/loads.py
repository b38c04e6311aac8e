"""Fresh loads of a subject's Triton kernels, again and again within one A/B.

Triton loads a compiled kernel onto the GPU (cuModuleLoad) at its first call and keeps that load
for as long as the process lives, and one load of identical code can run a kernel measurably
slower or faster than another for as long as both last (docs/method.md, "Exchangeable sides"):
a bias fixed for the run, on the side that happened to get the worse load. So a
sequential A/B has Triton forget each side's compiled kernels every few blocks
(runner.LocalSides.recapture); the next call compiles them from Triton's cache on disk, which
loads them anew, wherever the driver now puts them. A load's bias then varies from block to
block like any other noise: it widens the interval instead of moving it.

Only the JIT functions found at module level in the subject's own modules, and in the modules
of its checkout's packages that it imported by name (subject.Loaded.modules), are loaded anew
(under `autotune` and `heuristics` too). Kernels a subject makes in a function, keeps in a
class or a dict, or launches through a wrapper with a cache of its own keep their first load.
Vendor libraries', PyTorch's and torch.compile's kernels are the same code on both sides,
loaded once.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from types import ModuleType
from typing import Any

# A sequential A/B's blocks per load: every this many blocks of four rounds, each side's kernels
# are loaded anew. What it costs a full-width run is in docs/method.md ("Exchangeable sides").
BLOCKS_PER_LOAD = 4
# The loads of a case's turn kept alive at most (their code stays on the GPU meanwhile): past
# this, the oldest are let go, and the driver may put a later load where one of them was.
MOST_HELD = 64


def triton_kernels(package: str, imported: Iterable[ModuleType] = ()) -> list[Any]:
    """The Triton JIT functions that the modules of the imported package `package` (its name in
    sys.modules), and the `imported` modules besides, define at module level, each once; none
    where Triton is absent or interpreted."""
    try:
        from triton.runtime.jit import JITFunction, KernelInterface
    except ImportError:
        return []
    found: dict[int, Any] = {}
    modules = [m for name, m in list(sys.modules.items()) if name == package or name.startswith(package + ".")]
    for module in [*modules, *imported]:
        for value in list(vars(module).values()):
            # autotune(heuristics(jit(f))): each of Triton's wrappers keeps the next in `fn`. Types
            # are asked with type(), which runs none of the subject's code; a wrapper of its own
            # whose `fn` raises is not a kernel found.
            for _ in range(8):
                if issubclass(type(value), JITFunction) or not issubclass(type(value), KernelInterface):
                    break
                try:
                    value = vars(value).get("fn")
                except Exception:  # noqa: BLE001 -- a wrapper of the subject's own, without a plain __dict__
                    break
            if issubclass(type(value), JITFunction):
                found[id(value)] = value
    return list(found.values())


def forget_compiled(kernels: list[Any]) -> list[Any]:
    """Make Triton forget what it has compiled and loaded of these kernels, so that their next
    call loads them anew. Returns what they held: keep it alive until nothing captured from it
    can run any more (a CUDA graph captured from a kernel calls into its load, and Triton unloads
    a kernel it no longer references). A Triton that keeps its compiled kernels elsewhere than in
    `device_caches` (as 3.6 does) or `cache` (as older releases did) is left as it is."""
    held = []
    for kernel in kernels:
        caches = getattr(kernel, "device_caches", None)
        if caches is None:
            caches = getattr(kernel, "cache", None)
        if isinstance(caches, dict) and caches:
            held.append(dict(caches))
            caches.clear()
    return held
