"""A case's benchmarks checked, captured and checked again: each planned implementation run
once on fresh inputs and compared with the trusted result, the right ones captured as CUDA
graphs, and once timed, the last replay's output checked before it becomes a record."""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import random
import secrets
import sys
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import torch

from ..compiling import artifacts, launches, tuning
from ..errors import BadInput, EnvironmentFailure
from ..loading import guard
from ..loading.subject import FORWARD, Case, Subject
from ..records.autotune import AutotunePick, OwnPicks
from ..records.compiled import Compiled
from ..records.run import Benchmark, Failure
from ..records.schema import clean, shown
from . import correctness, measure, modes
from .planning import Planned, RunSettings

FRESH_TRIES = 2  # fresh draws an implementation must fail to be wrong (recheck_fresh)


@dataclass
class _Ready:
    planned: Planned
    call: Callable[[], Any]
    expected: Any
    check: correctness.Check
    config: dict[str, Any] | None
    compiled: Future[Compiled] | None = None  # the Triton kernels its checked call launched, being read
    # Each autotuned kernel's config, as its checked call chose it (compiling/tuning.py), and every
    # config each such kernel may run: what an A/B's sides are aligned by (alignment.py).
    picks: list[AutotunePick] = field(default_factory=list)
    configs: dict[tuning.Identity, list[dict[str, Any]]] = field(default_factory=dict)
    launches: int = 0  # the Triton kernel launches of its calls: what its graph must hold
    inputs: tuple[Any, ...] = ()  # what its call was given: the buffers its graph reads
    reference: Callable[..., Any] | None = None  # what its result is checked against
    # The largest relative error accepted, of each part of a result of several (modes.bound).
    bound: float | tuple[float, ...] = 0.0
    parts: tuple[str, ...] = ()  # what each part of its result is (modes.parts)
    gradients: modes.Gradients | None = None  # of a backward mode: the grad inputs and grad_output


def describe(subject: Subject) -> dict[str, Any]:
    """What results record of the subject: its name, its tolerance, which implementations are its
    own and which are bounds (the others are baselines)."""
    return {
        "subject": subject.name,
        "error_bounds": dict(subject.tolerance),
        "under_test": [name for name, impl in subject.implementations.items() if impl.under_test],
        "bounds": [name for name, impl in subject.implementations.items() if impl.bound],
    }


