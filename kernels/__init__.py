"""The measured subject: the fused GeGLU kernel, what it is measured against, the shape suites.

perfbot loads this package by path from any checkout (A/B runs and bisects load an old one
beside the current one), so it never imports perfbot. What perfbot relies on, kept stable:

- ``IMPLEMENTATIONS``: name -> ``Implementation`` (see implementations.py);
- ``SUITES_FILE``: the YAML file of shape suites.
"""

from pathlib import Path

from .implementations import IMPLEMENTATIONS, Implementation

SUITES_FILE = Path(__file__).with_name("suites.yaml")

__all__ = ["IMPLEMENTATIONS", "SUITES_FILE", "Implementation"]
