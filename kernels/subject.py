"""The subject perfbot measures here: the fused GeGLU, forward and backward, and what it is
measured against.

    [z1 | z2] = x @ weight.T,  out = z1 * gelu(z2)     x: [M, K], weight: [2N, K], out: [M, N]

Implementations:
- ``fused`` (under test): the Triton kernel of geglu.py;
- ``fused-pointer`` (under test): the same kernel forced onto its pointer path, the path of GPUs
  without TMA;
- ``fused-epilogue`` (under test): geglu's epilogue path, cuBLAS's matmul then one elementwise
  kernel, on every shape; ``fused`` takes it only where its rule predicts the fused launch loses;
- ``fused-launch`` (under test): the fused kernels' launch on every shape, even where ``fused``
  takes the epilogue path: what that rule is judged against;
- ``eager``: cuBLAS matmul, then chunk, gelu and multiply as separate PyTorch ops (the seed
  issue's forward pass);
- ``compiled``: ``torch.compile`` of eager, default mode;
- ``max-autotune``: ``torch.compile(mode="max-autotune-no-cudagraphs")`` of eager, each shape
  compiled and tuned for itself: what a user would pick instead of a hand-written kernel;
- ``gemm`` (a bound): cuBLAS ``x @ weight.T`` alone, without the epilogue: the floor of the
  fused kernel's time; in a backward mode, cuBLAS computing dx and dW alone, the floor of the
  fused backward's;
- ``copy`` (a bound): a device-to-device copy of weight, the memory-bandwidth ceiling of the
  decode shapes.

fused, fused-pointer, fused-epilogue and fused-launch are differentiable through geglu's autograd.Function
(its backward is geglu_backward.py's); eager, compiled, max-autotune and gemm through PyTorch.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from perfbot import Case, Subject

from .geglu import geglu, launch_plan

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
BYTES_PER_ELEMENT = {"float16": 2, "bfloat16": 2, "float32": 4}


def make_inputs(case: Case, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh random inputs, scaled so that z = x @ weight.T is of order 1."""
    dtype, device = DTYPES[case.dtype], generator.device
    x = torch.randn(case.M, case.K, generator=generator, device=device).to(dtype)
    weight = (torch.randn(2 * case.N, case.K, generator=generator, device=device) / case.K**0.5).to(dtype)
    return x, weight


