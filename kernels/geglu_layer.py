"""GeGLU as a layer that owns its weight, as a model holds one from the time it loads.

`geglu(x, weight)` reads the weight it is given. TMA reads rows that are only 16-byte aligned
slowly (K = 3000 in bf16: rows of 6000 bytes), and the functional call may not keep an aligned
copy from one call to the next: that would be a cache keyed on a tensor it does not own, which
perfbot refuses (a result kept across calls). A layer owns its weight, so `GeGLU` keeps a copy
whose rows are padded to 32 bytes: made at its first call without autograd, and again whenever
the weight changed (in place, as an optimizer step or `load_state_dict` does, or replaced, as
`.to()` does). Where the weight is being trained, the call reads the parameter itself, so that
its gradient reaches it.
"""

from __future__ import annotations

import math
import weakref

import torch

from .geglu import APPROXIMATIONS, _aligned, _aligned_rows, geglu


class GeGLU(torch.nn.Module):
    """out = z1 * gelu(z2, approximate) with [z1 | z2] = x @ weight.T, weight [2 * out_features,
    in_features], initialised as torch.nn.Linear's."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        approximate: str = "none",
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if approximate not in APPROXIMATIONS:
            raise ValueError(f"GeGLU: approximate must be one of {APPROXIMATIONS}, got {approximate!r}")
        self.in_features, self.out_features, self.approximate = in_features, out_features, approximate
        self.weight = torch.nn.Parameter(torch.empty(2 * out_features, in_features, device=device, dtype=dtype))
        torch.nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        # (the parameter it was made of, that tensor's data pointer and version), the padded copy
        self._padded: tuple[tuple[weakref.ref[torch.nn.Parameter], int, int], torch.Tensor] | None = None

    @classmethod
    def holding(cls, weight: torch.Tensor, *, approximate: str = "none") -> GeGLU:
        """A layer whose parameter is `weight` itself, not a copy: a model's weight as it loaded."""
        layer = cls(weight.shape[1], weight.shape[0] // 2, approximate=approximate, device="meta", dtype=weight.dtype)
        layer.weight = torch.nn.Parameter(weight, requires_grad=weight.requires_grad)
        return layer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        trained = torch.is_grad_enabled() and self.weight.requires_grad
        return geglu(x, self.weight if trained else self.kernel_weight(), approximate=self.approximate)

    def kernel_weight(self) -> torch.Tensor:
        """The weight as the kernel reads it without autograd: the parameter where its rows are
        32-byte aligned (or it is fp32, which TMA does not read here), else the padded copy of its
        current value."""
        weight = self.weight.detach()  # shares the parameter's version counter
        if weight.element_size() != 2 or _aligned(weight):  # only 16-bit weights are read by TMA
            return weight
        kept = self._padded
        if kept is not None:
            (made_of, pointer, version), padded = kept
            if made_of() is self.weight and pointer == weight.data_ptr() and version == weight._version:
                return padded
        padded = _aligned_rows(weight)
        self._padded = ((weakref.ref(self.weight), weight.data_ptr(), weight._version), padded)
        return padded

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, approximate={self.approximate!r}"
