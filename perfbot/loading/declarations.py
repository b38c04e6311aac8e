"""The base decides what an A/B judges; the head supplies only its code.

A subject declares more than code: which implementations are its own (`under_test`) and which
are bounds, the references and tolerances a result is checked against, the variants an
implementation takes, its flops and bytes, the suites and the implementations each case times.
Taken from the head, a pull request could judge itself: drop `under_test` from a kernel it made
slower, rename the kernel out of the check, or ship a wrong kernel with a reference that agrees.
So both sides of `perfbot ab` run under the base's declarations: the head's side is the base's
subject with each implementation's function (and launch-config reader) replaced by the head's
of the same name (`judged_by_base`). What the base declares and the head cannot run is
`missing`: it fails the check with its name, never listed as merely removed. Every difference
between the two sides' declarations is listed in the report (`differences`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..records.run import Failure
from .families import Families
from .package import Loaded, load_subject
from .subject import FORWARD, Implementation, Subject, Suite

# The head's own parts of an implementation: its code. Everything else is the base's.
HEAD_FIELDS = ("fn", "config")


def judged_by_base(base: Loaded, head: Loaded) -> tuple[Loaded, dict[str, str]]:
    """The head's code under the base's declarations, and the base's implementations the head
    cannot run, each with why (name -> reason). The head keeps its path and module (its code, its
    Triton kernels); its subject is the base's, its suites the base's."""
    implementations: dict[str, Implementation] = {}
    missing: dict[str, str] = {}
    for name, declared in base.implementations.items():
        own = head.implementations.get(name)
        if own is None:
            missing[name] = "the base declares it; the head has no implementation of that name"
        elif declared.under_test and not own.under_test:
            missing[name] = "the base marks it under test; the head no longer does"
        else:
            code = {field: getattr(own, field) for field in HEAD_FIELDS}
            implementations[name] = dataclasses.replace(declared, **code)
    subject = dataclasses.replace(base.subject, implementations=implementations)
    return dataclasses.replace(head, subject=subject, suites=base.suites), missing


@dataclass(frozen=True)
class LoadedSides:
    """An A/B's two subjects loaded, the head under the base's declarations (`subjects`), the
    head with its own (`head_own`, to list what differs), and what the base declares that the
    head cannot run (`missing`)."""

    subjects: dict[str, Loaded]
    head_own: Loaded
    missing: dict[str, str]


def load_sides(base: Path, head: Path) -> LoadedSides:
    """Both sides of an A/B loaded from their packages, the base first, each running its own
    checkout's code (provenance.check): as the dry run and `explain` load them."""
    from . import provenance

    base_subject = load_subject(base)
    head_own = load_subject(head)
    head_subject, missing = judged_by_base(base_subject, head_own)
    subjects = {"base": base_subject, "head": head_subject}
    provenance.check({side: loaded.sources for side, loaded in subjects.items()})
    return LoadedSides(subjects, head_own, missing)


def missing_failures(missing: dict[str, str], planned: Sequence[Any], head_name: str = "the head") -> list[Failure]:
    """One failure per benchmark the base plans (planning.Planned) whose implementation the head
    cannot run."""
    return [
        Failure(
            kernel=p.kernel,
            variant=p.variant,
            shape=p.case.shape,
            dtype=p.case.dtype,
            reason=f"not timed: {missing[p.kernel]} ({head_name} fails the check until the base's subject changes)",
            suite=p.case.suite,
            case=p.case.name,
            mode=p.case.mode,
        )
        for p in planned
        if p.kernel in missing
    ]


def differences(base: Loaded, head: Loaded, suites: Sequence[Suite]) -> list[str]:
    """Every difference between what the two sides declare, one line each, the base's first:
    the subject's own fields, each implementation's, and those of the suites chosen (`suites`,
    the base's, by name), whole."""
    lines = [
        f"subject {what}: {before} on the base, {after} on the head"
        for what, before, after in _subject_fields(base, head)
        if before != after
    ]
    for name in sorted(set(base.implementations) - set(head.implementations)):
        lines.append(f"implementation {name}: only on the base")
    for name in sorted(set(head.implementations) - set(base.implementations)):
        lines.append(f"implementation {name}: only on the head (not judged: the base's suites decide)")
    for name in [n for n in base.implementations if n in head.implementations]:
        mine, theirs = _declared(base.implementations[name]), _declared(head.implementations[name])
        lines += [
            f"implementation {name} {field}: {mine[field]} on the base, {theirs[field]} on the head"
            for field in mine
            if mine[field] != theirs[field]
        ]
    # The suites as each side declares them: a run cuts its suites down (to the cases named, to
    # each benchmark once), which is no difference between the sides.
    for name in dict.fromkeys(suite.name for suite in suites):
        lines += _suite_lines(base.suites[name], head.suites.get(name))
    return lines


