"""One ptxas and one Triton cache for a whole run. PyTorch's Inductor changes both at its first
compile, unless they are set already: `TRITON_PTXAS_PATH` to the ptxas PyTorch ships
(torch/_inductor/runtime/compile_tasks.py) and `TRITON_CACHE_DIR` to a cache of its own
(torch/_inductor/runtime/triton_heuristics.py). A subject's Triton kernel compiled after a
torch.compile'd baseline first ran was then compiled by another ptxas, or compiled anew instead
of taken from the cache the other side had filled (with the other side's source paths as line
info): two sides of an A/A got different binaries so on the H200 (docs/method.md, "One ptxas
for a run"). Pinning both before any subject code runs keeps the run on what Triton chose.
"""

from __future__ import annotations

import os

PTXAS_VARIABLE = "TRITON_PTXAS_PATH"
CACHE_VARIABLE = "TRITON_CACHE_DIR"


def pin_toolchain() -> str | None:
    """Set TRITON_PTXAS_PATH to the ptxas Triton would use now (the one it ships, unless the
    variable names another already), and TRITON_CACHE_DIR likewise to its cache; the ptxas's
    path, or None without Triton's NVIDIA backend."""
    try:
        from triton import knobs

        ptxas = os.environ.get(PTXAS_VARIABLE) or str(knobs.nvidia.ptxas.path)
        cache = os.environ.get(CACHE_VARIABLE) or str(knobs.cache.dir)
    except (ImportError, AttributeError, RuntimeError):
        return None
    os.environ[PTXAS_VARIABLE] = ptxas
    os.environ[CACHE_VARIABLE] = cache
    return ptxas
