"""The modes a case is timed in (loading/subject.py MODES): what is captured and timed of an
implementation, and what its result is checked against.

- `forward`: the call, `fn(*inputs, **variant)`; its output against the reference's.
- `backward`: the gradients alone. The forward runs first, outside the timed graph (a `Staged`
  call's `before`: measure.capture runs it on the capture stream), with the grad inputs as leaf
  tensors that require grad; what is timed is `torch.autograd.grad(out, grad_inputs,
  grad_output, retain_graph=True)`, which returns the gradients rather than adding them into
  `.grad`, so that no replay sees the one before it. Each gradient is checked against float64
  autograd of the reference on the same inputs and grad_output.
- `forward+backward`: the forward and the gradients together, one training step's worth of the
  op; the output is checked too.

`grad_output` is drawn from a generator seeded with the run's seed (`--seed`), in the shape of the
reference's output and the case's dtype: every implementation of a case gets the same values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ..compiling import launches
from ..errors import BadInput
from ..loading import guard
from ..loading.subject import BACKWARD, FORWARD, FORWARD_BACKWARD, Case, Subject
from . import correctness
from .measure import Staged

# Added to a case's seed for its grad_output's generator: not the inputs' draw again.
GRAD_OUTPUT_SEED = 0x9E3779B9


class WrongOutput(Exception):
    """An implementation's output that no gradient can be taken of: a wrong result, said in one line."""


@dataclass(frozen=True)
class Gradients:
    """What a backward mode differentiates: the positions of the grad inputs, and the
    grad_output, in the case's dtype."""

    positions: tuple[int, ...]
    grad_output: torch.Tensor
    # grad_output in each other dtype an output came in, made once outside any timed graph.
    _cast: dict[torch.dtype, torch.Tensor] = field(default_factory=dict, compare=False, repr=False)

    def for_output(self, out: torch.Tensor) -> torch.Tensor:
        if out.dtype == self.grad_output.dtype:
            return self.grad_output
        if out.dtype not in self._cast:
            self._cast[out.dtype] = self.grad_output.to(out.dtype)
        return self._cast[out.dtype]


def grad_positions(subject: Subject, case: Case, inputs: Sequence[Any], label: str) -> tuple[int, ...]:
    """The positions of the inputs the gradient is taken with respect to: the subject's (or the
    case's family's) `grad_inputs`, each a floating-point tensor, else every floating-point tensor
    input. None to take: the subject's mistake (exit 2)."""
    floating = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()]
    declared = subject.grad_inputs_for(case)
    if declared is None:
        if not floating:
            raise BadInput(f"subject {subject.name!r}: inputs({label}) holds no floating-point tensor to differentiate")
        return tuple(floating)
    wrong = [p for p in declared if p not in floating]
    if wrong:
        raise BadInput(
            f"subject {subject.name!r}: grad_inputs names input {wrong[0]}, which is not a floating-point tensor "
            f"of inputs({label}) (those are at {floating})"
        )
    return tuple(declared)


def leaves(inputs: Sequence[Any], positions: Sequence[int], dtype: torch.dtype | None = None) -> tuple[Any, ...]:
    """The inputs with those at `positions` as leaf tensors that require grad: sharing the inputs'
    memory (so that what is written into an input, fresh values, is what the call reads), or
    copies in `dtype` where one is given (the reference's float64)."""
    given = list(inputs)
    for p in positions:
        x = given[p].detach()
        given[p] = (x.to(dtype) if dtype is not None else x).requires_grad_(True)
    return tuple(given)


def grad_output(case: Case, shape: torch.Size, device: torch.device, seed: int) -> torch.Tensor:
    """The case's grad_output: standard normal values from a generator seeded with `seed`, in the
    case's dtype."""
    generator = torch.Generator(device=device).manual_seed((seed + GRAD_OUTPUT_SEED) % 2**63)
    drawn = torch.randn(shape, generator=generator, device=device, dtype=torch.float32)
    return drawn.to(getattr(torch, case.dtype))


def timed_call(
    mode: str, forward: Callable[[], Any], given: Sequence[Any], gradients: Gradients | None, what: str
) -> Callable[[], Any]:
    """What is captured and timed of an implementation whose call on `given` (the inputs with the
    grad inputs as leaves) is `forward`: the call itself, or a backward mode's (module docstring).
    Its backward, the subject's code too, runs under guard.call, named by `what`."""
    if mode == FORWARD or gradients is None:
        return forward
    wrt = tuple(given[p] for p in gradients.positions)
    if mode == BACKWARD:
        backward = _Backward(forward, wrt, gradients, f"{what}: its backward")
        return Staged(backward.forward, backward.backward)

    def step() -> tuple[torch.Tensor, ...]:
        out = differentiable(forward(), gradients)
        grads = guard.call(f"{what}: its backward", lambda: _grad(out, wrt, gradients.for_output(out), retain=False))
        return (out.detach(), *grads)

    return step


