"""One ptxas for a whole run. torch.compile's first compile sets TRITON_PTXAS_PATH to the ptxas
that PyTorch ships, unless it is set already (torch/_inductor/runtime/compile_tasks.py), so a
Triton kernel compiled before a torch.compile'd baseline first runs and one compiled after it
get different machine code: two sides of an A/A, compiled in the order a round draws, differed
so on the H200 (docs/method.md, "One ptxas for a run"). Pinning the variable before any subject
code runs keeps every kernel of the run on the ptxas Triton chooses itself.
"""

from __future__ import annotations

import os

PTXAS_VARIABLE = "TRITON_PTXAS_PATH"


def pin_ptxas() -> str | None:
    """Set TRITON_PTXAS_PATH to the ptxas Triton would use now (the one it ships, unless the
    variable names another already); the path, or None without Triton's NVIDIA backend."""
    if os.environ.get(PTXAS_VARIABLE):
        return os.environ[PTXAS_VARIABLE]
    try:
        from triton import knobs

        path = str(knobs.nvidia.ptxas.path)
    except (ImportError, AttributeError, RuntimeError):
        return None
    os.environ[PTXAS_VARIABLE] = path
    return path
