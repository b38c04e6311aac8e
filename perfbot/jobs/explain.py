"""`perfbot explain`'s work: what the compiler made of two revisions' kernels, nothing timed and
no result checked. Both sides are checked out as an A/B's are (ab_sides.py: each revision in a
worktree of its own, the head this checkout by default); a process of the subjects' own loads
them (the head's code under the base's declarations), calls each chosen implementation once per
case on its side's inputs and records every Triton kernel it launched
(measuring/compiled_sides.py); this process compares the two sides' records
(deciding/compiled_change.py) and runs none of their code.

Where the kernels are compiled (`target`): on the GPU here, each call run there on real inputs,
when there is one and `--gpu-model` names none; otherwise for the GPU `--gpu-model` names (by default
offline.DEFAULT_GPU) without one, on CPU inputs, nothing launched (compiling/offline.py). Triton's
interpreter compiles nothing, so it is refused before any kernel is defined.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from typing_extensions import TypedDict

from ..compiling import offline
from ..compiling.explanation import Explained, Explanation, Revision, Side, Target
from ..config import ProjectConfig
from ..deciding.compiled_change import compiled_change
from ..errors import BadInput, PerfbotError
from ..records.compiled import Compiled
from ..records.schema import validate_message
from .ab_sides import Revisions, checked_out


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
    """What explain compiles: the revisions; the suite, case, family and mode names (`selection`), the
    implementations (`kernel_names`; ("all",) for every one the suites list; none: those under
    test) and variants asked for, which the base's subject turns into cases; where (`target`);
    whether each kernel's full SASS is kept."""

    revisions: Revisions
    selection: dict[str, tuple[str, ...]]
    kernel_names: tuple[str, ...]
    variants: tuple[str, ...]
    target: Target
    keep_sass: bool = False


def explain(config: ProjectConfig, request: Request, told: Callable[[object], None]) -> Explanation:
    """Both sides checked out (ab_sides.checked_out; the head this checkout by default), their
    kernels compiled in a process of their own, side by side. `told` hears its progress
    (commands/context.told_progress)."""
    from ..measuring import subject_process

    with checked_out(config, request.revisions) as trees:
        kernels = trees.kernels()
        asked = {
            "base": str(kernels["base"]),
            "head": str(kernels["head"]),
            "selection": request.selection,
            "kernel_names": request.kernel_names,
            "variants": request.variants,
            "target": dataclasses.asdict(request.target),
            "keep_sass": request.keep_sass,
        }
        try:
            answer = subject_process.ask("explain", asked, told)
        except PerfbotError as error:
            raise trees.said_of_revisions(error) from error
    compiled = validate_message("explain's process of the subjects' own", answer, _answer(), "answer")
    heads = {_key(row): row for row in compiled["rows"]["head"]}
    rows = [_explained(row, heads.get(_key(row)), compiled["missing"]) for row in compiled["rows"]["base"]]
    (_, base_sha), (head_tree, head_sha) = trees.trees["base"], trees.trees["head"]
    return Explanation(
        base=Revision(request.revisions.base, base_sha),
        head=Revision(request.revisions.head, head_sha, head_tree if head_sha is None else None),
        target=request.target,
        rows=rows,
        pins=trees.pins,
    )


class _Row(TypedDict):
    suite: str
    case: str
    dtype: str
    mode: str
    kernel: str
    implementation: str
    compiled: Compiled | None
    failed: str | None


class _Answer(TypedDict):
    rows: dict[Literal["base", "head"], list[_Row]]
    missing: dict[str, str]


@functools.cache
def _answer() -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(_Answer)


def _key(row: _Row) -> tuple[str, str, str, str]:
    """A row's benchmark: its case in its mode, and the implementation (with its variant)."""
    return (row["suite"], row["case"], row["mode"], row["implementation"])


def _side(row: _Row) -> Side:
    return Side(compiled=row["compiled"], failed=row["failed"])


def _explained(base: _Row, head: _Row | None, missing: dict[str, str]) -> Explained:
    if head is None:
        head_side = Side(absent=missing.get(base["kernel"], "the head has no implementation of that name"))
    else:
        head_side = _side(head)
    base_side = _side(base)
    change = None
    if base_side.compiled is not None and head_side.compiled is not None:
        change = compiled_change(base_side.compiled, head_side.compiled)
    return Explained(
        base["suite"], base["case"], base["dtype"], base["implementation"], base_side, head_side, change, base["mode"]
    )
