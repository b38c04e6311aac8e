"""What `perfbot explain` found: per case and implementation, each side's compiled kernels (or why
it has none) and what changed between them. jobs/explain.py makes it, output/explain_table.py
prints it, and its --json file holds it whole."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..deciding.compiled_change import CompiledChange
from ..records.compiled import Compiled


@dataclass(frozen=True)
class Target:
    """The GPU the kernels are compiled for, and whether they run on it here (`launched`) or are
    compiled for it without one."""

    gpu: str
    launched: bool
    capability: tuple[int, int] | None = None  # known for a named GPU; a present one's is its own

    @property
    def device(self) -> str:
        return "cuda" if self.launched else "cpu"


@dataclass(frozen=True)
class Side:
    """What one side's implementation gave on a case: its kernels' records; or the one line of
    why it did not compile or run (`failed`); or why the side has no such implementation."""

    compiled: Compiled | None = None
    failed: str | None = None
    absent: str | None = None


@dataclass(frozen=True)
class Explained:
    """One implementation (with its variant) on one case: each side's, and what changed in its
    compiled kernels (None where a side has none to compare, or neither launched a Triton one)."""

    suite: str
    case: str
    dtype: str
    implementation: str
    base: Side
    head: Side
    change: CompiledChange | None = None
    # What was compiled of the call (loading/subject.py MODES): in a backward mode, what it times,
    # the backward's kernels (`implementation` names it too, as results do: "triton[backward]").
    mode: str = "forward"


@dataclass(frozen=True)
class Revision:
    revision: str | None  # as named; None: this checkout, uncommitted changes included
    commit: str | None  # its full SHA; None for this checkout
    checkout: Path | None = None  # this checkout's folder, where it is the side


@dataclass(frozen=True)
class Explanation:
    base: Revision
    head: Revision
    target: Target
    rows: list[Explained] = field(default_factory=list)
    pins: dict[str, str] = field(default_factory=dict)  # each side's [tool.perfbot] triton-commit
