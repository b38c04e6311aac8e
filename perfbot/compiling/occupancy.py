"""How many blocks of a kernel one SM holds at once, and what stops one more: the CUDA occupancy
calculation (as cuda_occupancy.h makes it), from the kernel's registers, shared memory and warps
and the SM's limits.

The limits are those NVIDIA's CUDA C++ Programming Guide tabulates per compute capability
("Technical Specifications per Compute Capability"); on a GPU they are what the driver reports
(tests/test_gpu_compiling.py holds the result against cuOccupancyMaxActiveBlocksPerMultiprocessor).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..records.compiled import Occupancy


@dataclass(frozen=True)
class SmLimits:
    registers: int = 65536  # 32-bit registers per SM
    register_unit: int = 256  # registers are given to a warp in multiples of this
    sub_partitions: int = 4  # each quarter of the SM gives its registers out to whole warps
    warps: int = 64  # resident warps per SM
    blocks: int = 32  # resident blocks per SM
    shared_bytes: int = 233472  # shared memory per SM, all of it given to shared memory
    shared_unit: int = 128  # shared memory is given to a block in multiples of this
    reserved_shared_bytes: int = 1024  # what the system keeps of it per block


# Per compute capability (major, minor), as the programming guide gives them.
LIMITS: dict[tuple[int, int], SmLimits] = {
    (8, 0): SmLimits(shared_bytes=167936),
    (8, 6): SmLimits(warps=48, blocks=16, shared_bytes=102400),
    (8, 9): SmLimits(warps=48, blocks=24, shared_bytes=102400),
    (9, 0): SmLimits(),
    (10, 0): SmLimits(),
    (12, 0): SmLimits(warps=48, blocks=24, shared_bytes=102400),
}


def occupancy(capability: tuple[int, int], registers: int, shared_bytes: int, num_warps: int) -> Occupancy | None:
    """Blocks per SM of a kernel of `num_warps` warps using `registers` per thread and
    `shared_bytes` of shared memory (static and dynamic) per block; None for an unknown GPU."""
    limits = LIMITS.get(capability)
    if limits is None or num_warps < 1:
        return None
    per_warp = -(-max(registers, 1) * 32 // limits.register_unit) * limits.register_unit
    shared = -(-(shared_bytes + limits.reserved_shared_bytes) // limits.shared_unit) * limits.shared_unit
    # Each resource's limit on its own; ties go to the first named, the one a change moves most often.
    bounds = {
        "registers": (limits.registers // limits.sub_partitions // per_warp) * limits.sub_partitions // num_warps,
        "shared memory": limits.shared_bytes // shared,
        "warps": limits.warps // num_warps,
        "blocks": limits.blocks,
    }
    limited_by = min(bounds, key=lambda name: bounds[name])
    return Occupancy(blocks_per_sm=bounds[limited_by], limited_by=limited_by, arch=f"sm_{capability[0]}{capability[1]}")
