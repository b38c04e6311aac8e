"""What changed in the compiled code between two sides of one benchmark: each Triton kernel's
recorded artifacts (records/compiled.py) side by side, only where they differ. A report shows
it beside a changed time as its likely cause, and says so when the machine code is the same:
then the change is outside the kernel (its launch, its inputs, its neighbours).

Kernels are paired by name, in the order each side first launched them (the second launch of a
kernel on another grid pairs with the other side's second). A kernel only one side launched is
a change of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from pydantic import ConfigDict, Field, with_config

from ..records.compiled import INSTRUCTION_CLASSES, MAX_KERNELS, Compiled, CompiledKernel
from ..records.schema import MAX_NAME, Name, Text

_STRICT = ConfigDict(strict=True, extra="forbid", defer_build=True)
MAX_DIFFERENCES = 256  # a kernel's, in a comparison file; past it, how many more
Value = Text | int | bool | None

# The fields compared, in the order a reader asks about them, each with how it is shown.
# Specialization entries and instruction classes are compared one by one after these.
FIELDS: tuple[tuple[str, str], ...] = (
    ("grid", "grid"),
    ("num_warps", "warps"),
    ("num_stages", "stages"),
    ("num_ctas", "CTAs"),
    ("maxnreg", "maxnreg"),
    ("registers", "registers"),
    ("spill_store_bytes", "spill stores (B)"),
    ("spill_load_bytes", "spill loads (B)"),
    ("static_shared_bytes", "static shared (B)"),
    ("dynamic_shared_bytes", "shared memory (B)"),
    ("occupancy", "occupancy"),
    ("launches", "launches"),
)
INSTRUCTION_ORDER = (*INSTRUCTION_CLASSES, "total")
DIGESTS: tuple[tuple[str, str], ...] = (
    ("source_sha256", "source"),
    ("ttgir_sha256", "TTGIR"),
    ("ptx_sha256", "PTX"),
    ("cubin_sha256", "cubin"),
)


@with_config(_STRICT)
@dataclass(frozen=True)
class Difference:
    what: Name  # "registers", "BLOCK_K", "mma instructions", "cubin"
    baseline: Value
    current: Value


@with_config(_STRICT)
@dataclass(frozen=True)
class KernelChange:
    name: Name
    differences: Annotated[list[Difference], Field(max_length=MAX_DIFFERENCES)]
    only_on: Annotated[str, Field(pattern=r"^(baseline|current)$")] | None = None  # one side launched it


@with_config(_STRICT)
@dataclass(frozen=True)
class CompiledChange:
    """The kernels that differ; `same_machine_code` when every kernel's machine code (its SASS,
    CompiledKernel.same_code) is the same on both sides and both launched the same kernels;
    `unknown` why nothing could be compared."""

    kernels: Annotated[list[KernelChange], Field(max_length=2 * MAX_KERNELS)] = field(default_factory=list)
    same_machine_code: bool = False
    unknown: Text | None = None


def compiled_change(
    baseline: Compiled | None, current: Compiled | None, names: tuple[str, str] = ("baseline", "current")
) -> CompiledChange | None:
    """The change between two benchmarks' compiled kernels; None where neither side recorded
    any (an implementation that launches no Triton kernel, a run on the interpreter). `names`
    are the sides' as `unknown` says them (a bisect's: "the last good commit")."""
    if not _launched(baseline) and not _launched(current):
        return None
    for side, compiled in zip(names, (baseline, current), strict=True):
        if compiled is None:
            return CompiledChange(unknown=f"the {side} recorded no compiled kernels (an older perfbot, or no GPU)")
        if compiled.unrecorded:
            return CompiledChange(unknown=f"the {side}'s kernels could not be recorded: {compiled.unrecorded}")
    assert baseline is not None and current is not None
    changes = []
    same = len(baseline.kernels) == len(current.kernels) and baseline.more == current.more == 0
    for before, after in _paired(baseline.kernels, current.kernels):
        if before is None or after is None:
            same = False
            kernel = before or after
            assert kernel is not None
            changes.append(KernelChange(kernel.name, [], "baseline" if after is None else "current"))
            continue
        same = same and before.same_code(after)
        differences = kernel_differences(before, after)
        if differences:
            changes.append(KernelChange(after.name, differences))
    if baseline.more != current.more:  # kernels past the recorded ones (MAX_KERNELS): how many
        changes.append(KernelChange("kernels not recorded", [Difference("how many", baseline.more, current.more)]))
    return CompiledChange(kernels=changes, same_machine_code=same)


def kernel_differences(before: CompiledKernel, after: CompiledKernel) -> list[Difference]:
    """What differs between two compilations of one kernel, in FIELDS' order, then its
    specialization, its instruction counts and its digests (short)."""
    found = [
        Difference(shown, _plain(getattr(before, name)), _plain(getattr(after, name)))
        for name, shown in FIELDS
        if getattr(before, name) != getattr(after, name)
    ]
    for key in sorted(set(before.specialization) | set(after.specialization)):
        old, new = before.specialization.get(key), after.specialization.get(key)
        if old != new:
            found.append(Difference((key or "?")[:MAX_NAME], _plain(old, ", "), _plain(new, ", ")))
    for kind in sorted(set(before.instructions) | set(after.instructions), key=_instruction_order):
        old_count, new_count = before.instructions.get(kind), after.instructions.get(kind)
        if old_count != new_count:
            found.append(Difference(f"{kind.replace('_', ' ')} instructions", old_count, new_count))
    for name, shown in DIGESTS if not before.same_code(after) else ():  # else: line info only
        old_digest, new_digest = getattr(before, name), getattr(after, name)
        if old_digest != new_digest:
            found.append(Difference(shown, _short(old_digest), _short(new_digest)))
    if len(found) > MAX_DIFFERENCES:  # a file of this many would be refused when read back
        left_out = len(found) - MAX_DIFFERENCES + 1
        found = [*found[: MAX_DIFFERENCES - 1], Difference("differences not shown", None, left_out)]
    return found


def _launched(compiled: Compiled | None) -> bool:
    return compiled is not None and bool(compiled.kernels or compiled.more or compiled.unrecorded)


def _paired(
    before: list[CompiledKernel], after: list[CompiledKernel]
) -> list[tuple[CompiledKernel | None, CompiledKernel | None]]:
    """Each side's kernels paired by name and by their rank among that name's launches."""

    def ranked(kernels: list[CompiledKernel]) -> dict[tuple[str, int], CompiledKernel]:
        seen: dict[str, int] = {}
        out = {}
        for kernel in kernels:
            seen[kernel.name] = seen.get(kernel.name, -1) + 1
            out[(kernel.name, seen[kernel.name])] = kernel
        return out

    old, new = ranked(before), ranked(after)
    keys = list(old) + [key for key in new if key not in old]
    return [(old.get(key), new.get(key)) for key in keys]


def _instruction_order(kind: str) -> tuple[int, str]:
    return (INSTRUCTION_ORDER.index(kind) if kind in INSTRUCTION_ORDER else len(INSTRUCTION_ORDER), kind)


def _plain(value: object, joiner: str = "×") -> Value:
    """A value as the comparison file holds it: occupancy and grids ("132×1×1") as short text, and
    a specialization's lists (its aligned arguments) joined by `joiner`."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, list):
        return joiner.join(str(v) for v in value)[:2000]
    blocks = getattr(value, "blocks_per_sm", None)
    if blocks is not None:
        return f"{blocks} blocks/SM ({getattr(value, 'limited_by', '?')})"
    return str(value)[:2000]


def _short(digest: str | None) -> str | None:
    return digest[:12] if digest else None
