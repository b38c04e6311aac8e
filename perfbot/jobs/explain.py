"""`perfbot explain`'s work: what the compiler made of two revisions' kernels, nothing timed and
no result checked. Both sides are made ready as an A/B's are (ab_sides.py: each revision in a
worktree of its own, the head this checkout by default, the head's code under the base's
declarations); each chosen implementation is called once per case on its side's inputs, every
Triton kernel it launched is recorded (compiling/), and the two sides' records are compared
(deciding/compiled_change.py).

Where the kernels are compiled (`target`): on the GPU here, each call run there on real inputs,
when there is one and `--gpu-model` names none; otherwise for the GPU `--gpu-model` names (by default
offline.DEFAULT_GPU) without one, on CPU inputs, nothing launched (compiling/offline.py). Triton's
interpreter compiles nothing, so it is refused before any kernel is defined.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from ..compiling import artifacts, launches, offline, toolchain
from ..compiling.explanation import Explained, Explanation, Revision, Side, Target
from ..config import ProjectConfig
from ..deciding.compiled_change import compiled_change
from ..errors import BadInput, EnvironmentFailure
from ..loading import guard
from ..loading.package import Loaded
from ..measuring.planning import Planned, plan
from ..records.run import variant_name
from ..records.schema import clean
from .ab_sides import Choose, Revisions, prepared

Progress = Callable[[int], AbstractContextManager[Callable[[str, int], None]]]
SEED = 0  # of the inputs: both sides get the same ones
MESSAGE_LIMIT = 300  # characters of a failure's line
Key = tuple[str, str, str]  # (suite, case, implementation with its variant)


def target(named: str | None) -> Target:
    """Where explain compiles: the GPU here unless `named` names one to compile for without it.
    Refused (exit 2) under Triton's interpreter, which compiles nothing: call before the subject
    is loaded, whose kernels Triton makes interpreted or compiled as they are defined."""
    if _interpreting():
        raise BadInput(
            "TRITON_INTERPRET=1 is set: Triton would interpret the kernels instead of compiling them, and "
            "explain shows what they compile to; run it without (env -u TRITON_INTERPRET perfbot explain ...)"
        )
    if named is None:
        import torch

        if torch.cuda.is_available():
            return Target(torch.cuda.get_device_name(0), launched=True, capability=torch.cuda.get_device_capability(0))
    gpu = offline.gpu_named(named or offline.DEFAULT_GPU)
    return Target(gpu.name, launched=False, capability=gpu.capability)


def _interpreting() -> bool:
    try:
        from triton import knobs
    except ImportError:
        return False  # the subject's import says which extra is missing
    return bool(knobs.runtime.interpret)


@dataclass(frozen=True)
class Request:
    """What explain compiles: the revisions; `choose(base's subject)`, the suites, cases and
    implementations (RunSettings.kernels, .variants); where (`target`); whether each kernel's
    full SASS is kept."""

    revisions: Revisions
    choose: Choose
    target: Target
    keep_sass: bool = False


def explain(config: ProjectConfig, running: Loaded, request: Request, progress: Progress) -> Explanation:
    """Both sides made ready (ab_sides.prepared; `running` is this checkout's subject, the head
    by default), each chosen implementation compiled on each case, side by side. `progress(total)`
    is entered with the number of calls, and told of each as it is made."""
    with prepared(config, running, request.revisions, request.choose) as ready:
        groups = {
            side: plan(loaded, ready.suites, ready.settings, side, lenient=side == "head")
            for side, loaded in ready.subjects.items()
        }
        total = sum(len(group) for planned in groups.values() for group in planned)
        with progress(total) as advance, _compiling(request.target):
            sides = {
                side: _compiled_side(planned, request.target.device, request.keep_sass, advance)
                for side, planned in groups.items()
            }
        trees, pins = ready.trees, ready.pins
    base_sha, (head_tree, head_sha) = trees["base"][1], trees["head"]
    rows = [
        _explained(planned, base, sides["head"].get(key), ready.missing)
        for key, (planned, base) in sides["base"].items()
    ]
    return Explanation(
        base=Revision(request.revisions.base, base_sha),
        head=Revision(request.revisions.head, head_sha, head_tree if head_sha is None else None),
        target=request.target,
        rows=rows,
        pins=pins,
    )


def _explained(planned: Planned, base: Side, head: tuple[Planned, Side] | None, missing: dict[str, str]) -> Explained:
    if head is None:
        absent = missing.get(planned.kernel, "the head has no implementation of that name")
        head_side = Side(absent=absent)
    else:
        head_side = head[1]
    change = None
    if base.compiled is not None and head_side.compiled is not None:
        change = compiled_change(base.compiled, head_side.compiled)
    case = planned.case
    name = variant_name(planned.kernel, planned.variant)
    return Explained(case.suite, case.name, case.dtype, name, base, head_side, change)


@contextmanager
def _compiling(where: Target) -> Iterator[None]:
    """Triton compiling for the target (the GPU here as it is, or a named one without it),
    without line info: a binary with it names its source file's path and lines, which differ
    between the base's worktree and this checkout, and for a kernel that only moved in its file,
    so that equal machine code would show different digests. The SASS is the same either way.
    On the ptxas Triton chooses, as a run's (compiling/toolchain.py)."""
    toolchain.pin_toolchain()
    with _environment(LINE_INFO_OFF, "1"):
        if where.launched:
            yield
            return
        with offline.compiling_for(offline.gpu_named(where.gpu)):
            yield


