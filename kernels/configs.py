"""Launch configurations of the fused GeGLU kernel: tuned per GPU and shape class, autotuned
where no tuned one exists.

Autotuning at benchmark time picked different configs in separate processes (docs/kernel.md),
which a regression bot would read as a change of speed. So configs are tuned once per GPU
(`python -m kernels.tune` writes tuned_configs.yaml) and looked up; only a GPU that file does not
know is autotuned, once per process, over the candidates below. Decode and gemv on the
TMA path take `decode_by_waves` instead (chosen per shape), and `decode_split_k` where those tiles
are too few to fill the GPU; their tuned entries only decide which path those classes prefer.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import yaml

TUNED_FILE = Path(__file__).with_name("tuned_configs.yaml")
SHAPE_CLASSES = ("gemv", "decode", "small", "large")
# A class a GPU's entry was not tuned for borrows the config of a neighbour that was.
_BORROWS_FROM = {"gemv": "decode"}
# Classes whose one block of rows holds every row, so weight is read from memory once.
ALL_ROWS_CLASSES = ("gemv", "decode")
SHORT_K = 1024
_SMEM_BYTES = 226 * 1024  # Hopper allows 227 KiB per block; keep a margin for barriers
SM_SMEM_BYTES = 228 * 1024 - 3 * 1024  # per SM; each resident block reserves 1 KiB

# fp32 inputs take the pointer path with full-precision FMA dots; smem per stage doubles.
FP32_CONFIG = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 3}


def shape_class(M: int, K: int, N: int, num_sms: int) -> str:
    """gemv: at most 4 rows (generating tokens one at a time). decode: at most 64 rows. Both are
    bound by reading weight once. small: short tiles (K <= SHORT_K) and fewer 128x128 output
    tiles than two waves of the GPU, where two smaller programs per SM hide each other's
    epilogue. large: the rest: with a longer K the 128x128 tile beat the small config on most
    unseen shapes of 65 to 650 rows (experiments/2026-11-30-h200-unseen-shapes/run1)."""
    if M <= 4:
        return "gemv"
    if M <= 64:
        return "decode"
    if K <= SHORT_K and -(-M // 128) * -(-N // 128) < 2 * num_sms:
        return "small"
    return "large"


def _grid(**axes: list) -> list[dict]:
    return [dict(zip(axes, values, strict=False)) for values in itertools.product(*axes.values())]


def _smem_bytes(config: dict, element_size: int = 2) -> int:
    stage = (config["BLOCK_M"] + 2 * config["BLOCK_N"]) * config["BLOCK_K"] * element_size
    epilogue = config["BLOCK_M"] * config["BLOCK_N"] * element_size // (2 if config.get("epilogue_subtile") else 1)
    return config["num_stages"] * stage + epilogue


def _fits(config: dict) -> bool:
    """The config's shared memory fits a block, and `programs_per_sm` of them fit an SM."""
    smem = _smem_bytes(config)
    return smem <= _SMEM_BYTES and smem * config.get("programs_per_sm", 1) <= SM_SMEM_BYTES


