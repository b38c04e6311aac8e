"""The subject: what a repository declares so that perfbot can check and time its kernels.

A repository names a Python package in `[tool.perfbot] kernels` (default `kernels`); the
package defines `subject`, a `Subject`, and registers its implementations on it:

    from perfbot import Subject

    subject = Subject(
        name="rmsnorm",
        inputs=make_inputs,           # (case, generator) -> the inputs, on the generator's device
        reference=rmsnorm_float64,    # (*inputs, **variant) -> the trusted result (float64)
        tolerance={"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2},  # relative error, per dtype
        bytes=lambda case: ...,       # optional: the fewest bytes moved, for GB/s
        suites="suites.yaml",         # beside the package's __init__.py, or a dict of Suite
    )

    @subject.implementation("triton", under_test=True)
    def triton_rmsnorm(x, weight, offset="0"): ...

    @subject.implementation("torch")
    def torch_rmsnorm(x, weight): ...

Every implementation is called as `fn(*inputs, **variant)`. A variant is a named parameter
whose values the subject lists, the default first (`variants={"offset": ("0", "1")}`);
an implementation takes all of them unless it says which (`variants=()` for none). One may bring
its own reference, flops and bytes (a bound: a copy of the input, beside a kernel that reads it
once). Cases are named sets of integer parameters (`{name: wide, rows: 4096, cols: 8192}`), a
dtype and a mode (MODES: the forward, the backward alone, or both); suites group them and say which
implementations they time. In a backward mode the gradients of the output with respect to
`grad_inputs` are checked, within `grad_tolerance`, against float64 autograd of the reference
(measuring/modes.py); an implementation says which modes it takes (`modes=`).

perfbot loads the package by path (package.py, `load_subject`), under a name unique to its path,
and the checkout's own packages it imports by name from that checkout (isolation.py), so that two
checkouts (an A/B run, a bisect) load side by side in one process, each running its own code;
which files that code came from is recorded (provenance.py). Everything a subject declares is
checked as it loads (checks.py, and suites.py for its suites).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Params = dict[str, int]

# What a case times: the forward call alone, the backward alone (the gradients of the output with
# respect to the grad inputs, the forward run before, outside what is timed), or both, as one
# training step runs them (measuring/modes.py; docs/subject.md, "Backward modes").
FORWARD, BACKWARD, FORWARD_BACKWARD = "forward", "backward", "forward+backward"
MODES = (FORWARD, BACKWARD, FORWARD_BACKWARD)


@dataclass(frozen=True)
class Case:
    """One named set of parameters of a suite, with its dtype and the mode it is timed in (one of
    MODES). `case.M` reads parameter M."""

    suite: str
    name: str
    params: Params
    dtype: str
    mode: str = FORWARD

    def __getattr__(self, name: str) -> int:
        params = self.__dict__.get("params", {})
        if name in params:
            return int(params[name])
        raise AttributeError(f"case {self.__dict__.get('name')!r} has no parameter {name!r}")

    @property
    def shape(self) -> Params:
        return dict(self.params)


@dataclass(frozen=True)
class Suite:
    name: str
    about: str
    implementations: tuple[str, ...]
    cases: tuple[Case, ...]


@dataclass(frozen=True)
class Implementation:
    """One way of computing what the subject computes, timed beside the others."""

    name: str
    fn: Callable[..., Any]  # fn(*inputs, **variant) -> the output
    under_test: bool = False  # the subject's own kernel, as opposed to a baseline
    # A bound, not an alternative: the same inputs doing less (a copy of them, the kernel's main
    # operation alone): shown beside the kernel as a ceiling of its speed, never counted as a baseline.
    bound: bool = False
    variants: tuple[str, ...] | None = None  # the variant parameters it takes; None: all the subject's
    reference: Callable[..., Any] | None = None  # its own trusted result, if not the subject's
    flops: Callable[[Case], int] | None = None
    bytes: Callable[[Case], int] | None = None
    config: Callable[..., dict[str, Any] | None] | None = None  # config(*inputs): its launch config, recorded
    # The modes it can be timed in; None: every mode, or for a bound only the forward.
    modes: tuple[str, ...] | None = None

    def takes_mode(self, mode: str) -> bool:
        """Whether it can be timed in `mode`."""
        return mode in (self.modes if self.modes is not None else (FORWARD,) if self.bound else MODES)


@dataclass
class Subject:
    """What a repository measures: how to make inputs for a case, the trusted result and how close
    an implementation must come to it, the implementations, and the suites of cases."""

    name: str
    inputs: Callable[..., Sequence[Any]]  # inputs(case, generator) -> tensors on generator.device
    reference: Callable[..., Any]  # reference(*inputs, **variant) -> the trusted result
    tolerance: Mapping[str, float]  # dtype -> the largest relative error (Frobenius) accepted
    suites: Path | str | Mapping[str, Suite] = "suites.yaml"
    flops: Callable[[Case], int] | None = None
    bytes: Callable[[Case], int] | None = None
    variants: Mapping[str, Sequence[str]] = field(default_factory=dict)  # name -> values, the default first
    # (suite, case) that `perfbot selftest` measures when none is named; else the first case there is.
    default_case: tuple[str, str] | None = None
    implementations: dict[str, Implementation] = field(default_factory=dict)
    # Positions of the inputs the gradient is taken with respect to, in the backward modes; None:
    # every floating-point tensor input.
    grad_inputs: Sequence[int] | None = None
    # dtype -> the largest relative error of each gradient accepted; None: `tolerance`.
    grad_tolerance: Mapping[str, float] | None = None
    # The file of the module that made it: a kernel family's `suites` file is read beside it
    # (families.py). None where it cannot be told.
    defined_in: Path | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        frame = sys._getframe(1)
        while frame is not None and frame.f_globals.get("__name__") in (__name__, "dataclasses"):
            frame = frame.f_back  # type: ignore[assignment]
        where = frame.f_globals.get("__file__") if frame is not None else None
        self.defined_in = Path(where) if isinstance(where, str) else None

    def tolerance_for(self, case: Case) -> float:
        """The largest relative error accepted for a case's output: its dtype's."""
        return self.tolerance[case.dtype]

    def grad_inputs_for(self, case: Case) -> Sequence[int] | None:
        """The positions of a case's grad inputs in a backward mode; None: every floating-point
        tensor input."""
        return self.grad_inputs

    def grad_tolerance_for(self, case: Case) -> float:
        """The largest relative error accepted for each gradient of a case: its dtype's in
        `grad_tolerance`, else in `tolerance`."""
        given = self.grad_tolerance if self.grad_tolerance is not None else self.tolerance
        return given.get(case.dtype, self.tolerance[case.dtype])

    def has_own_reference(self, implementation: Implementation) -> bool:
        """Whether the implementation is checked against a reference of its own, not the subject's."""
        return implementation.reference is not None

    def implementation(
        self,
        name: str,
        *,
        under_test: bool = False,
        bound: bool = False,
        variants: Sequence[str] | None = None,
        reference: Callable[..., Any] | None = None,
        flops: Callable[[Case], int] | None = None,
        bytes: Callable[[Case], int] | None = None,
        config: Callable[..., dict[str, Any] | None] | None = None,
        modes: Sequence[str] | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register the decorated function as an implementation (see the module's docstring)."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.add(
                Implementation(
                    name,
                    fn,
                    under_test=under_test,
                    bound=bound,
                    variants=tuple(variants) if variants is not None else None,
                    reference=reference,
                    flops=flops,
                    bytes=bytes,
                    config=config,
                    # A string is kept as given, for the check to name it (not its letters).
                    modes=modes if modes is None or isinstance(modes, str) else tuple(modes),  # type: ignore[arg-type]
                )
            )
            return fn

        return register

    def add(self, implementation: Implementation) -> None:
        if implementation.name in self.implementations:
            raise ValueError(f"subject {self.name!r}: implementation {implementation.name!r} is registered twice")
        unknown = [v for v in implementation.variants or () if v not in self.variants]
        if unknown:
            raise ValueError(
                f"subject {self.name!r}: implementation {implementation.name!r} takes variant "
                f"{unknown[0]!r}, which the subject does not declare ({sorted(self.variants)})"
            )
        self.implementations[implementation.name] = implementation

    def takes(self, implementation: Implementation) -> tuple[str, ...]:
        """The variant parameters an implementation takes."""
        return tuple(self.variants) if implementation.variants is None else implementation.variants

    def defaults(self) -> dict[str, str]:
        return {name: str(values[0]) for name, values in self.variants.items()}