LINE_INFO_OFF = "TRITON_DISABLE_LINE_INFO"  # read by Triton at each compile, and part of its cache key


@contextmanager
def _environment(name: str, value: str) -> Iterator[None]:
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def _compiled_side(
    groups: list[list[Planned]], device: str, keep_sass: bool, advance: Callable[[str, int], None]
) -> dict[Key, tuple[Planned, Side]]:
    """Each planned implementation of one side called once on its case's inputs (made afresh
    for each case, from one seed), with the Triton kernels it launched."""
    import torch

    found: dict[Key, tuple[Planned, Side]] = {}
    for group in groups:
        case = group[0].case
        generator = torch.Generator(device=device).manual_seed(SEED)
        inputs = _inputs(group[0], generator)
        for planned in group:
            name = variant_name(planned.kernel, planned.variant)
            advance(f"{planned.side} {case.name} {name}", 1)
            found[(case.suite, case.name, name)] = (planned, _compiled(planned, inputs, device, keep_sass))
        del inputs  # a large case's weights, before the next case's are made
    return found


def _inputs(planned: Planned, generator: Any) -> tuple[Any, ...]:
    """The case's inputs, from the subject's own code: its failure is the subject's (exit 2)."""
    import torch

    subject, case = planned.subject, planned.case
    what = f"subject {subject.name!r}: inputs(case {case.suite}/{case.name})"
    try:
        made = guard.call(what, functools.partial(subject.inputs, case, generator), guard.CALL_LIMIT_S)
    except guard.Refused:
        raise
    except torch.cuda.OutOfMemoryError as error:
        raise EnvironmentFailure(f"{what}: the GPU ran out of memory: {_line(error)}") from None
    except Exception as error:  # noqa: BLE001 -- the subject's code
        raise BadInput(f"{what} raised {type(error).__name__}: {_line(error)}") from None
    if not isinstance(made, tuple | list):
        raise BadInput(f"{what} returned a {type(made).__name__}, not a tuple")
    return tuple(made)


def _compiled(planned: Planned, inputs: tuple[Any, ...], device: str, keep_sass: bool) -> Side:
    """One call of the implementation and the Triton kernels it launched; a call that raised (a
    kernel that does not compile, one that autotunes without a GPU) is its side's one line."""
    case = planned.case
    what = f"subject {planned.subject.name!r}: implementation {planned.kernel!r} (case {case.suite}/{case.name})"
    call = functools.partial(_called, planned.impl.fn, inputs, dict(planned.values), device)
    try:
        if device == "cuda":  # a first call may autotune, launching candidates it drops (as a run does)
            guard.call(what, call, guard.CALL_LIMIT_S)
        with launches.recording() as launched:
            guard.call(what, call, guard.CALL_LIMIT_S)
    except guard.Refused:
        raise
    except Exception as error:  # noqa: BLE001 -- the subject's failure, reported on its side
        return Side(failed=f"raised {type(error).__name__}: {_line(error)}")
    return Side(compiled=artifacts.compiled(launched, keep_sass))


def _called(fn: Callable[..., Any], inputs: tuple[Any, ...], values: dict[str, str], device: str) -> None:
    fn(*inputs, **values)
    if device == "cuda":
        import torch

        torch.cuda.synchronize()  # a launch's failure shows here, in its call


def _line(error: BaseException) -> str:
    """An exception's message as one line: its first, and its last where it has more (Triton's
    compile errors start with where, then the source, and end with what)."""
    try:
        text = guard.call(f"the message of a {type(error).__name__}", lambda: str(error), guard.CALL_LIMIT_S)
    except guard.Refused:
        raise
    except Exception as failure:  # noqa: BLE001 -- the subject's __str__
        return f"(its message could not be read: {type(failure).__name__})"
    lines = [line.strip() for line in (text if type(text) is str else "").splitlines() if line.strip()]
    if not lines:
        return "(no message)"
    shown = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
    return clean(shown, MESSAGE_LIMIT)
