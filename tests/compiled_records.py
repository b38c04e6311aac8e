"""Compiled-kernel records as perfbot writes them, built here for the diff and report tests. The
values are those of this repository's TMA kernel compiled for an H200 by Triton 3.6 on the CPU
(compiling/offline.py; 2026-12-02): decode (M=16 K=3072 N=24576) at BLOCK_K 128 and 64, and a
large case (M=8192 K=2048 N=16384) as tuned and with maxnreg=128, where it spills."""

from __future__ import annotations

from dataclasses import replace

from perfbot.records.compiled import INSTRUCTION_CLASSES, Compiled, CompiledKernel, Occupancy

NAME = "_geglu_tma_kernel"
SOURCE = "606d51f2d609ed01218372f28b4432bd7981cd3c78a42b5f2cdbf30578bb577f"
_SPECIALIZATION = {
    "APPROXIMATE_TANH": False,
    "EPILOGUE_SUBTILE": False,
    "FLATTEN": False,
    "NUM_PROGRAMS": 132,
    "ONE_DOT": False,
    "WARP_SPECIALIZE": False,
    "aligned": ["K", "M", "N"],
}
_INSTRUCTIONS = dict.fromkeys((*INSTRUCTION_CLASSES, "total"), 0)


def _kernel(blocks: tuple[int, int, int, int], registers: int, shared: int, occupancy: tuple[int, str], **kw):
    block_m, block_n, block_k, group_m = blocks
    digests = kw.pop("digests")
    return CompiledKernel(
        name=NAME,
        source_sha256=SOURCE,
        specialization={
            **_SPECIALIZATION,
            "BLOCK_K": block_k,
            "BLOCK_M": block_m,
            "BLOCK_N": block_n,
            "GROUP_M": group_m,
        },
        grid=[132, 1, 1],
        launches=1,
        num_warps=kw.pop("num_warps", 4),
        num_stages=kw.pop("num_stages", 3),
        num_ctas=1,
        maxnreg=kw.pop("maxnreg", None),
        registers=registers,
        spill_store_bytes=kw.pop("spill_store_bytes", 0),
        spill_load_bytes=kw.pop("spill_load_bytes", 0),
        static_shared_bytes=1024,
        dynamic_shared_bytes=shared,
        occupancy=Occupancy(occupancy[0], occupancy[1], "sm_90"),
        ttgir_sha256=digests[0],
        ptx_sha256=digests[1],
        cubin_sha256=digests[2],
        instructions={**_INSTRUCTIONS, **kw.pop("instructions")},
        arch="sm_90a",
        **kw,
    )


DECODE_BLOCK_K_128 = _kernel(
    (16, 32, 128, 1),
    62,
    42032,
    (5, "shared memory"),
    digests=(
        "1e45ba64ce5458a8599eb757e7ac432575d670d5b39ec242b3148455ee811cd8",
        "6ff4c963dbab5e1a752aa1a5fa9612488047d5631630755f462f4a23a59ee897",
        "fcda873ee99f6aa7d5f5f48017058e76106a5c52f422e34dbe41d77dcac390fa",
    ),
    instructions={"mma": 16, "shared_load": 16, "shared_store": 1, "tma": 10, "barrier": 51, "branch": 15}
    | {"special_function": 8, "total": 536},
)
DECODE_BLOCK_K_64 = _kernel(
    (16, 32, 64, 1),
    45,
    21552,
    (9, "shared memory"),
    digests=(
        "582d707e56e43c893c8a1f23b4ba07a2f53a81bd6487e3ca01f173b6dcf7e1bd",
        "ae30b9450ee83a1a0df216117211f0668d4725b2daeaa90dac51b3cf5c35e76b",
        "3dfcb19267ec6de7bca5634a18a05122abf484b9be860297c765877425957d18",
    ),
    instructions={"mma": 8, "shared_load": 8, "shared_store": 1, "tma": 10, "barrier": 51, "branch": 15}
    | {"special_function": 8, "total": 504},
)
LARGE_TUNED = _kernel(
    (128, 128, 64, 8),
    160,
    229440,
    (1, "registers"),
    num_warps=8,
    num_stages=4,
    digests=(
        "d6d473777133723caf414baa4c053078de9c6af9b62e243248520cbbfe8cb95b",
        "8dcbb87c80916ce349932e6cb84dd010781ea0e0e8bd353510aafea9ab94313f",
        "761dea15944dfceed77fa493d38987a28a9832b86180770d37f9fb4e28f21847",
    ),
    instructions={"mma": 8, "shared_store": 8, "tma": 13, "barrier": 64, "branch": 12, "special_function": 68}
    | {"total": 1584},
)
LARGE_MAXNREG_128 = _kernel(
    (128, 128, 64, 8),
    128,
    229440,
    (1, "shared memory"),
    num_warps=8,
    num_stages=4,
    maxnreg=128,
    spill_store_bytes=1080,
    spill_load_bytes=824,
    digests=(
        "59238d2b54fc314207076f17fcc54f31e47a15daba54911a7a3e30018701fc60",
        "c1c4c405a1b48640f17754642e1fb1972b6aa7aab7c82585334010fa45706b74",
        "7a975c054f0a2ed4c543e3ecc4cd1a4327cbccc6f496f01bbbc0e272275dedee",
    ),
    instructions={"mma": 8, "shared_store": 8, "local_load": 142, "local_store": 206, "tma": 13, "barrier": 76}
    | {"branch": 12, "special_function": 68, "total": 1888},
)


def compiled(*kernels: CompiledKernel, more: int = 0) -> Compiled:
    return Compiled(kernels=list(kernels), more=more)


def other_cubin(kernel: CompiledKernel, digit: str = "0") -> CompiledKernel:
    """The kernel with another cubin digest only (the same code built otherwise, say)."""
    return replace(kernel, cubin_sha256=digit * 64)
