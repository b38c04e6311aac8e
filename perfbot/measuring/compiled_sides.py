"""`perfbot explain`'s half that runs the subjects' code, in a process of their own
(subject_jobs.explain_job): both sides loaded as an A/B's are (the head under the base's
declarations, each from its own checkout), each chosen implementation called once per case on its
side's inputs, and every Triton kernel it launched recorded (compiling/). The answer is plain data;
perfbot's process compares the sides (jobs/explain.py).

Where the kernels are compiled is the parent's choice (`Target`): on the GPU here, each call run
there on real inputs; or for a named GPU without one, on CPU inputs, nothing launched
(compiling/offline.py)."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..compiling import artifacts, launches, offline, toolchain
from ..compiling.explanation import Side, Target
from ..errors import BadInput, EnvironmentFailure
from ..loading import guard
from ..loading.package import Loaded
from ..loading.selection import BadChoice
from ..records.schema import clean
from .planning import Planned, RunSettings, plan

SEED = 0  # of the inputs: both sides get the same ones
MESSAGE_LIMIT = 300  # characters of a failure's line
EVERY = "all"  # kernel_names (EVERY,): every implementation the chosen suites list


def compiled_sides(
    base: Path,
    head: Path,
    selection: dict[str, tuple[str, ...]],
    kernel_names: tuple[str, ...],
    variants: tuple[str, ...],
    target: Target,
    keep_sass: bool,
    progress: Callable[[object], None],
) -> dict[str, Any]:
    """Both sides' compiled kernels, per case and implementation, as plain data: {"rows": {side:
    [row, ...]}, "missing": {implementation: why the head cannot run it}}. `selection`: the
    suite, case and family names (selection.chosen's); `progress` is told {"task": "compiling",
    "total": n}, then {"advance": 1, "description": label} per call."""
    from ..loading.declarations import load_sides

    loaded = load_sides(base, head)
    suites, settings = _chosen(loaded.subjects["base"], selection, kernel_names, variants, keep_sass)
    groups = {
        side: plan(subject, suites, settings, side, lenient=side == "head") for side, subject in loaded.subjects.items()
    }
    progress({"task": "compiling", "total": sum(len(group) for planned in groups.values() for group in planned)})
    with _compiling(target):
        rows = {side: _compiled_side(planned, target.device, keep_sass, progress) for side, planned in groups.items()}
    return {"rows": rows, "missing": loaded.missing}


def _chosen(
    base: Loaded,
    selection: dict[str, tuple[str, ...]],
    kernel_names: tuple[str, ...],
    variants: tuple[str, ...],
    keep_sass: bool,
) -> tuple[list[Any], RunSettings]:
    """The cases and implementations asked for, from the base's subject (it decides, as in an
    A/B); by default the implementations under test, the subject's own kernels. Each case in each
    of its modes asked for (`mode_names`; none: every mode it is timed in): what is compiled is
    what that mode times (`_timed`), a backward's kernels in a backward mode."""
    from ..loading.selection import chosen, chosen_implementations
    from .planning import chosen_variants

    suites = chosen(
        base,
        selection["suite_names"],
        selection["case_names"],
        family_names=selection["family_names"],
        mode_names=selection.get("mode_names", ()),
    )
    if kernel_names == (EVERY,):
        kernels: tuple[str, ...] = ()
    elif kernel_names:
        kernels = chosen_implementations(base, kernel_names)
    else:
        listed = dict.fromkeys(name for suite in suites for name in suite.implementations)
        kernels = tuple(n for n in listed if n in base.implementations and base.implementations[n].under_test)
        if not kernels:
            raise BadChoice(
                "the chosen suites list no implementation under test; name some with --kernel (or --kernel all)"
            )
    return suites, RunSettings(variants=chosen_variants(base.subject, variants), kernels=kernels, keep_sass=keep_sass)


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
    groups: list[list[Planned]], device: str, keep_sass: bool, progress: Callable[[object], None]
) -> list[dict[str, Any]]:
    """Each planned implementation of one side called once on its case's inputs (made afresh
    for each case, from one seed), with the Triton kernels it launched: one row each."""
    import torch

    rows = []
    for group in groups:
        case = group[0].case
        generator = torch.Generator(device=device).manual_seed(SEED)
        inputs = _inputs(group[0], generator)
        for planned in group:
            name = planned.name
            progress({"advance": 1, "description": f"{planned.side} {case.name} {name}"})
            side = _compiled(planned, inputs, device, keep_sass)
            compiled = dataclasses.asdict(side.compiled) if side.compiled is not None else None
            rows.append(
                {
                    "suite": case.suite,
                    "case": case.name,
                    "dtype": case.dtype,
                    "mode": case.mode,
                    "kernel": planned.kernel,
                    "implementation": name,
                    "compiled": compiled,
                    "failed": side.failed,
                }
            )
        del inputs  # a large case's weights, before the next case's are made
    return rows


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
    """One call of the implementation in its case's mode and the Triton kernels what that mode
    times launched; a call that raised (a kernel that does not compile, one that autotunes without
    a GPU, an output no gradient can be taken of) is its side's one line."""
    case = planned.case
    what = f"subject {planned.subject.name!r}: implementation {planned.kernel!r} (case {case.suite}/{case.name})"
    try:
        call = _timed(planned, inputs, device, what)
        if device == "cuda":  # a first call may autotune, launching candidates it drops (as a run does)
            _launched(call, device, what)
        launched = _launched(call, device, what)
    except (guard.Refused, BadInput):
        raise
    except Exception as error:  # noqa: BLE001 -- the subject's failure, reported on its side
        return Side(failed=f"raised {type(error).__name__}: {_line(error)}")
    return Side(compiled=artifacts.compiled(launched, keep_sass))


