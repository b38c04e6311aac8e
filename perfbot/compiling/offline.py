"""Triton kernels compiled for a named GPU on a machine without one: `compiling_for(gpu)` makes
Triton's active driver one that compiles for that GPU's architecture (with the ptxas Triton
ships) and launches nothing. A subject's implementation then runs on CPU tensors: each Triton
kernel it launches is compiled, seen by launches.py and recorded like one that ran, and its
output is never computed (nothing checks it: `perfbot explain` times and checks nothing).

What a subject's host code needs for this: to accept CPU tensors while this driver is active
(`is_compiling_only()`), and to ask Triton's driver, not torch.cuda, for the GPU's properties:
`triton.runtime.driver.active.utils.get_device_properties(0)` gives the named GPU's, with its
"name". This repository's kernels do both; docs/explain.md says how far this gets on them.

Once per process: what a JIT function compiled within the block stays in its cache with the
named GPU's target and a launcher that launches nothing, so the same process must not launch
those kernels on a GPU afterwards (`perfbot explain` compiles in its own process and exits).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import BadInput, EnvironmentFailure


@dataclass(frozen=True)
class Gpu:
    name: str  # as the CUDA driver names it (torch.cuda.get_device_name)
    capability: tuple[int, int]
    sms: int
    max_shared_bytes: int  # per block, opted in


# What `explain --gpu-model` may name; the SM counts and shared memory are NVIDIA's data sheets'.
GPUS = {
    gpu.name: gpu
    for gpu in (
        Gpu("NVIDIA H200", (9, 0), 132, 232448),
        Gpu("NVIDIA H100 80GB HBM3", (9, 0), 132, 232448),
        Gpu("NVIDIA A100-SXM4-80GB", (8, 0), 108, 166912),
    )
}
DEFAULT_GPU = "NVIDIA H200"


def gpu_named(name: str) -> Gpu:
    if name not in GPUS:
        raise BadInput(f"no GPU named {name!r} to compile for; perfbot knows {', '.join(sorted(GPUS))}")
    return GPUS[name]


class _Utils:
    def __init__(self, gpu: Gpu) -> None:
        self.gpu = gpu

    def get_device_properties(self, device: int) -> dict[str, Any]:
        return {
            "name": self.gpu.name,
            "max_shared_mem": self.gpu.max_shared_bytes,
            "max_num_regs": 65536,
            "multiprocessor_count": self.gpu.sms,
            "warpSize": 32,
            "sm_clock_rate": 0,
            "mem_clock_rate": 0,
            "mem_bus_width": 0,
        }

    def load_binary(self, name: str, kernel: bytes, shared: int, device: int) -> tuple[int, int, int, int, int]:
        # (module, function, registers, spills, most threads): nothing is loaded; registers and
        # spills are read from the cubin instead (sass.py).
        return 0, 0, 0, 0, 1024


class _NotLaunched:
    """A launcher that launches nothing."""

    def __init__(self, src: Any, metadata: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        return None


class CompileOnlyDriver:
    """Triton's driver interface, for a GPU that is not here."""

    compile_only = True

    def __init__(self, gpu: Gpu) -> None:
        self.gpu = gpu
        self.utils = _Utils(gpu)
        self.launcher_cls = _NotLaunched

    @staticmethod
    def is_active() -> bool:
        return False

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        pass

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_device_capability(self, device: int = 0) -> tuple[int, int]:
        return self.gpu.capability

    def get_current_target(self) -> Any:
        from triton.backends.compiler import GPUTarget

        major, minor = self.gpu.capability
        return GPUTarget("cuda", major * 10 + minor, 32)

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device("cpu")

    def map_python_to_cpp_type(self, ty: str) -> str:
        from triton.backends.nvidia.driver import ty_to_cpp

        return str(ty_to_cpp(ty))

    def get_benchmarker(self) -> Any:
        raise EnvironmentFailure(
            f"a kernel autotuned while compiling for {self.gpu.name} without one: autotuning times "
            "candidates, and that needs the GPU"
        )

    def assemble_tensormap_to_arg(self, tensormaps_info: Any, args: Any) -> Any:
        return args


def is_compiling_only() -> bool:
    """Whether Triton's active driver is a compile-only one (never creates a driver)."""
    try:
        from triton.runtime import driver
    except ImportError:
        return False
    return bool(getattr(getattr(driver, "_active", None), "compile_only", False))


@contextmanager
def compiling_for(gpu: Gpu) -> Iterator[CompileOnlyDriver]:
    """Within the block, Triton compiles for `gpu` and launches nothing."""
    try:
        from triton.runtime import driver
    except ImportError:
        raise EnvironmentFailure("compiling for a GPU needs Triton: pip install 'perfbot[gpu]'") from None
    previous = getattr(driver, "_active", None)
    ours = CompileOnlyDriver(gpu)
    driver.set_active(ours)
    try:
        yield ours
    finally:
        driver._active = previous  # not reset_active(): that would create a CUDA driver here
