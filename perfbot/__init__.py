"""perfbot: a continuous performance-regression bot for Triton GPU kernels.

What a measured repository writes against (docs/subject.md): `Subject`, with its `Case`s and
`Suite`s, and the implementations registered on it."""

from .loading.subject import Case, Implementation, Subject, Suite

__version__ = "0.1.0"

__all__ = ["Case", "Implementation", "Subject", "Suite", "__version__"]
