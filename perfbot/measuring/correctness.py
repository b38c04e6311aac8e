"""Is an implementation's output right? Compared with the subject's trusted result (float64, as a
rule) computed from the same inputs, by the relative error ||out - ref|| / ||ref|| (Frobenius
norms), against the subject's tolerance for the dtype."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Check:
    relative_error: float  # NaN when the output holds a NaN or an infinity, or has another shape
    bound: float

    @property
    def passed(self) -> bool:
        return self.relative_error <= self.bound  # False for NaN


def untrusted(expected: Any) -> str | None:
    """Why a reference's result cannot be trusted, or None: it is no tensor, or holds a NaN or an
    infinity (against which every output would be wrong, whoever computed it)."""
    if not isinstance(expected, torch.Tensor):
        return f"returned a {type(expected).__name__}, not a tensor"
    finite = torch.isfinite(expected)
    if not finite.all():
        return f"returned a non-finite value (NaN or inf) in {int((~finite).sum())} of {finite.numel()} elements"
    return None


def check(output: Any, expected: Any, bound: float) -> Check:
    if not isinstance(output, torch.Tensor) or output.shape != expected.shape:
        return Check(float("nan"), bound)
    out = output.double()
    if not torch.isfinite(out).all():
        return Check(float("nan"), bound)
    reference = expected.double().to(out.device)
    scale = torch.linalg.vector_norm(reference)
    difference = torch.linalg.vector_norm(out - reference)
    error = (difference / scale).item() if scale > 0 else difference.item()
    return Check(error, bound)
