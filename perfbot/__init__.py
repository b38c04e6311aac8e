"""perfbot: a continuous performance-regression bot for Triton GPU kernels."""

__version__ = "0.1.0"