@dataclass
class _Backward:
    """A backward mode's two stages: `forward`, whose output (and the tensors autograd saves) the
    `backward` it is followed by reads, as often as it is called."""

    call: Callable[[], Any]
    wrt: tuple[torch.Tensor, ...]
    gradients: Gradients
    what: str
    out: torch.Tensor | None = None

    def forward(self) -> None:
        # The last forward's autograd graph let go first: it holds the grad inputs' AccumulateGrad
        # nodes, made on the stream that forward ran on (the check's, the default stream). Kept,
        # the next forward reuses them, and a backward captured on another stream syncs with
        # theirs: a capture on the GPU fails (cudaErrorStreamCaptureInvalidated).
        self.out = None
        self.out = differentiable(self.call(), self.gradients)

    def backward(self) -> tuple[torch.Tensor, ...]:
        out = self.out
        if out is None:
            raise RuntimeError("the backward was called before its forward")
        return guard.call(self.what, lambda: _grad(out, self.wrt, self.gradients.for_output(out), retain=True))


def differentiable(out: Any, gradients: Gradients) -> torch.Tensor:
    """The output, if a gradient can be taken of it with the case's grad_output; else WrongOutput."""
    out = correctness.plain(out)
    if not isinstance(out, torch.Tensor):
        raise WrongOutput(f"it returned a {type(out).__name__}, not a tensor")
    if not out.requires_grad:
        raise WrongOutput(
            f"its output does not require grad: it is not differentiable with respect to inputs "
            f"{list(gradients.positions)} (no autograd.Function backward, or a call under no_grad?)"
        )
    if out.shape != gradients.grad_output.shape:
        raise WrongOutput(
            f"its output has shape {list(out.shape)}, the reference's {list(gradients.grad_output.shape)}"
        )
    return out


def _grad(
    out: torch.Tensor, wrt: tuple[torch.Tensor, ...], grad_output: torch.Tensor, retain: bool
) -> tuple[torch.Tensor, ...]:
    # An input the output does not depend on gets zeros, checked as any gradient is. The backward's
    # Triton launches are this thread's, for the record of what the call launches.
    with launches.backward_of_this_thread():
        return torch.autograd.grad(
            out, wrt, grad_output, retain_graph=retain, allow_unused=True, materialize_grads=True
        )


def trusted(
    case: Case,
    reference: Callable[..., Any],
    inputs: Sequence[Any],
    values: dict[str, str],
    positions: tuple[int, ...],
    seed: int,
) -> tuple[Any, Gradients | None]:
    """The trusted result of a case in its mode (`expected`), and for a backward mode the
    Gradients its implementations are differentiated with: the grad_output in the shape of the
    reference's output."""
    if case.mode == FORWARD:
        return correctness.plain(reference(*inputs, **values)), None
    given = leaves(inputs, positions, torch.float64)
    out = _differentiable_reference(reference(*given, **values))
    gradients = Gradients(positions, grad_output(case, out.shape, given[positions[0]].device, seed))
    return _expected_of(case.mode, out, given, gradients), gradients


def expected(
    mode: str, reference: Callable[..., Any], inputs: Sequence[Any], values: dict[str, str], gradients: Gradients | None
) -> Any:
    """The trusted result in `mode`: the reference's output; the gradients of float64 autograd
    through it, the grad inputs as float64 leaves, with the case's grad_output (a tuple, one per
    grad input); or the output and the gradients. Plain tensors (correctness.plain)."""
    if mode == FORWARD or gradients is None:
        return correctness.plain(reference(*inputs, **values))
    given = leaves(inputs, gradients.positions, torch.float64)
    return _expected_of(mode, _differentiable_reference(reference(*given, **values)), given, gradients)


def _differentiable_reference(out: Any) -> torch.Tensor:
    out = correctness.plain(out)
    if not isinstance(out, torch.Tensor) or not out.requires_grad:
        what = (
            f"a {type(out).__name__}" if not isinstance(out, torch.Tensor) else "an output that does not require grad"
        )
        raise ValueError(f"it returned {what}, of which no gradient can be taken on float64 leaves")
    return out


def _expected_of(mode: str, out: torch.Tensor, given: Sequence[Any], gradients: Gradients) -> tuple[torch.Tensor, ...]:
    wrt = tuple(given[p] for p in gradients.positions)
    grads = tuple(correctness.plain(g) for g in _grad(out, wrt, gradients.grad_output.to(out.dtype), retain=False))
    return grads if mode == BACKWARD else (out.detach(), *grads)


def bound(subject: Subject, case: Case, count: int) -> float | tuple[float, ...]:
    """The largest relative error accepted of each part of a result of `count` parts in the case's
    mode: the output's tolerance, each gradient's grad tolerance."""
    if case.mode == FORWARD:
        return subject.tolerance_for(case)
    grads = (subject.grad_tolerance_for(case),) * (count - (case.mode == FORWARD_BACKWARD))
    return (subject.tolerance_for(case), *grads) if case.mode == FORWARD_BACKWARD else grads


def parts(case: Case, positions: Sequence[int]) -> tuple[str, ...]:
    """What each part of a result in the case's mode is, as a wrong result names it."""
    grads = tuple(f"the gradient of input {p}" for p in positions)
    return ("the output", *grads) if case.mode == FORWARD_BACKWARD else grads