def _timed(planned: Planned, inputs: tuple[Any, ...], device: str, what: str) -> Callable[[], Any]:
    """What a run times of the implementation in its case's mode (modes.timed_call): the call, or
    in a backward mode the gradients (after the forward, a Staged call's `before`, for `backward`),
    with a grad_output of the shape of the implementation's own output (explain has no
    reference). Its forward is called here once, for that shape."""
    import torch

    from ..loading.subject import FORWARD
    from . import correctness, modes

    case = planned.case
    forward = functools.partial(planned.impl.fn, **dict(planned.values))
    if case.mode == FORWARD:
        return functools.partial(forward, *inputs)
    positions = modes.grad_positions(planned.subject, case, inputs, f"case {case.suite}/{case.name}")
    given = modes.leaves(inputs, positions)
    called = functools.partial(_synchronized, functools.partial(forward, *given), device)
    out = correctness.plain(guard.call(what, called, guard.CALL_LIMIT_S))
    if not isinstance(out, torch.Tensor):
        raise modes.WrongOutput(f"it returned a {type(out).__name__}, not a tensor")
    shape = out.shape
    del out  # its autograd graph, before the timed call makes its own
    gradients = modes.Gradients(positions, modes.grad_output(case, shape, given[positions[0]].device, SEED))
    return modes.timed_call(case.mode, functools.partial(forward, *given), given, gradients, what)


def _launched(call: Callable[[], Any], device: str, what: str) -> launches.Launched:
    """The Triton launches of what is timed of `call`: of a Staged call (a backward mode's) its
    `before`, the forward, runs outside the record, as a run records it (groups.record_compiled)."""
    from .measure import Staged

    if isinstance(call, Staged):
        guard.call(what, functools.partial(_synchronized, call.before, device), guard.CALL_LIMIT_S)
        call = call.call
    with launches.recording() as launched:
        guard.call(what, functools.partial(_synchronized, call, device), guard.CALL_LIMIT_S)
    return launched


def _synchronized(call: Callable[[], Any], device: str) -> Any:
    done = call()
    if device == "cuda":
        import torch

        torch.cuda.synchronize()  # a launch's failure shows here, in its call
    return done


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
