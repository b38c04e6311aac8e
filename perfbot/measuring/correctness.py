"""Is an implementation's output right? Compared with the subject's trusted result (float64, as a
rule) computed from the same inputs, by the relative error ||out - ref|| / ||ref|| (Frobenius
norms), against the subject's tolerance for the dtype. A result of several tensors (a backward
mode's gradients, measuring/modes.py) is compared part by part, each under its own bound.

Both are the subject's objects: a Tensor subclass runs the subject's `__torch_function__` in every
operation on it, so each becomes a plain tensor first (`plain`), and the runner calls these
functions under guard.call. Only real, dense, materialized tensors are compared: a meta tensor
holds no values, and a complex one's imaginary part would be dropped by `.double()`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Check:
    relative_error: float  # NaN when the output holds a NaN or an infinity, or has another shape
    bound: float
    why: str | None = None  # what the output was, when it could not be compared at all
    part: str | None = None  # of a result of several parts, the one these numbers are of (the worst)

    @property
    def passed(self) -> bool:
        return self.relative_error <= self.bound  # False for NaN


def plain(value: Any) -> Any:
    """`value` as a torch.Tensor, if it is a subclass of one: what perfbot does with it then runs
    none of the subclass's methods. Anything else as it is."""
    if isinstance(value, torch.Tensor) and type(value) is not torch.Tensor:
        with torch._C.DisableTorchFunctionSubclass():
            return torch.Tensor.as_subclass(value, torch.Tensor)
    return value


def uncomparable(tensor: torch.Tensor) -> str | None:
    """Why a tensor's values cannot be compared, or None."""
    if tensor.is_meta:
        return "a meta tensor, which holds no values"
    if tensor.layout != torch.strided or tensor.is_nested:
        return f"a tensor of layout {tensor.layout}, not a dense one"
    if tensor.is_complex() or tensor.is_quantized:
        return f"a tensor of dtype {tensor.dtype}, which perfbot does not compare"
    return None


def untrusted(expected: Any, parts: bool = False) -> str | None:
    """Why a reference's result cannot be trusted, or None: it is no tensor, a tensor whose values
    cannot be compared, or holds a NaN or an infinity (against which every output would be wrong,
    whoever computed it). With `parts`, a tuple of such tensors (a backward mode's), and why the
    first that cannot be trusted cannot."""
    if parts and isinstance(expected, tuple) and expected:
        return next((why for part in expected if (why := untrusted(part)) is not None), None)
    if not isinstance(expected, torch.Tensor):
        return f"returned a {type(expected).__name__}, not a tensor"
    if why := uncomparable(expected):
        return f"returned {why}"
    finite = torch.isfinite(expected)
    if not finite.all():
        return f"returned a non-finite value (NaN or inf) in {int((~finite).sum())} of {finite.numel()} elements"
    return None


def check(
    output: Any, expected: torch.Tensor | tuple[torch.Tensor, ...], bound: float | tuple[float, ...], parts: Any = ()
) -> Check:
    """`output` against `expected`, a plain tensor that `untrusted` accepted, or a tuple of them
    (each part against its bound, the Check of the first part that fails, else of the one nearest
    its bound; `parts` names them)."""
    if isinstance(expected, tuple):
        return _check_parts(output, expected, bound, tuple(parts))
    limit = bound[0] if isinstance(bound, tuple) else bound
    output = plain(output)
    if not isinstance(output, torch.Tensor):
        return Check(float("nan"), limit, f"a {type(output).__name__}, not a tensor")
    if why := uncomparable(output):
        return Check(float("nan"), limit, why)
    if output.shape != expected.shape:
        return Check(float("nan"), limit)
    out = output.double()
    if not torch.isfinite(out).all():
        return Check(float("nan"), limit)
    reference = expected.double().to(out.device)
    scale = torch.linalg.vector_norm(reference)
    difference = torch.linalg.vector_norm(out - reference)
    error = (difference / scale).item() if scale > 0 else difference.item()
    return Check(float(error), limit)


def _check_parts(output: Any, expected: tuple[torch.Tensor, ...], bound: Any, parts: tuple[str, ...]) -> Check:
    bounds = bound if isinstance(bound, tuple) else (bound,) * len(expected)
    names = parts if len(parts) == len(expected) else tuple(f"part {i}" for i in range(len(expected)))
    if not isinstance(output, tuple | list) or len(output) != len(expected):
        what = type(output).__name__ if not isinstance(output, tuple | list) else f"{len(output)} tensors"
        return Check(float("nan"), bounds[0], f"a {what}, not {len(expected)} tensors")
    checks = [
        dataclasses.replace(check(o, e, b), part=name)
        for o, e, b, name in zip(output, expected, bounds, names, strict=True)
    ]
    failing = [c for c in checks if not c.passed]
    return failing[0] if failing else max(checks, key=lambda c: c.relative_error / c.bound if c.bound else 0.0)
