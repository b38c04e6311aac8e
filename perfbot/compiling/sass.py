"""A cubin read with the disassembler Triton's NVIDIA backend ships (cuobjdump, found through
`triton.knobs.nvidia`): its resource usage and its SASS, and the SASS's instructions counted by
class. No GPU is needed: the tool reads the file.

The counts are static (instructions in the code, not executed ones): a loop's body counts once.
A kernel's local-memory stores and loads are ptxas's "spill stores" and "spill loads" where it has
no local arrays, as Triton's kernels have none (tests/test_compiling.py holds them against
`ptxas -v`).
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..errors import EnvironmentFailure
from ..records.compiled import INSTRUCTION_CLASSES

# Opcode (the part before the first dot) -> its class. What a reader of a regression asks first:
# tensor-core work, memory traffic by space, TMA, synchronization, control flow, special functions.
CLASSES: dict[str, tuple[str, ...]] = {
    "mma": ("HGMMA", "HMMA", "IMMA", "QGMMA", "IGMMA", "BGMMA", "DMMA", "UTCHMMA", "UTCQMMA", "UTCIMMA"),
    "global_load": ("LDG",),
    "global_store": ("STG", "RED", "REDG", "ATOM", "ATOMG"),
    "async_copy": ("LDGSTS", "LDGDEPBAR"),
    "shared_load": ("LDS", "LDSM"),
    "shared_store": ("STS", "STSM", "ATOMS"),
    "local_load": ("LDL",),
    "local_store": ("STL",),
    "tma": ("UTMALDG", "UTMASTG", "UTMAPF", "UTMACCTL", "UTMAREDG", "UBLKCP", "UBLKRED", "UBLKPF"),
    "barrier": (
        "BAR",
        "SYNCS",
        "MEMBAR",
        "WARPGROUP",
        "ARRIVES",
        "DEPBAR",
        "ERRBAR",
        "CGAERRBAR",
        "UCGABAR_ARV",
        "UCGABAR_WAIT",
        "CCTL",
    ),
    "branch": ("BRA", "BRX", "JMP", "JMX", "CALL", "RET", "BSSY", "BSYNC", "WARPSYNC", "EXIT"),
    "special_function": ("MUFU",),
}
assert tuple(CLASSES) == INSTRUCTION_CLASSES, "the record's classes are these, in this order"
_CLASS_OF = {opcode: name for name, opcodes in CLASSES.items() for opcode in opcodes}

# "        /*0040*/                   @!P0 LDG.E.128 R4, desc[UR4][R2.64] ;"
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[0-9T]\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)")
_ENCODING = re.compile(r"\s*/\* 0x[0-9a-f]{16} \*/\s*$")
# " Function _kernel:\n  REG:40 STACK:0 SHARED:1024 LOCAL:0 ..."
_USAGE = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")
_ARCH = re.compile(r"code for (sm_\w{1,16})")
_WIDTH = re.compile(r"\.(?:U|S)?(8|16|32|64|128)\b")
_TOOL_SECONDS = 120


@dataclass(frozen=True)
class Disassembly:
    registers: int
    static_shared_bytes: int
    instructions: dict[str, int]  # by class, and "total"
    local_store_bytes: int
    local_load_bytes: int
    sass: str  # without the instructions' encodings
    arch: str  # what the code is for: "sm_90a"
    code_sha256: str  # of the instructions and their encodings alone: no line info is in them


def disassemble(cubin: bytes, tool: str | None = None) -> Disassembly:
    """Read one cubin of one kernel with cuobjdump (Triton's, unless `tool` names another)."""
    path = tool or _cuobjdump()
    with tempfile.TemporaryDirectory(prefix="perfbot-sass-") as where:
        binary = Path(where) / "kernel.cubin"
        binary.write_bytes(cubin)
        try:
            done = subprocess.run(
                [path, "-res-usage", "-sass", str(binary)],
                capture_output=True,
                text=True,
                timeout=_TOOL_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise EnvironmentFailure(f"cuobjdump ({path}) could not read a kernel: {error}") from None
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["(no message)"])[0]
        raise EnvironmentFailure(f"cuobjdump ({path}) could not read a kernel: exit {done.returncode}: {said}")
    return read(done.stdout)


def read(listing: str) -> Disassembly:
    """`cuobjdump -res-usage -sass`'s output, read."""
    usage = _USAGE.search(listing)
    if usage is None:
        raise EnvironmentFailure("cuobjdump printed no resource usage for the kernel (REG:, SHARED:)")
    counts: Counter[str] = Counter()
    stores = loads = 0
    lines, code = [], hashlib.sha256()
    for line in listing.splitlines():
        if _ENCODING.fullmatch(line):
            code.update(line.strip().encode() + b"\n")
            continue  # the second half of an instruction's encoding, alone on its line
        if not line.strip():
            continue
        lines.append(_ENCODING.sub("", line))
        found = _INSTRUCTION.match(line)
        if found is None:
            continue
        opcode, modifiers = found.groups()
        code.update(line.strip().encode() + b"\n")  # with its encoding: the scheduling bits too
        counts["total"] += 1
        kind = _CLASS_OF.get(opcode)
        if kind is not None:
            counts[kind] += 1
        if opcode in ("STL", "LDL"):
            width = _WIDTH.search(modifiers)
            size = int(width.group(1)) // 8 if width else 4  # a plain STL moves 32 bits
            if opcode == "STL":
                stores += size
            else:
                loads += size
    return Disassembly(
        registers=int(usage.group(1)),
        static_shared_bytes=int(usage.group(3)),
        instructions={name: counts.get(name, 0) for name in (*CLASSES, "total")},
        local_store_bytes=stores,
        local_load_bytes=loads,
        sass="\n".join(lines) + "\n",
        arch=arch.group(1) if (arch := _ARCH.search(listing)) else "",
        code_sha256=code.hexdigest(),
    )


def _cuobjdump() -> str:
    try:
        from triton import knobs

        return str(knobs.nvidia.cuobjdump.path)
    except (ImportError, AttributeError, RuntimeError) as error:
        raise EnvironmentFailure(
            f"no cuobjdump to read compiled kernels with (Triton's NVIDIA backend): {error}"
        ) from None