# Candidates for 16-bit inputs, per path and shape class. On Triton 3.6, warp specialization
# with 4 warps gave NaNs or did not compile: only 8-warp variants try it.
# Decode candidates leave BLOCK_M to the launch, which covers all rows (at most 64) with one block.
_CANDIDATES = {
    # The configs tuning picked on the H200 before FLATTEN existed (warp-specialized), and the
    # FLATTEN variants without warp specialization (tutorial 09 flattens only without it on Hopper).
    ("tma", "large"): _grid(
        BLOCK_M=[128],
        BLOCK_N=[128],
        BLOCK_K=[64],
        GROUP_M=[16],
        num_warps=[8],
        num_stages=[3],
        warp_specialize=[True, False],
        epilogue_subtile=[False],
        one_dot=[True],
        flatten=[False],
    )
    + _grid(
        BLOCK_M=[128],
        BLOCK_N=[128],
        BLOCK_K=[64],
        GROUP_M=[16],
        num_warps=[8],
        num_stages=[3, 4],
        warp_specialize=[False],
        epilogue_subtile=[True, False],
        one_dot=[True, False],
        flatten=[True],
    ),
    ("tma", "small"): _grid(
        BLOCK_M=[128],
        BLOCK_N=[64],
        BLOCK_K=[64],
        GROUP_M=[8],
        num_warps=[8],
        num_stages=[4],
        warp_specialize=[True],
        epilogue_subtile=[False],
        one_dot=[True],
        flatten=[False],
    )
    + _grid(
        BLOCK_M=[128],
        BLOCK_N=[64, 128],
        BLOCK_K=[64],
        GROUP_M=[8],
        num_warps=[8],
        num_stages=[3, 4],
        warp_specialize=[False],
        epilogue_subtile=[False],
        one_dot=[True],
        flatten=[True],
    ),
    # Decode reads weight once; FLATTEN keeps the loads streaming across the tiles of a program.
    ("tma", "decode"): _grid(
        BLOCK_M=[64],
        BLOCK_N=[32, 64, 128],
        BLOCK_K=[128, 256],
        GROUP_M=[1],
        num_warps=[4],
        num_stages=[3, 5],
        warp_specialize=[False],
        epilogue_subtile=[False],
        one_dot=[False],
    )
    + _grid(
        BLOCK_M=[64],
        BLOCK_N=[32, 64],
        BLOCK_K=[128, 256],
        GROUP_M=[1],
        num_warps=[4],
        num_stages=[3, 4, 6],
        warp_specialize=[False],
        epilogue_subtile=[False],
        one_dot=[False, True],
        flatten=[True],
    ),
    ("pointer", "large"): _grid(
        BLOCK_M=[128], BLOCK_N=[64, 128], BLOCK_K=[32, 64], GROUP_M=[8], num_warps=[8], num_stages=[3, 4]
    ),
    ("pointer", "small"): _grid(
        BLOCK_M=[64, 128], BLOCK_N=[64, 128], BLOCK_K=[32, 64], GROUP_M=[8], num_warps=[4], num_stages=[3, 4]
    ),
    ("pointer", "decode"): _grid(
        BLOCK_M=[64], BLOCK_N=[32, 64, 128], BLOCK_K=[128, 256], GROUP_M=[1], num_warps=[4, 8], num_stages=[3, 4, 6]
    ),
}
# Two (or three) programs per SM, each small enough (shared memory; registers, by maxnreg for 8
# warps) for all to be resident: one's epilogue overlaps another's matmul, which one program per
# SM leaves idle between tiles.
_TWO_PER_SM = {"warp_specialize": False, "one_dot": True, "flatten": True, "programs_per_sm": 2}
_CANDIDATES[("tma", "large")] += [
    {
        "BLOCK_M": 128,
        "BLOCK_N": 64,
        "BLOCK_K": 64,
        "GROUP_M": 16,
        "num_warps": 8,
        "num_stages": 3,
        "epilogue_subtile": subtile,
        "maxnreg": 128,
        **_TWO_PER_SM,
    }
    for subtile in (False, True)
] + [
    {
        "BLOCK_M": 128,
        "BLOCK_N": 64,
        "BLOCK_K": 64,
        "GROUP_M": 16,
        "num_warps": 4,
        "num_stages": 3,
        "epilogue_subtile": True,
        **_TWO_PER_SM,
    },
    {
        "BLOCK_M": 128,
        "BLOCK_N": 64,
        "BLOCK_K": 32,
        "GROUP_M": 16,
        "num_warps": 8,
        "num_stages": 6,
        "epilogue_subtile": True,
        "maxnreg": 128,
        **_TWO_PER_SM,
    },
    {
        "BLOCK_M": 128,
        "BLOCK_N": 64,
        "BLOCK_K": 32,
        "GROUP_M": 16,
        "num_warps": 4,
        "num_stages": 6,
        "epilogue_subtile": True,
        **_TWO_PER_SM,
    },
    {
        "BLOCK_M": 128,
        "BLOCK_N": 64,
        "BLOCK_K": 64,
        "GROUP_M": 8,
        "num_warps": 4,
        "num_stages": 3,
        "epilogue_subtile": True,
        **_TWO_PER_SM,
    },
    # Three: one warp group each, two stages each (registers: 3 x 128 threads x at most 168).
    {
        "BLOCK_M": 128,
        "BLOCK_N": 64,
        "BLOCK_K": 64,
        "GROUP_M": 16,
        "num_warps": 4,
        "num_stages": 2,
        "epilogue_subtile": True,
        **_TWO_PER_SM,
        "programs_per_sm": 3,
    },
]
_CANDIDATES[("tma", "small")] += [
    {
        "BLOCK_M": 128,
        "BLOCK_N": 64,
        "BLOCK_K": 64,
        "GROUP_M": 8,
        "num_warps": 8,
        "num_stages": 3,
        "epilogue_subtile": True,
        "maxnreg": 128,
        **_TWO_PER_SM,
    },
    {
        "BLOCK_M": 64,
        "BLOCK_N": 64,
        "BLOCK_K": 64,
        "GROUP_M": 8,
        "num_warps": 4,
        "num_stages": 4,
        "epilogue_subtile": False,
        **_TWO_PER_SM,
    },
    {
        "BLOCK_M": 128,
        "BLOCK_N": 64,
        "BLOCK_K": 64,
        "GROUP_M": 8,
        "num_warps": 4,
        "num_stages": 2,
        "epilogue_subtile": True,
        **_TWO_PER_SM,
        "programs_per_sm": 3,
    },
    # More, smaller tiles: fewer SMs idle in the last wave.
    {
        "BLOCK_M": 64,
        "BLOCK_N": 128,
        "BLOCK_K": 64,
        "GROUP_M": 8,
        "num_warps": 4,
        "num_stages": 4,
        "warp_specialize": False,
        "epilogue_subtile": False,
        "one_dot": True,
        "flatten": True,
    },
]
# One program per SM, the large config's neighbours: other group heights (which x and weight
# blocks share L2) and K steps of 32 with eight stages (experiments/2026-11-30-h200-tuning).
_ONE_WIDE = {
    "BLOCK_M": 128,
    "BLOCK_N": 128,
    "num_warps": 8,
    "warp_specialize": False,
    "epilogue_subtile": False,
    "one_dot": True,
    "flatten": True,
}
_CANDIDATES[("tma", "large")] += [
    {**_ONE_WIDE, "BLOCK_K": 64, "GROUP_M": group, "num_stages": 4} for group in (8, 32)
] + [
    {**_ONE_WIDE, "BLOCK_K": 32, "GROUP_M": 16, "num_stages": 8},
]
# Small shapes are latency-bound (d512: one tile per program): fewer, longer K steps.
_CANDIDATES[("tma", "small")] += [
    {
        "BLOCK_M": 128,
        "BLOCK_N": 64,
        "BLOCK_K": 128,
        "GROUP_M": 8,
        "num_warps": 8,
        "num_stages": 3,
        "warp_specialize": False,
        "epilogue_subtile": False,
        "one_dot": True,
        "flatten": True,
    },
]
_CANDIDATES[("tma", "decode")] += [
    {
        "BLOCK_M": 64,
        "BLOCK_N": 32,
        "BLOCK_K": 128,
        "GROUP_M": 1,
        "num_warps": 4,
        "num_stages": 3,
        "epilogue_subtile": False,
        **_TWO_PER_SM,
    },
    {
        "BLOCK_M": 64,
        "BLOCK_N": 64,
        "BLOCK_K": 64,
        "GROUP_M": 1,
        "num_warps": 4,
        "num_stages": 4,
        "epilogue_subtile": False,
        **_TWO_PER_SM,
    },
]
# gemv launches with BLOCK_M = 16 (M <= 4), which leaves room for deeper pipelines: more bytes in
# flight per SM keep memory busier while the last tiles drain.
_CANDIDATES[("tma", "gemv")] = [{**c, "BLOCK_M": 16} for c in _CANDIDATES[("tma", "decode")]] + [
    {
        "BLOCK_M": 16,
        "BLOCK_N": n,
        "BLOCK_K": k,
        "GROUP_M": 1,
        "num_warps": 4,
        "num_stages": stages,
        "warp_specialize": False,
        "epilogue_subtile": False,
        "one_dot": True,
        "flatten": True,
    }
    for n, k, stages in ((128, 128, 3), (32, 256, 5), (32, 128, 8))
]
_CANDIDATES[("pointer", "gemv")] = _CANDIDATES[("pointer", "decode")]