def geglu_float64(x: torch.Tensor, weight: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    z1, z2 = (x.double() @ weight.double().T).chunk(2, dim=-1)
    return z1 * F.gelu(z2, approximate=approximate)


def matmul_float64(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return x.double() @ weight.double().T


def weight_float64(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return weight.double()


# Matmuls of the size of x @ weight.T each mode does: the forward one; the backward two (dx and
# dW); a training step all three.
MATMULS = {"forward": 1, "backward": 2, "forward+backward": 3}


def matmul_flops(case: Case) -> int:
    # The matmuls' multiply-adds; the GeGLU epilogue and its derivative are O(M N), left out.
    return 2 * case.M * case.K * 2 * case.N * MATMULS[case.mode]


def _bytes(case: Case, outputs: int) -> int:
    """The fewest bytes moved: in the forward, x and weight read once and `outputs` elements
    written once; the backward reads x, weight and the gradient of the output (`outputs`
    elements) and writes dx and dW; a training step does both."""
    forward = case.M * case.K + 2 * case.N * case.K + outputs
    backward = 2 * (case.M * case.K + 2 * case.N * case.K) + outputs
    elements = {"forward": forward, "backward": backward, "forward+backward": forward + backward}[case.mode]
    return elements * BYTES_PER_ELEMENT[case.dtype]


subject = Subject(
    name="geglu",
    inputs=make_inputs,
    reference=geglu_float64,
    # Every implementation must pass, eager included, and eager rounds three times (the matmul's
    # output, gelu, the product): about 2-3 units of roundoff of the dtype (bf16: 2^-8, fp16:
    # 2^-11). A wrong kernel (a swapped half, a missing tile, the wrong gelu) is off by order 1.
    tolerance={"bfloat16": 1e-2, "float16": 2e-3, "float32": 1e-5},
    suites="suites.yaml",
    flops=matmul_flops,
    bytes=lambda case: _bytes(case, case.M * case.N),
    variants={"approximate": ("none", "tanh")},  # F.gelu's: the erf GELU, or its tanh approximation
    default_case=("pr", "t5-v1.1-xl"),
)


@subject.implementation("fused", under_test=True, config=launch_plan)
def fused(x: torch.Tensor, weight: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return geglu(x, weight, approximate=approximate)


@subject.implementation("fused-pointer", under_test=True, config=functools.partial(launch_plan, path="pointer"))
def fused_pointer(x: torch.Tensor, weight: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return geglu(x, weight, approximate=approximate, path="pointer")


@subject.implementation("fused-epilogue", under_test=True, config=functools.partial(launch_plan, path="epilogue"))
def fused_epilogue(x: torch.Tensor, weight: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """cuBLAS's matmul, then one elementwise kernel (geglu's epilogue path), on every shape: timed
    beside fused on the generated suites."""
    return geglu(x, weight, approximate=approximate, path="epilogue")


@subject.implementation("fused-launch", under_test=True, config=functools.partial(launch_plan, stand_in=False))
def fused_launch(x: torch.Tensor, weight: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """The fused kernels' launch on every shape, where the plan would send some to the epilogue
    path instead: what the plan's rule (configs.unfused_reason) is judged against."""
    return geglu(x, weight, approximate=approximate, stand_in=False)


@subject.implementation("eager")
def eager_geglu(x: torch.Tensor, weight: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    z = F.linear(x, weight)
    z1, z2 = z.chunk(2, dim=-1)
    return z1 * F.gelu(z2, approximate=approximate)


def _compile(**options: Any) -> Callable[..., torch.Tensor]:
    """torch.compile of eager_geglu. A run compiles it for every case and GELU, in two modes, and
    dynamo keeps one cache per function: past its recompile limit (8) it silently runs the
    function eagerly, so a "compiled" baseline would be timed as eager (this happened on the
    H200). Raise the limit well past any suite, and make hitting it an error, not a fallback."""
    torch._dynamo.config.recompile_limit = 1024
    torch._dynamo.config.accumulated_recompile_limit = 4096
    torch._dynamo.config.fail_on_recompile_limit_hit = True
    # A compiled backward with donated buffers refuses retain_graph=True ("requires
    # create_graph=False and retain_graph=False"), which a backward timed by replaying
    # torch.autograd.grad needs (experiments/2026-12-07-geglu-backward). Imported by name: mypy is
    # kept out of torch._functorch (pyproject.toml).
    functorch_config: Any = importlib.import_module("torch._functorch.config")
    functorch_config.donated_buffer = False
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


@subject.implementation("compiled")
def compiled(x: torch.Tensor, weight: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return _compiled_eager()(x, weight, approximate=approximate)


@subject.implementation("max-autotune")
def max_autotune(x: torch.Tensor, weight: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return _max_autotuned_eager()(x, weight, approximate=approximate)


# In a backward mode, autograd of x @ weight.T is cuBLAS computing dx and dW alone: the two
# matmuls of the GeGLU backward with nothing fused, its bound.
@subject.implementation(
    "gemm",
    bound=True,
    modes=("forward", "backward", "forward+backward"),
    variants=(),
    reference=matmul_float64,
    flops=matmul_flops,
    bytes=lambda case: _bytes(case, 2 * case.M * case.N),
)
def gemm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return x @ weight.T


@subject.implementation(
    "copy",
    bound=True,
    variants=(),
    reference=weight_float64,
    bytes=lambda case: 2 * 2 * case.N * case.K * BYTES_PER_ELEMENT[case.dtype],  # weight read and written
)
def copy_weight(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return weight.clone()
