"""What the compiler made of a benchmark's Triton kernels: one `CompiledKernel` per kernel the
implementation launched while it was checked (perfbot/compiling records them), kept beside its
timings in the results file so that a report can say what changed in the machine code when a
time changed.

Size limits (docs/files.md, "Limits"): at most MAX_KERNELS kernels a benchmark, a handful of
integers and digests each; the full SASS only where a run was asked to keep it (`--keep-sass`),
at most MAX_SASS characters a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Final

from pydantic import AfterValidator, ConfigDict, Field, with_config

from .schema import Count, Label, Name, Text, _bounded

MAX_KERNELS: Final = 16  # kernels recorded per benchmark; past them, only how many more there were
MAX_SASS: Final = 4_000_000  # characters of one kernel's SASS, when kept (a large kernel's is ~1 MB)

# The classes a kernel's SASS instructions are counted in (compiling/sass.py), in the order a
# report shows them; `instructions` holds these and "total".
INSTRUCTION_CLASSES: Final = (
    "mma",
    "global_load",
    "global_store",
    "async_copy",
    "shared_load",
    "shared_store",
    "local_load",
    "local_store",
    "tma",
    "barrier",
    "branch",
    "special_function",
)
# Like every record, these are pydantic-validated when a file is read into them, not when made.
_RECORD = ConfigDict(strict=True, extra="ignore", defer_build=True)
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


def _known_classes(counts: dict[str, int]) -> dict[str, int]:
    unknown = sorted(set(counts) - {*INSTRUCTION_CLASSES, "total"})
    if unknown:
        raise ValueError(f"not an instruction class: {unknown[0][:40]!r}")
    return counts


# SASS instruction class (INSTRUCTION_CLASSES, or "total") -> how many instructions of it the
# kernel's code holds (a static count).
Instructions = Annotated[dict[Name, Count], Field(max_length=32), AfterValidator(_known_classes)]
MAX_SPECIALIZATION: Final = 64  # entries of a kernel's specialization (constexprs, "aligned")
# Argument name -> value: a bounded JSON record (schema.Record) of at most MAX_SPECIALIZATION names.
Specialization = Annotated[dict[Name, Any], Field(max_length=MAX_SPECIALIZATION), AfterValidator(_bounded)]


@with_config(_RECORD)
@dataclass(frozen=True)
class Occupancy:
    """How many blocks of the kernel an SM holds at once on the GPU it was compiled for, and the
    resource that stops one more (registers, shared memory, warps or blocks)."""

    blocks_per_sm: Count
    limited_by: Name
    arch: Name  # "sm_90": whose limits these are


@with_config(_RECORD)
@dataclass(frozen=True)
class CompiledKernel:
    name: Name  # the kernel function's name
    source_sha256: Sha256 | None  # of the @triton.jit function's source text; None if not known
    # What the kernel was specialized on: its constexprs, and which arguments Triton took as
    # aligned (divisible by 16) or equal to 1.
    specialization: Specialization
    grid: Annotated[list[Count], Field(min_length=3, max_length=3)]
    launches: Count  # how many times the checked call launched it with this grid
    num_warps: Count
    num_stages: Count
    num_ctas: Count
    maxnreg: Count | None
    registers: Count  # per thread
    spill_store_bytes: Count  # the bytes of local-memory stores in its SASS (ptxas's "spill stores")
    spill_load_bytes: Count
    static_shared_bytes: Count
    dynamic_shared_bytes: Count
    occupancy: Occupancy | None  # None for a GPU whose limits perfbot does not know
    ttgir_sha256: Sha256
    ptx_sha256: Sha256
    cubin_sha256: Sha256
    instructions: Instructions
    arch: Label = ""  # "sm_90a": what its code is for
    sass: Annotated[str, Field(max_length=MAX_SASS)] | None = None  # the disassembly, kept on request
    # Of its SASS instructions alone: equal for equal machine code where the cubins differ only
    # in line info (the source file's path and lines, which a kernel moved in its file changes).
    sass_sha256: Sha256 | None = None

    def same_code(self, other: CompiledKernel) -> bool:
        """Whether the two run the same machine code: their SASS, else (a record made before
        perfbot kept its digest) their cubins, are the same."""
        if self.sass_sha256 is not None and other.sass_sha256 is not None:
            return self.sass_sha256 == other.sass_sha256
        return self.cubin_sha256 == other.cubin_sha256


@with_config(_RECORD)
@dataclass(frozen=True)
class Compiled:
    """The kernels one benchmark launched, in the order they were first launched."""

    kernels: Annotated[list[CompiledKernel], Field(max_length=MAX_KERNELS)] = field(default_factory=list)
    more: Count = 0  # kernels past MAX_KERNELS, not recorded
    # Why none could be recorded where some were launched (a Triton perfbot cannot read, a
    # disassembler that failed): said in reports instead of a diff.
    unrecorded: Text | None = None
