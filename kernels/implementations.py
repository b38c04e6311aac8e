"""Every way of computing the benchmark that perfbot times side by side.

- ``fused``: the Triton kernel of geglu.py;
- ``eager``: cuBLAS matmul, then chunk, gelu and multiply as separate PyTorch ops (the seed's
  forward pass);
- ``compiled``: ``torch.compile`` of eager, default mode;
- ``fused-pointer``: the fused kernel forced onto its pointer path (the path of GPUs without TMA);
- ``max-autotune``: ``torch.compile(mode="max-autotune-no-cudagraphs")`` of eager, each shape
  compiled and tuned for itself: what a user would pick instead of a hand-written kernel;
- ``gemm``: cuBLAS ``x @ weight.T`` alone, without the epilogue: the floor for the fused kernel;
- ``copy``: a device-to-device copy of weight, the memory-bandwidth ceiling for decode shapes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from .geglu import geglu, launch_plan

GegluFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def eager_geglu(x: torch.Tensor, weight: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    z = F.linear(x, weight)
    z1, z2 = z.chunk(2, dim=-1)
    return z1 * F.gelu(z2, approximate=approximate)


def gemm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return x @ weight.T


def copy_weight(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return weight.clone()


def _compile(**options) -> Callable[..., torch.Tensor]:
    """torch.compile of eager_geglu. A run compiles it for every case and GELU, in two modes, and
    dynamo keeps one cache per function: past its recompile limit (8) it silently runs the
    function eagerly, so a "compiled" baseline would be timed as eager (this happened on the
    H200). Raise the limit well past any suite, and make hitting it an error, not a fallback."""
    torch._dynamo.config.recompile_limit = 1024
    torch._dynamo.config.accumulated_recompile_limit = 4096
    torch._dynamo.config.fail_on_recompile_limit_hit = True
    return torch.compile(eager_geglu, **options)


@functools.cache
def _compiled_eager() -> Callable[..., torch.Tensor]:
    # One compiled function for the whole process, as a user would write it; dynamo
    # re-specializes on new shapes and on the `approximate` string.
    return _compile()


@functools.cache
def _max_autotuned_eager() -> Callable[..., torch.Tensor]:
    # dynamic=False: every shape gets kernels tuned for it, the strongest form of this baseline.
    return _compile(mode="max-autotune-no-cudagraphs", dynamic=False)


def _no_config(x: torch.Tensor, weight: torch.Tensor) -> dict | None:
    return None


@dataclass(frozen=True)
class Implementation:
    """One implementation; ``computes`` says which float64 reference it is checked against."""

    name: str
    computes: str  # "geglu", "matmul" or "copy" (of weight)
    build: Callable[[str], GegluFn]  # approximate -> function of (x, weight)
    config: Callable[[torch.Tensor, torch.Tensor], dict | None] = field(default=_no_config)


IMPLEMENTATIONS: dict[str, Implementation] = {
    impl.name: impl
    for impl in (
        Implementation(
            "fused",
            "geglu",
            lambda approximate: functools.partial(geglu, approximate=approximate),
            launch_plan,
        ),
        Implementation(
            "eager",
            "geglu",
            lambda approximate: functools.partial(eager_geglu, approximate=approximate),
        ),
        Implementation(
            "compiled",
            "geglu",
            lambda approximate: functools.partial(_compiled_eager(), approximate=approximate),
        ),
        Implementation(
            "fused-pointer",
            "geglu",
            lambda approximate: functools.partial(geglu, approximate=approximate, path="pointer"),
            functools.partial(launch_plan, path="pointer"),
        ),
        Implementation(
            "max-autotune",
            "geglu",
            lambda approximate: functools.partial(_max_autotuned_eager(), approximate=approximate),
        ),
        Implementation("gemm", "matmul", lambda approximate: gemm),
        Implementation("copy", "copy", lambda approximate: copy_weight),
    )
}
