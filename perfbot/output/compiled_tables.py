"""What changed in the compiled code (deciding/compiled_change.py's CompiledChange) as people read
it: one row per difference, kernel | what | baseline | current, as markdown (the PR comment's
sections, the bisect report, the bisect's issue) and for the terminal. The one place that says
how a difference is shown, so every report shows it alike.
"""

from __future__ import annotations

from typing import Final

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..deciding.compiled_change import CompiledChange, KernelChange, Value
from ..records.compiled import MAX_KERNELS
from .markdown import TEMPLATES, Markdown

# Differences a kernel shows before the rest are counted instead: a report of many flagged rows
# stays short (the comparison file and the bisect's outcome file hold them all).
ROWS_PER_KERNEL: Final = 40
FEW_ROWS_PER_KERNEL: Final = 8  # when the PR comment is near GitHub's limit
SAME_MACHINE_CODE: Final = "same machine code: the change is outside this kernel (launch, inputs, neighbours)"

Cells = tuple[str, str, str, str]
SIDES: Final = ("baseline", "current")  # the two sides' columns, as a comparison names them


def shown(value: Value) -> str:
    """A recorded value as a cell shows it: "—" where a side has none."""
    return "—" if value is None else str(value)


def lines(change: CompiledChange) -> list[str]:
    """The sentences said before (or instead of) the table: why nothing is known, that the
    machine code is the same, or that what was recorded is the same but not all of it."""
    if change.unknown:
        return [f"not known: {change.unknown}"]
    if change.same_machine_code:
        return [SAME_MACHINE_CODE]
    if not change.kernels:
        return [
            f"the kernels recorded are the same, but more were launched than perfbot records ({MAX_KERNELS}): "
            "the change may be in those"
        ]
    return []


def rows(change: CompiledChange, per_kernel: int | None = ROWS_PER_KERNEL) -> list[Cells]:
    """One row per difference, each kernel's first `per_kernel` (None: all) and then how many
    more; a kernel only one side launched is one row, "launched" under that side. A kernel is
    named on its first row only."""
    found: list[Cells] = []
    for kernel in change.kernels:
        first, *rest = _kernel_rows(kernel, per_kernel)
        found += [first, *(("", *cells[1:]) for cells in rest)]
    return found


def _kernel_rows(kernel: KernelChange, per_kernel: int | None) -> list[Cells]:
    if kernel.only_on is not None:
        launched = ("not launched", "launched") if kernel.only_on == "current" else ("launched", "not launched")
        return [(kernel.name, "launched by one side only", *launched)]
    kept = kernel.differences if per_kernel is None else kernel.differences[:per_kernel]
    found: list[Cells] = [(kernel.name, d.what, shown(d.baseline), shown(d.current)) for d in kept]
    left = len(kernel.differences) - len(kept)
    if left:
        found.append((kernel.name, f"…and {left} more difference(s), left out here", "", ""))
    return found


def compiled_markdown(
    change: CompiledChange, per_kernel: int | None = ROWS_PER_KERNEL, sides: tuple[str, str] = SIDES
) -> Markdown:
    """The change as markdown: its sentences, then the table, its two sides' columns headed
    `sides`; every value escaped."""
    template = TEMPLATES.get_template("compiled.md.j2")
    return Markdown(template.render(lines=lines(change), rows=rows(change, per_kernel), sides=sides).strip("\n"))


def compiled_renderable(
    title: str, change: CompiledChange, per_kernel: int | None = ROWS_PER_KERNEL, sides: tuple[str, str] = SIDES
) -> RenderableType:
    """The change for the terminal, under `title` (plain text, escaped here)."""
    said = [Text(f"{title}: {line}") for line in lines(change)]
    found = rows(change, per_kernel)
    if not found:
        return Group(*said) if said else Text(title)
    table = Table(title=escape(title), title_justify="left")
    for column in ("kernel", "what"):
        table.add_column(column)
    for side in sides:
        table.add_column(escape(side), justify="right")
    for cells in found:
        table.add_row(*(escape(cell) for cell in cells))
    return Group(*said, table)


def spaced(renderables: list[RenderableType]) -> list[RenderableType]:
    """Each renderable after a blank line, as the terminal shows sections under a table."""
    return [part for renderable in renderables for part in (Text(""), renderable)]
