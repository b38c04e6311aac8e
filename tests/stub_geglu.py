"""A stand-in for kernels/geglu.py in the orchestration tests: the `project` fixture
(tests/conftest.py) copies the real subject with this file as its kernels/geglu.py.

The orchestration (A/B, shards, workers, the base's declarations, sequential sampling) is
tested on timings the fake GPU gives (tests/fake_gpu.py), not on what the kernel computes, yet
every capture runs the subject's calls: the real fused kernel in Triton's interpreter took
10-30 ms a call, most of an A/B test's time. Here the same functions compute the same result in
PyTorch, in microseconds, and keep the lines that tests edit (the epilogue below, and
`launch_plan` far from `geglu`, so that edits to each merge apart). The real kernel is tested
by tests/test_geglu.py, and end to end by the tests that ask for `project` "real" (marked slow).

    [z1 | z2] = x @ weight.T        x: [..., K], weight: [2N, K] (torch.nn.Linear layout)
    out       = z1 * gelu(z2)       out: [..., N]
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

APPROXIMATIONS = ("none", "tanh")
PATHS = ("tma", "pointer", "epilogue")
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _gelu(z: torch.Tensor, APPROXIMATE_TANH: bool) -> torch.Tensor:
    return F.gelu(z, approximate="tanh" if APPROXIMATE_TANH else "none")


def _epilogue(z: torch.Tensor, APPROXIMATE_TANH: bool) -> torch.Tensor:
    """The real kernel's epilogue, on fp32 accumulators."""
    z1, z2 = z.chunk(2, dim=-1)
    out = z1 * _gelu(z2, APPROXIMATE_TANH)
    return out


def _check_inputs(x: torch.Tensor, weight: torch.Tensor, approximate: str) -> None:
    if approximate not in APPROXIMATIONS:
        raise ValueError(f"geglu: approximate must be one of {APPROXIMATIONS}, got {approximate!r}")
    if x.ndim < 1 or weight.ndim != 2 or weight.shape[1] != x.shape[-1] or weight.shape[0] % 2:
        raise ValueError(
            f"geglu: expected x [..., K] and weight [2N, K], got {tuple(x.shape)} and {tuple(weight.shape)}"
        )
    if x.dtype != weight.dtype or x.dtype not in SUPPORTED_DTYPES:
        raise ValueError(f"geglu: x and weight must share one dtype, got {x.dtype} and {weight.dtype}")


def launch_plan(x: torch.Tensor, weight: torch.Tensor, path: str | None = None) -> dict:
    """The plan the real kernel records on the CPU, where it takes its pointer path (a TMA
    path is asked for by name only)."""
    _check_inputs(x, weight, "none")
    if path is not None and path not in PATHS:
        raise ValueError(f"geglu: path must be one of {PATHS}, got {path!r}")
    return {"path": path or "pointer", "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "source": "stand-in"}


# The real kernel's launch configurations lie between launch_plan and geglu: a few lines here
# keep an edit above `def geglu(` apart from one above `def launch_plan(` when git merges them.
PLAN_KEYS = ("path", "BLOCK_M", "BLOCK_N", "BLOCK_K", "source")
#
#
#


def geglu(
    x: torch.Tensor,
    weight: torch.Tensor,
    *,
    approximate: str = "none",
    out: torch.Tensor | None = None,
    path: str | None = None,
    config: dict | None = None,
) -> torch.Tensor:
    """out = z1 * gelu(z2, approximate) with [z1 | z2] = x @ weight.T, accumulated in fp32."""
    _check_inputs(x, weight, approximate)
    launch_plan(x, weight, path)
    result = _epilogue(x.float() @ weight.float().T, approximate == "tanh").to(x.dtype)
    if out is None:
        return result
    return out.copy_(result)