def check_group(
    group: list[Planned],
    generator: torch.Generator,
    subject: Subject,
    limit: float | None = None,
) -> tuple[list[_Ready], list[tuple[str, Failure]]]:
    """Run every planned implementation of one case once, on fresh inputs, and compare its output
    with the trusted result: the ones that are right, and a failure for each that is not (or raised).
    Each ready one carries the configs its autotuned kernels chose (`record_compiled` then reads
    what it launches). Each call into the subject's code may take `limit` seconds at most, if
    given (guard.py)."""
    case = group[0].case
    label = f"case {case.suite}/{case.name}"
    made = _subjects_own(f"inputs({label})", subject, functools.partial(subject.inputs, case, generator), limit)
    if not isinstance(made, tuple | list):
        raise BadInput(f"subject {subject.name!r}: inputs({label}) returned a {type(made).__name__}, not a tuple")
    inputs = tuple(made)
    # What each implementation is given, kept aside: one that changes an input in place is wrong
    # (the model's next layer would read what it wrote), and the next is given the inputs again.
    kept = guard.call(f"subject {subject.name!r}: inputs({label}), copied", functools.partial(_copies, inputs), limit)
    positions = () if case.mode == FORWARD else modes.grad_positions(subject, case, inputs, label)
    parts = modes.parts(case, positions)  # what each part of a result is, as a wrong one is named
    references: dict[tuple[int, tuple[tuple[str, str], ...]], tuple[Any, modes.Gradients | None]] = {}
    ready, failures = [], []
    for planned in group:
        impl = planned.impl
        reference = impl.reference or subject.reference
        key = (id(reference), planned.values)
        values = dict(planned.values)
        if key not in references:
            own = subject.has_own_reference(impl)
            what = f"{impl.name}'s own reference ({label})" if own else f"the reference ({label})"
            trusted = functools.partial(_trusted, case, reference, inputs, values, positions, generator.initial_seed())
            expected, gradients, untrusted = _subjects_own(what, subject, trusted, limit)
            if untrusted:
                raise BadInput(f"subject {subject.name!r}: {what} {untrusted}: no result can be checked against it")
            references[key] = expected, gradients
        expected, gradients = references[key]
        bound = modes.bound(subject, case, len(expected) if isinstance(expected, tuple) else 1)
        name = f"subject {subject.name!r}: implementation {planned.name!r} ({label})"
        # A backward mode's grad inputs as leaves that require grad, sharing the inputs' memory;
        # each implementation its own, so that none reuses another's autograd nodes (modes.py).
        given = modes.leaves(inputs, positions)
        call = modes.timed_call(case.mode, guard.guarded(name, impl.fn, *given, **values), given, gradients, name)
        try:
            # Its first call: where an autotuned kernel tunes, and what Triton launches (its graph must hold them).
            with tuning.session() as tuned:
                output, launched = _first_call(name, call, generator.device.type, limit)
        except guard.Refused:
            raise
        except modes.WrongOutput as error:  # no gradient can be taken of its output
            failures.append((planned.side, _failure(planned, f"wrong result: {error}")))
            _restore(inputs, kept)
            continue
        except Exception as error:  # noqa: BLE001 -- any failure of the subject is reported, never timed
            if os.environ.get("PERFBOT_DEBUG"):  # where in the subject's code, for its author
                traceback.print_exception(error, file=sys.stderr)
            failures.append(
                (planned.side, _failure(planned, f"raised {type(error).__name__}: {_first_line(error, limit)}"))
            )
            _restore(inputs, kept)
            continue
        changed = guard.call(f"{name}: its inputs", functools.partial(_changed, inputs, kept), limit)
        if changed:
            reason = f"wrong result: it changed its input{'s' if len(changed) > 1 else ''} {changed} in place"
            failures.append((planned.side, _failure(planned, reason)))
            _restore(inputs, kept)
            continue
        try:  # a Tensor subclass's methods are the subject's code
            compared = functools.partial(correctness.check, output, expected, bound, parts)
            check = guard.call(f"{name}: its output", compared, limit)
        except guard.Refused:
            raise
        except Exception as error:  # noqa: BLE001 -- this implementation's output, not perfbot, failed
            reason = f"its output could not be checked: {type(error).__name__}: {_first_line(error, limit)}"
            failures.append((planned.side, _failure(planned, reason)))
            continue
        if not check.passed:
            failures.append((planned.side, _failure(planned, _wrong("wrong result", check), check)))
            continue
        try:
            config = (
                None
                if impl.config is None
                else guard.call(f"{name}: config", functools.partial(impl.config, *inputs), limit)
            )
        except guard.Refused:
            raise
        except Exception as error:  # noqa: BLE001 -- reported as this implementation's failure, the run goes on
            failures.append(
                (
                    planned.side,
                    _failure(planned, f"its config raised {type(error).__name__}: {_first_line(error, limit)}"),
                )
            )
            continue
        ready.append(
            _Ready(
                planned,
                call,
                expected,
                check,
                config,
                None,
                list(tuned.picks.values()),
                tuned.configs,
                launched.count,
                inputs,
                reference,
                bound,
                parts,
                gradients,
            )
        )
    return ready, failures


def _first_call(name: str, call: Any, device: str, limit: float | None) -> tuple[Any, launches.Launched]:
    """An implementation's call, and the Triton launches of what is timed of it: of a Staged call
    (a backward mode's) its `before`, the forward, runs outside the count."""
    if isinstance(call, measure.Staged):
        guard.call(name, functools.partial(_synchronized, call.before, device), limit)
        call = call.call
    with launches.recording() as launched:
        output = guard.call(name, functools.partial(_synchronized, call, device), limit)
    return output, launched


def record_compiled(
    ready: list[_Ready], device: str, limit: float | None = None, keep_sass: bool = False
) -> list[tuple[str, Failure]]:
    """The Triton kernels each checked implementation launches (`_Ready.compiled`), seen on a
    second call, once its autotuned kernels are at the configs it will be timed at (its first may
    autotune, launching candidates it then drops), and read while the case is timed. None off a
    GPU: the interpreter compiles nothing. One whose second call fails leaves `ready` and becomes
    a failure."""
    failures = []
    for r in list(ready):
        if device != "cuda":
            continue
        name = f"subject {r.planned.subject.name!r}: implementation {r.planned.name!r}"
        try:
            _, launched = _first_call(name, r.call, device, limit)
        except guard.Refused:
            raise
        except Exception as error:  # noqa: BLE001 -- its second call failed where its first did not
            reason = f"raised on its second call {type(error).__name__}: {_first_line(error, limit)}"
            failures.append((r.planned.side, _failure(r.planned, reason)))
            ready.remove(r)
            continue
        r.compiled = artifacts.compiled_later(launched, keep_sass)
        r.launches = max(r.launches, launched.count)
    return failures