# Decode on TMA GPUs: one tile per program, as many resident at once as shared memory allows for
# the real BLOCK_M (16 or 32 rows below 33), chosen per shape by `decode_by_waves`: on the
# generated suite's decode shapes each beat the tuned persistent config on some shape, and none
# wins everywhere (experiments/2026-11-30-h200-unseen-shapes/run2).
_DECODE = {
    "GROUP_M": 1,
    "num_warps": 4,
    "warp_specialize": False,
    "epilogue_subtile": False,
    "one_dot": True,
    "flatten": True,
    "BLOCK_K": 128,
}
DECODE_CANDIDATES = [
    {**_DECODE, "BLOCK_N": 128, "num_stages": 3, "programs_per_sm": 1},
    {**_DECODE, "BLOCK_N": 64, "num_stages": 3, "programs_per_sm": 2},
    {**_DECODE, "BLOCK_N": 64, "num_stages": 4, "programs_per_sm": 1},
    {**_DECODE, "BLOCK_N": 32, "num_stages": 4, "programs_per_sm": 2},
    {**_DECODE, "BLOCK_N": 32, "num_stages": 3, "programs_per_sm": 3},
]


def decode_by_waves(block_m: int, N: int, num_sms: int) -> dict:
    """The decode candidate whose tiles fill the GPU best: fewest waves of resident programs, then
    the largest share of them busy in the last wave, then the widest tile. Candidates whose
    programs do not fit an SM together at this BLOCK_M are left out."""
    fitting = [
        c
        for c in DECODE_CANDIDATES
        if _smem_bytes({**c, "BLOCK_M": block_m}) <= _SMEM_BYTES
        and _smem_bytes({**c, "BLOCK_M": block_m}) * c["programs_per_sm"] <= SM_SMEM_BYTES
    ]

    def score(config: dict[str, Any]) -> tuple[int, float, int]:
        tiles, slots = -(-N // config["BLOCK_N"]), config["programs_per_sm"] * num_sms
        waves = -(-tiles // slots)
        return waves, -tiles / (waves * slots), -config["BLOCK_N"]

    best = min(fitting, key=score)
    return dict(best)


# A part of a split K runs at least this many times its pipeline's depth in K steps: a shorter
# part spends most of its time filling and draining the pipeline. The factor is chosen, not
# measured; one shape split into two parts of four steps ran slower than whole, in two unpaired
# runs (experiments/2026-12-02-h200-decode-splitk).
MIN_PIPELINES_PER_PART = 2


def decode_split_k(tiles: int, k_tiles: int, num_stages: int, num_sms: int) -> int:
    """How many parts to split K into for a decode plan of `tiles` column tiles of `k_tiles` K steps
    each, pipelined `num_stages` deep; 1 is no split. With fewer tiles than half the SMs, most SMs
    would sit idle while a few read the weight: K is split into as many parts as give each SM
    about one program, each part at least MIN_PIPELINES_PER_PART * num_stages steps long, and only
    where that makes at least two. Each part's fp32 partial sums go through memory and the tile's
    last part adds them (geglu's `_geglu_split_k_kernel`), a cost left unpaid where the tiles alone
    keep half the SMs busy."""
    if tiles >= num_sms // 2:
        return 1
    split = min(num_sms // tiles, k_tiles // (MIN_PIPELINES_PER_PART * num_stages))
    return split if split >= 2 else 1


# Prefill of a few hundred rows: 64-row tiles where the rows and waves they fill outweigh what a
# 64-row tile loses to a 128-row one on shapes both fill (experiments/2026-11-30-h200-unseen-
# shapes/run5).
PREFILL_64_ROWS = {
    "BLOCK_M": 64,
    "BLOCK_N": 128,
    "BLOCK_K": 64,
    "GROUP_M": 8,
    "num_warps": 4,
    "num_stages": 5,
    "warp_specialize": False,
    "epilogue_subtile": False,
    "one_dot": True,
    "flatten": True,
}
SMALLER_TILE_COST = 1.06
PREFILL_64_MAX_ROWS = 1024


def filled(M: int, N: int, block_m: int, block_n: int, num_sms: int) -> float:
    """The share of a persistent launch's work that is real: rows past M in the last row block,
    and SMs idle in the last wave of tiles, are the rest."""
    row_blocks = -(-M // block_m)
    tiles = row_blocks * -(-N // block_n)
    waves = -(-tiles // num_sms)
    return M / (row_blocks * block_m) * tiles / (waves * num_sms)


# Up to this many row blocks, a prefill plan puts them all in one group of its tile order: each
# column block of weight is then read from memory once, where GROUP_M = 8 reads it once per group
# of 8 row blocks (experiments/2026-12-02-h200-miss-causes, runs/c3 to c5: on every shape of 9 to
# 16 row blocks measured, one group took 0.2-15% less time, none more; 8 or fewer is one already).
ONE_GROUP_MAX_ROW_BLOCKS = 16


def one_group(M: int, block_m: int, group_m: int) -> int:
    """GROUP_M for a persistent plan of `block_m`-row tiles over M rows: every row block in one
    group where there are more than `group_m` and at most ONE_GROUP_MAX_ROW_BLOCKS."""
    row_blocks = -(-M // block_m)
    return row_blocks if group_m < row_blocks <= ONE_GROUP_MAX_ROW_BLOCKS else group_m


def prefill_by_waves(M: int, N: int, num_sms: int) -> dict | None:
    """64-row tiles when they fill the GPU enough better than 128-row ones; else None. Only up to
    PREFILL_64_MAX_ROWS: the range where they were measured to win."""
    if M > PREFILL_64_MAX_ROWS:
        return None
    if filled(M, N, 64, 128, num_sms) > SMALLER_TILE_COST * filled(M, N, 128, 128, num_sms):
        return dict(PREFILL_64_ROWS)
    return None


# The epilogue path's elementwise kernel: 16 x 128 elements a program (the sizes a launch config
# holds; the kernel takes no BLOCK_K, GROUP_M or pipeline).
EPILOGUE = {"BLOCK_M": 16, "BLOCK_N": 128, "BLOCK_K": 16, "GROUP_M": 1, "num_warps": 4, "num_stages": 1}


# Where the fused launch is predicted to lose to the unfused path (cuBLAS's matmul, then one
# elementwise kernel: geglu's epilogue path, which moves the bytes torch.compile's code moves).
# Fitted on the H200's results of 2026-12-03 (experiments/2026-12-03-h200-final-judgement);
# docs/kernel.md's plan table says which shapes each sends there. From geglu.ALIGN_ROWS_FROM rows
# on, x's rows are copied 32-byte aligned; only the weight's then stay slow, and the fused launch
# still won on those shapes.
MISALIGNED_ROWS = (17, 1023)  # rows, both ends included; 1023 is geglu.ALIGN_ROWS_FROM - 1
# Decode whose column tiles fill under half the SMs (decode_split_k's bound on tiles), above 16 rows.
FEW_TILES_FROM_ROWS = 17
# A prefill of fewer than PREFILL_64_MAX_ROWS rows whose tiles fill under FILLED_AT_LEAST of the
# plan's waves, where K is long enough that cuBLAS's matmul dwarfs the elementwise pass after it.
LONG_K = 4096
FILLED_AT_LEAST = 0.85


def unfused_reason(
    M: int, K: int, N: int, plan_class: str, block_m: int, block_n: int, num_sms: int, weight_aligned: bool
) -> str | None:
    """Why a fused TMA launch of this plan (`plan_class`, `block_m` x `block_n` tiles) would lose
    to the unfused path, or None where it would not."""
    first, last = MISALIGNED_ROWS
    if not weight_aligned and first <= M <= last:
        return "weight rows misaligned"
    if plan_class == "decode" and M >= FEW_TILES_FROM_ROWS and -(-N // block_n) < num_sms // 2:
        return "few column tiles"
    if (
        plan_class == "large"
        and M < PREFILL_64_MAX_ROWS
        and K >= LONG_K
        and filled(M, N, block_m, block_n, num_sms) < FILLED_AT_LEAST
    ):
        return "long K, tiles fill the waves poorly"
    return None


def candidates(path: str, shape_class: str) -> list[dict]:
    """Configs worth trying for 16-bit inputs, those that fit in shared memory."""
    return [c for c in _CANDIDATES[(path, shape_class)] if _fits(c)]


@functools.cache
def tuned_table() -> dict:
    """tuned_configs.yaml: GPU name -> path -> shape class -> config."""
    if not TUNED_FILE.is_file():
        return {}
    table = yaml.safe_load(TUNED_FILE.read_text()) or {}
    if not isinstance(table, dict):
        raise ValueError(f"{TUNED_FILE}: expected a mapping of GPU name -> path -> shape class -> config")
    return table


def preferred_path(gpu: str, shape_class: str) -> str | None:
    """The path that tuning found fastest for this GPU and shape class, if it was tuned."""
    prefer = tuned_table().get(gpu, {}).get("prefer", {})
    return prefer.get(shape_class, prefer.get(_BORROWS_FROM.get(shape_class)))


_autotuned: dict[tuple, dict] = {}


def lookup(gpu: str, path: str, shape_class: str, dtype: torch.dtype) -> dict:
    """The config for this GPU, path, shape class and dtype, and where it came from."""
    if dtype == torch.float32:
        return {**FP32_CONFIG, "source": "fixed"}
    by_class = tuned_table().get(gpu, {}).get(path, {})
    tuned = by_class.get(shape_class)
    if tuned is not None:
        return {**tuned, "source": "tuned"}
    borrowed = by_class.get(_BORROWS_FROM.get(shape_class))
    if borrowed is not None:
        return {**borrowed, "source": f"tuned for {_BORROWS_FROM[shape_class]}"}
    if (gpu, path, shape_class, dtype) in _autotuned:
        return {**_autotuned[(gpu, path, shape_class, dtype)], "source": "autotuned"}
    # Not tuned and not yet autotuned (or the interpreter, which cannot time): the first
    # candidate; geglu autotunes before its first launch on a real GPU.
    return {**candidates(path, shape_class)[0], "source": "untuned"}


def autotune(key: tuple, run_with: Callable[[dict], None]) -> dict:
    """Time every candidate for `key` = (gpu, path, shape_class, dtype) with `run_with(config)`
    and remember the fastest for the rest of the process."""
    if key not in _autotuned:
        import triton.testing

        _gpu, path, cls, _dtype = key
        timed = []
        for config in candidates(path, cls):
            try:
                timed.append((triton.testing.do_bench(lambda c=config: run_with(c), return_mode="median"), config))
            except Exception:  # noqa: BLE001 -- a candidate that does not compile or launch here is not a choice
                continue
        if not timed:
            raise RuntimeError(f"geglu: no candidate config runs for {key}")
        _autotuned[key] = min(timed, key=lambda pair: pair[0])[1]
    return _autotuned[key]
