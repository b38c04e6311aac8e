"""One row of `perfbot check`: what the subject's process answers and the parent shows (no
torch here: the parent does not import it)."""

from __future__ import annotations

from dataclasses import dataclass

from ..loading.subject import Case


@dataclass(frozen=True)
class Checked:
    """One implementation of one case: right, or what was wrong."""

    case: Case
    name: str  # the implementation with its variant, "triton[1]"
    relative_error: float | None
    bound: float
    problem: str | None = None  # None: right
    config: str | None = None  # the configs its autotuned kernels ran (records.autotune.config_text), per kernel
    note: str | None = None  # what the check left out of it: configs drawn as a sample

    @property
    def right(self) -> bool:
        return self.problem is None
