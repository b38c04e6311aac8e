"""The fused GeGLU forward kernel (geglu.py), its launch configs (configs.py), and the subject
perfbot measures: the kernel, what it is measured against and the shape suites (subject.py,
suites.yaml)."""

from .subject import subject

__all__ = ["subject"]