def _trusted(
    case: Case,
    reference: Callable[..., Any],
    inputs: tuple[Any, ...],
    values: dict[str, Any],
    positions: tuple[int, ...],
    seed: int,
) -> tuple[Any, modes.Gradients | None, str | None]:
    """The reference's result in the case's mode (modes.trusted), plain tensors, what a backward
    mode differentiates with, and why the result cannot be trusted (or None): under the
    reference's guard, since a Tensor subclass's methods are the subject's code."""
    expected, gradients = modes.trusted(case, reference, inputs, values, positions, seed)
    return expected, gradients, correctness.untrusted(expected, parts=case.mode != FORWARD)


def _trusted_again(
    mode: str, reference: Callable[..., Any], inputs: tuple[Any, ...], values: dict[str, Any], gradients: Any
) -> tuple[Any, str | None]:
    """As `_trusted`, on fresh inputs, with the grad_output the implementations were given."""
    expected = modes.expected(mode, reference, inputs, values, gradients)
    return expected, correctness.untrusted(expected, parts=mode != FORWARD)


def _copies(inputs: tuple[Any, ...]) -> tuple[torch.Tensor | None, ...]:
    """A copy of each tensor input (None for other values): what `_changed` compares with."""
    return tuple(x.detach().clone() if isinstance(x, torch.Tensor) else None for x in inputs)


def _changed(inputs: tuple[Any, ...], kept: tuple[torch.Tensor | None, ...]) -> list[int]:
    """The positions of the tensor inputs that differ from their copies, bit for bit (NaN where
    NaN was is the same)."""
    return [
        index
        for index, (x, copy) in enumerate(zip(inputs, kept, strict=True))
        if copy is not None and not _same_bits(x.detach(), copy)
    ]


def _same_bits(x: torch.Tensor, copy: torch.Tensor) -> bool:
    if x.shape != copy.shape or x.dtype != copy.dtype:
        return False
    if x.is_floating_point() or x.is_complex():
        both_nan = torch.isnan(x) & torch.isnan(copy)
        return bool(torch.equal(torch.where(both_nan, 0, x), torch.where(both_nan, 0, copy)))
    return bool(torch.equal(x, copy))


def _restore(inputs: tuple[Any, ...], kept: tuple[torch.Tensor | None, ...]) -> None:
    """Put the inputs back as they were made, for the implementations after this one."""
    with torch.no_grad():
        for x, copy in zip(inputs, kept, strict=True):
            if copy is not None and x.shape == copy.shape and x.dtype == copy.dtype:
                x.copy_(copy)


def _wrong(reason: str, check: correctness.Check) -> str:
    """A wrong result's reason, naming the part of a result of several that is wrong."""
    reason = f"{reason} in {check.part}" if check.part else reason
    return f"{reason}: it returned {check.why}" if check.why else reason


def _synchronized(call: Callable[[], Any], device: str) -> Any:
    """The call's output once the GPU has computed it, so that its time is the call's."""
    output = call()
    if device == "cuda":
        torch.cuda.synchronize()
    return output


def _subjects_own(what: str, subject: Subject, fn: Callable[[], Any], limit: float | None = None) -> Any:
    """Call a function of the subject's (its inputs, a reference, a count): a failure there is the
    subject's mistake, said in one line (exit 2); a GPU out of memory is the environment's."""
    try:
        return guard.call(f"subject {subject.name!r}: {what}", fn, limit)
    except guard.Refused:
        raise
    except torch.cuda.OutOfMemoryError as error:
        raise EnvironmentFailure(
            f"subject {subject.name!r}: {what}: the GPU ran out of memory: {_first_line(error, limit)}"
        ) from None
    except Exception as error:  # noqa: BLE001 -- the subject's code
        raise BadInput(
            f"subject {subject.name!r}: {what} raised {type(error).__name__}: {_first_line(error, limit)}"
        ) from None


def capture_group(
    ready: list[_Ready], settings: RunSettings, placement: random.Random
) -> tuple[dict[str, measure.Captured], list[tuple[str, Failure]]]:
    """Capture every checked benchmark as a CUDA graph, in an order drawn from `placement` (what
    is captured later gets the memory the earlier ones leave: listed order would give it always
    to the head side); one that cannot be captured leaves `ready` and becomes a failure. The
    captures come back in `ready`'s order, the order a round lays them out in."""
    captured, failures = {}, []
    for r in placement.sample(ready, len(ready)):
        try:
            captured[r.planned.key] = measure.capture(r.call, settings.warmup_calls)
            if problem := measure.graph_problem(captured[r.planned.key], r.launches):
                failures.append((r.planned.side, _failure(r.planned, f"wrong result: {problem}")))
                ready.remove(r)
                continue
        except guard.Refused:
            raise
        except Exception as error:  # noqa: BLE001 -- e.g. a kernel that cannot run inside CUDA-graph capture
            failures.append(
                (
                    r.planned.side,
                    _failure(
                        r.planned, f"cannot be captured in a CUDA graph: {type(error).__name__}: {_first_line(error)}"
                    ),
                )
            )
            ready.remove(r)
    return {r.planned.key: captured[r.planned.key] for r in ready}, failures


