"""Which Triton kernels a call launches, and on what grids: `launched(call)` runs the call and
returns the compiled kernels with their launch counts, in the order they were first launched.

A launch of a compiled Triton kernel through Triton, from a JIT function, an autotuner, a Gluon
kernel or `kernel[grid](...)` on a compiled one, asks its `CompiledKernel.launch_metadata(grid, stream,
*args)` for what to hand the launch hooks. For the call's length that method is wrapped to note
the kernel and grid first; what it returns is unchanged, so the launch is too. A Triton without
that method launches unseen: the call runs and nothing is recorded (`Launched.unrecorded` says
why). The kernels a subject launches some other way are not recorded: a vendor library's or a CUDA
extension's, and Inductor's for torch.compile, whose launchers skip `launch_metadata` unless a
launch hook is set (docs/method.md, "What changed in the compiled code").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

Grid = tuple[int, int, int]
_LOCK = threading.Lock()  # one recording at a time: the wrapped method is the class's
# Threads now waiting on a backward pass they started (`backward_of_this_thread`).
_WAITING: set[int] = set()


@dataclass
class Launched:
    """What one call launched: (kernel, grid) -> launches, in first-launch order."""

    kernels: dict[tuple[int, Grid], tuple[Any, int]] = field(default_factory=dict)
    unrecorded: str | None = None
    # Under `recording(capturing=True)`: launches made while the launching thread's stream was
    # not capturing, i.e. work outside the CUDA graph being captured.
    outside: int = 0

    @property
    def count(self) -> int:
        return sum(count for _, count in self.kernels.values())

    def note(self, kernel: Any, grid: Any) -> None:
        shape = _grid(grid)
        key = (id(kernel), shape)
        seen, count = self.kernels.get(key, (kernel, 0))
        self.kernels[key] = (seen, count + 1)

    def each(self) -> list[tuple[Any, Grid, int]]:
        return [(kernel, shape, count) for (_, shape), (kernel, count) in self.kernels.items()]


@contextmanager
def recording(capturing: bool = False) -> Iterator[Launched]:
    """Note every Triton kernel launched inside the `with` block; with `capturing` (the block
    captures a CUDA graph), count those launched on a stream that is not capturing."""
    launched = Launched()
    try:
        from triton.compiler.compiler import CompiledKernel
    except ImportError:
        launched.unrecorded = "Triton is not importable"
        yield launched
        return
    original = getattr(CompiledKernel, "launch_metadata", None)
    if not callable(original):
        launched.unrecorded = "this Triton's CompiledKernel has no launch_metadata to see launches through"
        yield launched
        return

    recorder = threading.get_ident()

    def noting(self: Any, grid: Any, *args: Any, **kwargs: Any) -> Any:
        # Another thread's launches (a shard on another GPU) are its own, but for autograd's: the
        # backward the recording thread waits on.
        if threading.get_ident() == recorder or (recorder in _WAITING and _in_backward()):
            launched.note(self, grid)
            if capturing and not _stream_capturing():
                launched.outside += 1
        return original(self, grid, *args, **kwargs)

    with _LOCK:
        CompiledKernel.launch_metadata = noting
        try:
            yield launched
        finally:
            CompiledKernel.launch_metadata = original


@contextmanager
def backward_of_this_thread() -> Iterator[None]:
    """Within it, the Triton launches of a backward pass (autograd running a graph task) count
    as this thread's, whichever thread makes them: on a GPU autograd runs a backward on a thread
    of its own per device, while the thread that asked for it waits (measuring/modes.py;
    experiments/2026-12-07-h100-backward-capture, backward_threads.py)."""
    me = threading.get_ident()
    _WAITING.add(me)
    try:
        yield
    finally:
        _WAITING.discard(me)


def _in_backward() -> bool:
    import torch

    return bool(torch._C._current_graph_task_id() != -1)


def launched(call: Callable[[], Any]) -> tuple[Any, Launched]:
    """The call's result, and what it launched."""
    with recording() as seen:
        result = call()
    return result, seen


def _grid(grid: Any) -> Grid:
    """A launch's grid as three integers (Triton's launchers take one to three)."""
    try:
        values = [int(g) for g in tuple(grid)[:3]]
    except (TypeError, ValueError):
        return (0, 0, 0)
    return (*values, *([1] * (3 - len(values))))  # type: ignore[return-value]


def _stream_capturing() -> bool:
    import torch

    return bool(torch.cuda.is_current_stream_capturing())
