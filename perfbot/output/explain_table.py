"""What `perfbot explain` prints: where the kernels were compiled, then per implementation and
case a table of what differs in its compiled kernels (kernel, what, base, head), "same machine
code" where every kernel's SASS is the same, and each side's kernels in one line apiece, so that an
unchanged kernel shows its numbers too. Every name from a subject or a revision is escaped."""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..compiling.explanation import Explained, Explanation, Revision, Side
from ..records.compiled import CompiledKernel

NO_TRITON = "no Triton kernel"
SAME = "same machine code"
# The instruction classes a kernel's line shows (compiling/sass.py): mma and tma always, the
# others where it has any.
SUMMARY_CLASSES = ("mma", "tma", "async_copy", "global_load", "global_store")


def header(explanation: Explanation) -> str:
    where = explanation.target
    how = (
        f"run once on this machine's {where.gpu}"
        if where.launched
        else f"compiled for {where.gpu} without one (nothing launched, CPU inputs)"
    )
    return "\n".join(
        (
            "perfbot explain: the compiled Triton kernels of two revisions; nothing timed, no result checked",
            f"  base: {_revision(explanation.base)}",
            f"  head: {_revision(explanation.head)}",
            f"  kernels: {how}",
        )
    )


def _revision(side: Revision) -> str:
    if side.commit is None:
        return f"this checkout, uncommitted changes included ({side.checkout})"
    return f"{side.revision} = {side.commit}"


def renderables(explanation: Explanation) -> Iterator[RenderableType]:
    """Each row's table, then its sides' kernels, one line each."""
    for row in explanation.rows:
        yield _table(row)
        for side, outcome in (("base", row.base), ("head", row.head)):
            for line in side_lines(side, outcome):
                yield Text(line)
        yield Text("")


def _table(row: Explained) -> Table:
    title = f"{row.suite}/{row.case} ({row.dtype}): {row.implementation}"
    table = Table(title=escape(title), title_justify="left")
    for column in ("kernel", "what", "base", "head"):
        table.add_column(column, overflow="fold")
    for cells in difference_rows(row):
        table.add_row(*(escape(cell) for cell in cells))
    return table


def difference_rows(row: Explained) -> list[tuple[str, str, str, str]]:
    """The table's rows: (kernel, what, base, head)."""
    sides = (row.base, row.head)
    if any(side.compiled is None for side in sides):
        return [("", "compiled", _state(row.base), _state(row.head))]
    change = row.change
    if change is None:
        return [("", "Triton kernels", "none launched", "none launched")]
    if change.unknown is not None:
        return [("", "not compared", change.unknown, "")]
    rows = [("every kernel", "SASS", SAME, SAME)] if change.same_machine_code else []
    for kernel in change.kernels:
        if kernel.only_on is not None:
            launched = ("launched", "not launched")
            base, head = launched if kernel.only_on == "baseline" else launched[::-1]
            rows.append((kernel.name, "launched", base, head))
        for difference in kernel.differences:
            rows.append((kernel.name, difference.what, _value(difference.baseline), _value(difference.current)))
    if not rows:  # differences only where compiled_change looks past (none today): say so, not nothing
        rows.append(("every kernel", "no difference recorded", "", ""))
    return rows


def _state(side: Side) -> str:
    if side.failed is not None:
        return f"failed: {side.failed}"
    if side.absent is not None:
        return f"absent: {side.absent}"
    compiled = side.compiled
    assert compiled is not None
    if compiled.unrecorded is not None:
        return f"not recorded: {compiled.unrecorded}"
    count = len(compiled.kernels) + compiled.more
    return f"{count} kernel{'s' * (count != 1)}" if count else NO_TRITON


def _value(value: object) -> str:
    return "—" if value is None else str(value)


def side_lines(side: str, outcome: Side) -> list[str]:
    """A side's kernels, one line each; a side without any says why."""
    compiled = outcome.compiled
    if compiled is None or compiled.unrecorded is not None:
        return [f"{side}: {_state(outcome)}"]
    if not compiled.kernels:
        return [f"{side}: {NO_TRITON}"]
    lines = [f"{side}: {kernel_line(kernel)}" for kernel in compiled.kernels]
    if compiled.more:
        lines.append(f"{side}: and {compiled.more} more kernels, not recorded")
    return lines


def kernel_line(kernel: CompiledKernel) -> str:
    """One kernel's numbers: how it was launched, what it takes, its tensor-core and TMA
    instructions (and any other class the SUMMARY_CLASSES name that it has), its cubin."""
    spills = kernel.spill_store_bytes + kernel.spill_load_bytes
    occupancy = kernel.occupancy
    parts = [
        f"{kernel.registers} registers",
        f"spills {kernel.spill_store_bytes}/{kernel.spill_load_bytes} B (stores/loads)" if spills else "no spills",
        f"shared {kernel.static_shared_bytes}+{kernel.dynamic_shared_bytes} B",
        f"{occupancy.blocks_per_sm} blocks/SM ({occupancy.limited_by})" if occupancy else "occupancy unknown",
        *(
            f"{kind.replace('_', ' ')} {kernel.instructions.get(kind, 0)}"
            for kind in SUMMARY_CLASSES
            if kind in ("mma", "tma") or kernel.instructions.get(kind)
        ),
        f"cubin {kernel.cubin_sha256[:12]}",
    ]
    launch = f"grid {'×'.join(map(str, kernel.grid))}, {kernel.num_warps} warps, {kernel.num_stages} stages"
    return f"{kernel.name} ({launch}): " + ", ".join(parts)


def tally(explanation: Explanation) -> str:
    """The last line: how many rows changed, and how many could not be compared."""
    counts = {"changed": 0, SAME: 0, NO_TRITON: 0, "failed or absent on a side": 0, "not compared": 0}
    for row in explanation.rows:
        change = row.change
        if row.base.compiled is None or row.head.compiled is None:
            counts["failed or absent on a side"] += 1
        elif change is None:
            counts[NO_TRITON] += 1
        elif change.unknown is not None:
            counts["not compared"] += 1
        elif change.same_machine_code and not change.kernels:
            counts[SAME] += 1
        else:
            counts["changed"] += 1
    said = ", ".join(f"{count} {what}" for what, count in counts.items() if count)
    return f"{len(explanation.rows)} compiled side by side: {said or 'none'}"