def finish_group(
    ready: list[_Ready], captured: dict[str, measure.Captured], samples: dict[str, list[float]], throttled: list[int]
) -> tuple[list[tuple[str, Benchmark]], list[tuple[str, Failure]]]:
    """The timed benchmarks, after checking that what was timed is right too: the output of the
    last graph replay (then `recheck_fresh` replays it on fresh inputs). A row's second pair of
    captures, each side at its own autotune picks (alignment.py), is checked alike and joins its
    row as `own_picks`."""
    benchmarks, failures = [], []
    own: dict[tuple[str, str], OwnPicks] = {}
    for r in ready:
        arm = f" at {r.planned.arm}" if r.planned.arm else ""
        if not samples.get(r.planned.key):  # a case's second turn: it failed its check on the first
            failures.append(
                (r.planned.side, _failure(r.planned, f"not timed{arm}: it passed its check only on a second try"))
            )
            continue
        what = f"subject {r.planned.subject.name!r}: implementation {r.planned.kernel!r}'s replayed output{arm}"
        try:
            output = captured[r.planned.key].output
            replayed = guard.call(what, functools.partial(correctness.check, output, r.expected, r.bound, r.parts))
        except guard.Refused:
            raise
        except Exception as error:  # noqa: BLE001 -- the implementation's output, not perfbot, failed
            reason = f"its replayed output{arm} could not be checked: {type(error).__name__}: {_first_line(error)}"
            failures.append((r.planned.side, _failure(r.planned, reason)))
            continue
        if not replayed.passed:
            reason = _wrong(f"wrong result when replayed from a CUDA graph{arm}", replayed)
            failures.append((r.planned.side, _failure(r.planned, reason, replayed)))
            continue
        if r.planned.arm:
            own[(r.planned.side, r.planned.name)] = OwnPicks(samples_ms=samples[r.planned.key], autotune=r.picks)
        else:
            benchmarks.append((r.planned.side, _benchmark(r, samples[r.planned.key], throttled)))
    return [(side, dataclasses.replace(b, own_picks=own.get((side, b.name)))) for side, b in benchmarks], failures


def recheck_fresh(
    ready: list[_Ready],
    captured: dict[str, measure.Captured],
    subject: Subject,
    device: str,
    limit: float | None = None,
) -> dict[str, str]:
    """After timing, each timed graph replayed on fresh inputs: values made from a seed drawn now
    (`secrets`), which the subject cannot have known when it was imported, checked, captured or
    timed, written into the very buffers the graph reads, and its output checked against the
    reference on them. A result kept across calls (keyed on its inputs' addresses, say), or a
    graph that holds none of the work, replays what it computed before: wrong. One that fails is
    tried on a second draw and is wrong only if it fails that too: a subject whose tolerance a
    rare draw of its inputs misses (a sum that comes out near zero) misses two in a row as rarely
    again. Inputs that cannot be written in place (a shape or value that differs between draws)
    are not rechecked. Why each wrong one is wrong, by benchmark key."""
    timed = [r for r in ready if not r.planned.arm and r.planned.key in captured]
    failing: dict[str, list[str]] = {}
    for _ in range(FRESH_TRIES):
        if not timed:
            break
        seed = secrets.randbits(63)
        case = timed[0].planned.case
        generator = torch.Generator(device=device).manual_seed(seed)
        made = _subjects_own(
            f"inputs(case {case.suite}/{case.name}), fresh",
            subject,
            functools.partial(subject.inputs, case, generator),
            limit,
        )
        wrong: dict[str, str] = {}
        refilled: dict[int, bool] = {}
        expected: dict[tuple[int, tuple[tuple[str, str], ...]], Any] = {}
        for r in timed:
            if id(r.inputs) not in refilled:
                refilled[id(r.inputs)] = _refill(r.inputs, tuple(made))
            if not refilled[id(r.inputs)] or r.reference is None:
                continue
            computed = (id(r.reference), r.planned.values)
            if computed not in expected:
                what = f"the reference (case {case.suite}/{case.name}), on fresh inputs"
                values = dict(r.planned.values)
                again = functools.partial(_trusted_again, case.mode, r.reference, r.inputs, values, r.gradients)
                result, untrusted = _subjects_own(what, subject, again, limit)
                if untrusted:
                    raise BadInput(f"subject {subject.name!r}: {what} {untrusted}: no result can be checked against it")
                expected[computed] = result
            name = f"subject {subject.name!r}: implementation {r.planned.kernel!r}'s graph, replayed on fresh inputs"
            output = guard.call(name, functools.partial(measure.replay, captured[r.planned.key]), limit)
            compared = functools.partial(correctness.check, output, expected[computed], r.bound, r.parts)
            check = guard.call(name, compared, limit)
            if not check.passed:
                wrong[r.planned.key] = f"seed {seed}: {_wrong('wrong result', check)}"
        for key, reason in wrong.items():
            failing.setdefault(key, []).append(reason)
        timed = [r for r in timed if r.planned.key in wrong]
    return {
        key: f"its graph, replayed on fresh inputs after timing, was wrong on {len(reasons)} of {len(reasons)} draws "
        f"({'; '.join(reasons)})"
        for key, reasons in failing.items()
        if len(reasons) == FRESH_TRIES
    }


