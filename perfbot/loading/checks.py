"""What a subject declares, checked as it loads: every value of the types and within the limits
the rest of perfbot relies on, so that a mistake is one line naming it (exit 2), not a failure
in the middle of a run. Its suites are checked in suites.py, with these rules for names.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..characters import DESCRIBED, has_control
from ..errors import BadInput
from ..records.schema import MAX_NAME, MAX_TEXT, Name, Text, shown
from .subject import MODES, Implementation, Subject

_NAME, _TEXT = TypeAdapter(Name), TypeAdapter(Text)


def check_name(where: str, what: str, value: Any) -> None:
    """A name given in Python meets the rule the YAML files' names meet (docs/files.md): results
    record it, and reports print it."""
    _check(where, what, value, _NAME)


def check_text(where: str, what: str, value: Any) -> None:
    """A free text given in Python (a suite's about) meets the rule the YAML files' texts meet."""
    _check(where, what, value, _TEXT)


def _check(where: str, what: str, value: Any, adapter: TypeAdapter[str]) -> None:
    try:
        adapter.validate_python(value, strict=True)
    except ValidationError:
        rule = f"1 to {MAX_NAME}" if adapter is _NAME else f"at most {MAX_TEXT:,}"
        raise BadInput(
            f"{where}: {what} must be a string of {rule} characters, no {DESCRIBED}, got {shown(value)}"
        ) from None


def check_subject(package: Path, subject: Subject) -> None:
    """Everything the subject declares, of the types and within the limits the rest relies on."""
    check_name(str(package), "the subject's name", subject.name)
    where = f"{package}: subject {subject.name!r}"
    for what in ("inputs", "reference"):
        if not callable(getattr(subject, what)):
            raise BadInput(f"{where}: {what} must be a function")
    for what in ("flops", "bytes"):
        if getattr(subject, what) is not None and not callable(getattr(subject, what)):
            raise BadInput(f"{where}: {what} must be a function of the case, or None")
    _check_implementations(where, subject)
    _check_tolerance(where, subject.tolerance)
    if subject.grad_tolerance is not None:
        _check_tolerance(where, subject.grad_tolerance, "grad_tolerance")
    _check_grad_inputs(where, subject.grad_inputs)
    _check_variants(where, subject.variants)
    if not isinstance(subject.suites, str | Path | Mapping):
        raise BadInput(f"{where}: suites must be a file name or a dict of perfbot.Suite, got {shown(subject.suites)}")
    if isinstance(subject.suites, str | Path) and has_control(str(subject.suites)):
        # The name goes into every message about the file: no line break or control character in it.
        raise BadInput(f"{where}: suites must name a file without {DESCRIBED}, got {shown(str(subject.suites))}")
    default = subject.default_case
    if default is not None and not (isinstance(default, tuple) and len(default) == 2):
        raise BadInput(f"{where}: default_case must be a (suite, case) pair, got {shown(default)}")
    for part in default or ():
        check_name(where, "default_case", part)


def _check_implementations(where: str, subject: Subject) -> None:
    implementations = subject.implementations
    if not isinstance(implementations, dict) or not implementations:
        raise BadInput(f"{where} has no implementations")
    for key, implementation in implementations.items():
        check_name(where, "an implementation's name", key)
        if not isinstance(implementation, Implementation) or implementation.name != key:
            raise BadInput(f"{where}: implementation {key!r} must be registered with @subject.implementation")
        if not callable(implementation.fn):
            raise BadInput(f"{where}: implementation {key!r} must be a function")
        for what in ("reference", "flops", "bytes", "config"):
            if getattr(implementation, what) is not None and not callable(getattr(implementation, what)):
                raise BadInput(f"{where}: implementation {key!r}: {what}= must be a function, or None")
        modes = implementation.modes
        if modes is not None and (
            not isinstance(modes, tuple) or not modes or not all(isinstance(m, str) and m in MODES for m in modes)
        ):
            raise BadInput(
                f"{where}: implementation {key!r}: modes= must list some of {', '.join(MODES)}, got {shown(modes)}"
            )


def _check_grad_inputs(where: str, positions: Any) -> None:
    """grad_inputs: None, or the distinct positions (from 0) of some of the inputs."""
    if positions is None:
        return
    if (
        not isinstance(positions, tuple | list)
        or not positions
        or len(positions) > 64
        or not all(isinstance(p, int) and not isinstance(p, bool) and 0 <= p < 64 for p in positions)
        or len(set(positions)) != len(positions)
    ):
        raise BadInput(
            f"{where}: grad_inputs must list the distinct positions (from 0) of the inputs the gradient is taken "
            f"with respect to, or be None for every floating-point one, got {shown(positions)}"
        )


def _check_tolerance(where: str, tolerance: Any, what: str = "tolerance") -> None:
    if not isinstance(tolerance, Mapping) or not tolerance:
        raise BadInput(f"{where}: {what} must map each dtype to the largest relative error accepted")
    if len(tolerance) > 16:
        raise BadInput(f"{where}: at most 16 dtypes in {what}, got {len(tolerance)}")
    for dtype, bound in tolerance.items():
        check_name(where, f"a dtype of the {what}", dtype)
        if isinstance(bound, bool) or not isinstance(bound, int | float):
            raise BadInput(f"{where}: {what}[{dtype!r}] must be a number, got {shown(bound)}")
        if not 0 <= bound < float("inf"):
            raise BadInput(f"{where}: {what}[{dtype!r}] must be a finite number of at least 0, got {bound!r}")


def _check_variants(where: str, variants: Any) -> None:
    if not isinstance(variants, Mapping) or len(variants) > 16:
        raise BadInput(f"{where}: variants must map at most 16 parameters to their values, got {shown(variants)}")
    for parameter, values in variants.items():
        check_name(where, "a variant parameter's name", parameter)
        if not isinstance(values, tuple | list) or not values or not all(isinstance(v, str) and v for v in values):
            raise BadInput(
                f"{where}: variants[{parameter!r}] must list its values as strings, the default first, "
                f"got {shown(values)}"
            )
        for value in values:
            check_name(where, f"a value of variants[{parameter!r}]", value)
        if len(set(values)) != len(values):
            raise BadInput(f"{where}: variants[{parameter!r}] lists a value twice: {shown(list(values))}")
