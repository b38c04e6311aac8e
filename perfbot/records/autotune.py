"""The autotuner's part in a benchmark: for each `triton.autotune`d kernel its call launched, the
config it ran for each autotune key, and how that config came to be chosen (compiling/tuning.py
sees it). Kept beside the timings, so that a report can tell a changed time from a changed pick.

Size limits (docs/files.md, "Limits"): at most MAX_PICKS picks a benchmark and MAX_CANDIDATES
timed candidates a pick.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Literal

from pydantic import ConfigDict, Field, TypeAdapter, with_config

from .schema import MAX_SAMPLES, Label, Ms, Name, NonNegative, Record, Text

MAX_PICKS: Final = 64  # (kernel, key) picks recorded per benchmark
MAX_CANDIDATES: Final = 256  # timed candidates recorded per pick
_RECORD = ConfigDict(strict=True, extra="ignore", defer_build=True)
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]

# How a pick came about:
#   tuned: the autotuner timed its candidates in this process and took the fastest;
#   disk cache: it read the timings from Triton's on-disk autotune cache (TRITON_CACHE_AUTOTUNING=1);
#   only config: the kernel has one config, which Triton runs without tuning;
#   pinned: perfbot set it (`pinned_to` says to what) before the kernel ran, and nothing was tuned for it;
#   forced: `perfbot check` ran this config on purpose, one of every candidate, nothing timed.
Origin = Literal["tuned", "disk cache", "only config", "pinned", "forced"]


@with_config(_RECORD)
@dataclass(frozen=True)
class Candidate:
    """One config the autotuner timed, with its median time (None: it failed to compile or run)."""

    config: Record
    ms: NonNegative | None


@with_config(_RECORD)
@dataclass(frozen=True)
class AutotunePick:
    """The config one autotuned kernel ran for one key, and how it was chosen."""

    kernel: Name  # the @triton.jit function's name
    source_sha256: Sha256 | None  # of its source text, as CompiledKernel's; None if not known
    configs_sha256: Sha256  # of its candidate configs, in order: two sides tune alike only if these agree
    key: Annotated[list[Text], Field(max_length=64)]  # the autotune key's values, as text, as Triton keys its cache
    config: Record  # the config it ran: its keyword arguments, num_warps, num_stages, num_ctas, maxnreg
    origin: Origin
    candidates: Annotated[list[Candidate], Field(max_length=MAX_CANDIDATES)] = field(default_factory=list)
    # Where pinned: what this process's own tuning had picked (None: it did not tune), and whose
    # pick the pin is ("the base's pick", "the first round's").
    tuned: Record | None = None
    pinned_to: Label | None = None

    def identity(self) -> tuple[str, str | None, str, tuple[str, ...]]:
        """What two sides' picks must share to be the same tuning question: the kernel's name,
        source and configs, and the key."""
        return (self.kernel, self.source_sha256, self.configs_sha256, tuple(self.key))


Picks = Annotated[list[AutotunePick], Field(max_length=MAX_PICKS)]


@with_config(_RECORD)
@dataclass(frozen=True)
class OwnPicks:
    """One side of an A/B row timed a second time, at its own picks: where the head's code or
    configs differ from the base's and its autotuner picked otherwise, the row's samples are both
    sides at a common config (the code's effect) and these are each side at its own (the
    tuning's), paired by round with the other side's."""

    samples_ms: Annotated[list[Ms], Field(min_length=1, max_length=MAX_SAMPLES)]
    autotune: Picks = field(default_factory=list)


def config_text(config: dict[str, Any]) -> str:
    """A config as reports show it: its keyword arguments, then the launch options that are set,
    `BLOCK_SIZE=512, num_warps=4`."""
    return ", ".join(f"{name}={value}" for name, value in config.items() if value is not None)


PICK = TypeAdapter(AutotunePick)  # one pick alone, validated as a file's are: what a worker sends
