"""Is an implementation's output right? Compared with a float64 reference computed from the
same inputs, by the relative error ||out - ref|| / ||ref|| (Frobenius norms)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

# The largest relative error accepted per dtype. Every implementation must pass, eager
# included, and eager rounds three times (the matmul's output, gelu, the product): about 2-3
# units of roundoff of the dtype (bf16: 2^-8, fp16: 2^-11). A wrong kernel (a swapped half,
# a missing tile, the wrong gelu) is off by order 1.
ERROR_BOUNDS = {"bfloat16": 1e-2, "float16": 2e-3, "float32": 1e-5}


@dataclass(frozen=True)
class Check:
    relative_error: float  # NaN when the output holds a NaN or an infinity
    bound: float

    @property
    def passed(self) -> bool:
        return self.relative_error <= self.bound  # False for NaN


def reference(x: torch.Tensor, weight: torch.Tensor, computes: str, approximate: str) -> torch.Tensor:
    """float64 result of `computes` ("geglu", "matmul" or "copy") on the given inputs."""
    if computes == "copy":
        return weight.double()
    z = x.double() @ weight.double().T
    if computes == "matmul":
        return z
    z1, z2 = z.chunk(2, dim=-1)
    return z1 * F.gelu(z2, approximate=approximate)


def check(output: torch.Tensor, expected: torch.Tensor, dtype: str) -> Check:
    bound = ERROR_BOUNDS[dtype]
    if output.shape != expected.shape:
        return Check(float("nan"), bound)
    out = output.double()
    if not torch.isfinite(out).all():
        return Check(float("nan"), bound)
    error = (torch.linalg.vector_norm(out - expected) / torch.linalg.vector_norm(expected)).item()
    return Check(error, bound)
