"""Triton kernels, each `@triton.autotune`d and called through a `torch.autograd.Function`."""

from .gelu import Gelu, gelu
from .softmax import Softmax, softmax

__all__ = ["Gelu", "Softmax", "gelu", "softmax"]