def _subject_fields(base: Loaded, head: Loaded) -> list[tuple[str, Any, Any]]:
    fields = _fields_of(base.subject, head.subject)
    # Combined families route to each family's own inputs and references: compare those too.
    before, after = base.subject, head.subject
    if isinstance(before, Families) and isinstance(after, Families):
        for name in sorted(set(before.families) | set(after.families)):
            mine, theirs = before.families.get(name), after.families.get(name)
            if mine is None or theirs is None:
                fields.append((f"family {name}", "present" if mine else "absent", "present" if theirs else "absent"))
            else:
                fields += [(f"family {name} {what}", b, a) for what, b, a in _fields_of(mine, theirs)]
    return fields


def _fields_of(before: Subject, after: Subject) -> list[tuple[str, Any, Any]]:
    return [
        ("name", repr(before.name), repr(after.name)),
        ("tolerance", dict(before.tolerance), dict(after.tolerance)),
        ("variants", {k: list(v) for k, v in before.variants.items()}, {k: list(v) for k, v in after.variants.items()}),
        ("default_case", before.default_case, after.default_case),
        ("inputs", code_of(before.inputs), code_of(after.inputs)),
        ("reference", code_of(before.reference), code_of(after.reference)),
        ("flops", code_of(before.flops), code_of(after.flops)),
        ("bytes", code_of(before.bytes), code_of(after.bytes)),
        ("grad_inputs", _listed(before.grad_inputs), _listed(after.grad_inputs)),
        ("grad_tolerance", _mapped(before.grad_tolerance), _mapped(after.grad_tolerance)),
    ]


def _listed(values: Any) -> list[Any] | None:
    return None if values is None else list(values)


def _mapped(values: Any) -> dict[str, Any] | None:
    return None if values is None else dict(values)


def _declared(implementation: Implementation) -> dict[str, Any]:
    return {
        "under_test": implementation.under_test,
        "bound": implementation.bound,
        "variants": implementation.variants,
        "modes": implementation.modes,
        "reference": code_of(implementation.reference),
        "flops": code_of(implementation.flops),
        "bytes": code_of(implementation.bytes),
    }


def _suite_lines(suite: Suite, theirs: Suite | None) -> list[str]:
    if theirs is None:
        return [f"suite {suite.name}: only on the base"]
    lines = []
    if suite.implementations != theirs.implementations:
        lines.append(
            f"suite {suite.name} implementations: {', '.join(suite.implementations)} on the base, "
            f"{', '.join(theirs.implementations)} on the head"
        )
    mine = {(c.name, tuple(c.shape.items()), c.dtype, c.mode) for c in suite.cases}
    other = {(c.name, tuple(c.shape.items()), c.dtype, c.mode) for c in theirs.cases}
    lines += [
        f"suite {suite.name}: case {_in_mode(name, mode)} only on the base, or changed"
        for name, _, _, mode in sorted(mine - other)
    ]
    lines += [
        f"suite {suite.name}: case {_in_mode(name, mode)} only on the head, or changed (not measured)"
        for name, _, _, mode in sorted(other - mine)
    ]
    return lines


def _in_mode(name: str, mode: str) -> str:
    """A case's name, with its mode where that is not the forward."""
    return name if mode == FORWARD else f"{name} ({mode})"


def code_of(fn: Callable[..., Any] | None) -> str:
    """A function named by what it is and what it does: its qualified name and a digest of its
    source (of its bytecode where the source is not to be had), so that two checkouts' copies
    of one function compare equal, and a changed one does not."""
    if fn is None:
        return "none"
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    try:
        text = inspect.getsource(fn).encode()
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        text = code.co_code if code is not None else type(fn).__qualname__.encode()
    return f"{name} ({hashlib.sha256(text).hexdigest()[:12]})"
