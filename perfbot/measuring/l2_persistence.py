"""L2 set aside for persisting lines: residue a subject could leave between samples.

Since Ampere, a process may set part of L2 aside for lines it marks persisting
(`cudaLimitPersistingL2CacheSize`, then an access-policy window on a stream or a graph's kernels).
Lines in that part survive the flush perfbot runs before each sample, so a kernel that marks its
inputs persisting finds them in L2 on every replay, and reads as faster than it would run in a
model (pygpubench#49). With nothing set aside, a window has no effect.

The worker sets the limit to 0 before it imports the subject (`start_clean`), resets it and every
persisting line again before it checks and captures each case, and looks at the limit after each
request (worker.serve): a subject that set any L2 aside is refused, exit 2. The calls are the
driver's (`libcuda`, which every CUDA GPU's driver installs): PyTorch does not expose them, and
the limit belongs to the context the subject shares.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Protocol

PERSISTING_L2_LIMIT = 0x06  # CU_LIMIT_PERSISTING_L2_CACHE_SIZE


class Driver(Protocol):
    """What perfbot asks of the driver. `set_aside`: the bytes of L2 set aside, None where no CUDA
    context is current in this thread or the GPU has no persisting L2."""

    def set_aside(self) -> int | None: ...

    def reset(self) -> None: ...


class _Libcuda:
    def __init__(self, library: ctypes.CDLL):
        self.library = library

    def _context(self) -> bool:
        context = ctypes.c_void_p()
        return self.library.cuCtxGetCurrent(ctypes.byref(context)) == 0 and bool(context.value)

    def set_aside(self) -> int | None:
        value = ctypes.c_size_t()
        if not self._context() or self.library.cuCtxGetLimit(ctypes.byref(value), PERSISTING_L2_LIMIT) != 0:
            return None  # no context yet, or a GPU without persisting L2 (before Ampere)
        return int(value.value)

    def reset(self) -> None:
        if not self._context():
            return
        # Each fails harmlessly on a GPU without persisting L2: nothing is set aside there.
        self.library.cuCtxSetLimit(PERSISTING_L2_LIMIT, ctypes.c_size_t(0))
        self.library.cuCtxResetPersistingL2Cache()


class _Absent:
    """No CUDA driver (the CPU): nothing can be set aside."""

    def set_aside(self) -> int | None:
        return None

    def reset(self) -> None:
        pass


@functools.cache
def driver() -> Driver:
    """The CUDA driver's calls, or none where there is no driver."""
    try:
        return _Libcuda(ctypes.CDLL("libcuda.so.1"))
    except OSError:
        return _Absent()


def start_clean() -> None:
    """Before the subject is imported: this process's CUDA context made (on a GPU), and nothing
    set aside in it, whatever the environment asked for
    (CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT). What is set aside then is the
    baseline: where the limit cannot be reset (a GPU shared through MPS, say), the subject is
    blamed only for a change it made."""
    import torch

    if torch.cuda.is_available():
        torch.zeros(1, device="cuda")
    driver().reset()
    _baseline[0] = driver().set_aside()


_baseline: list[int | None] = [None]  # the bytes set aside when start_clean ran


def residue() -> str | None:
    """What a subject left set aside, in words for a refusal; None if nothing beyond the baseline."""
    held = driver().set_aside()
    if not held or held == _baseline[0]:
        return None
    return f"the subject set {held} bytes of L2 aside for persisting lines (cudaLimitPersistingL2CacheSize)"