def _refill(inputs: tuple[Any, ...], fresh: tuple[Any, ...]) -> bool:
    """Write the fresh inputs' values into the tensors of `inputs`, in place; False (nothing
    written) where they do not match one for one: another count, shape or dtype, or another value
    of an input that is not a tensor."""
    if len(inputs) != len(fresh):
        return False
    for x, f in zip(inputs, fresh, strict=True):
        if isinstance(x, torch.Tensor) != isinstance(f, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor):
            if x.shape != f.shape or x.dtype != f.dtype:
                return False
        elif x != f:
            return False
    with torch.no_grad():
        for x, f in zip(inputs, fresh, strict=True):
            if isinstance(x, torch.Tensor):
                x.copy_(f)
    return True


def _benchmark(r: _Ready, samples: list[float], throttled: list[int]) -> Benchmark:
    case = r.planned.case
    return Benchmark(
        kernel=r.planned.kernel,
        variant=r.planned.variant,
        shape=case.shape,
        dtype=case.dtype,
        samples_ms=samples,
        suite=case.suite,
        case=case.name,
        mode=case.mode,
        flops=_count(r.planned, "flops"),
        bytes=_count(r.planned, "bytes"),
        relative_error=r.check.relative_error,
        error_bound=r.check.bound,
        config=r.config,
        compiled=None if r.compiled is None else r.compiled.result(),
        # A pair decided early stopped before the case's last rounds.
        throttled_samples=[i for i in throttled if i < len(samples)],
        autotune=r.picks,
    )


def _count(planned: Planned, what: str) -> int:
    """The flops or bytes of a benchmark: the implementation's own count, else the subject's, else
    0. A bound computes something else than the subject, so it counts only its own."""
    count = getattr(planned.impl, what)
    if count is None and not planned.impl.bound:
        count = getattr(planned.subject, what)
    if count is None:
        return 0
    case = planned.case
    where = f"{what} of {planned.kernel} (case {case.suite}/{case.name})"
    value = _subjects_own(where, planned.subject, functools.partial(count, case))
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 2**63:
        raise BadInput(f"subject {planned.subject.name!r}: {where} must be a number of at least 0, got {shown(value)}")
    return int(value)


def _first_line(error: Exception, limit: float | None = None) -> str:
    """The first line of an exception's message. Its `__str__` may be the subject's code: run
    under guard.call, within `limit` seconds (the default call limit if None); one that raises
    gives no message, not a failure of perfbot's."""
    within = guard.CALL_LIMIT_S if limit is None else limit
    try:
        text = guard.call(f"the message of a {type(error).__name__} from the subject", lambda: str(error), within)
    except guard.Refused:
        raise
    except Exception as failure:  # noqa: BLE001 -- the subject's __str__
        return f"(its message could not be read: its __str__ raised {type(failure).__name__})"
    text = text.strip() if type(text) is str else ""
    return clean(text.splitlines()[0], 300) if text else "(no message)"


def _failure(planned: Planned, reason: str, check: correctness.Check | None = None) -> Failure:
    case = planned.case
    return Failure(
        kernel=planned.kernel,
        variant=planned.variant,
        shape=case.shape,
        dtype=case.dtype,
        reason=reason,
        suite=case.suite,
        case=case.name,
        mode=case.mode,
        # NaN where the output held one (or was never written): no number, the reason says so.
        relative_error=_finite(check.relative_error) if check else None,
        error_bound=_finite(check.bound) if check else None,
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
