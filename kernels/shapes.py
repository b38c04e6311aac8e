"""The generated suites: shapes nobody tuned for, drawn by a seeded generator so that each set is
broad, fixed and reproducible. Each case takes the feed-forward widths of a real model (hidden
size K, intermediate size N; the Hugging Face configs) or, one case in five, odd widths drawn
from the same ranges, and a token count M: half the cases decode (1 to 64 rows), half prefill
(65 to 16384 rows), each drawn log-uniformly, so that odd counts come as they come.

Two sets: `generated` (SEED), with the four shapes the kernel was first seen to slip on in front,
and `generated-2` (SECOND_SEED), all drawn, held out from tuning to judge the kernel on shapes it
was not tuned on. A shape the other set holds, or one already drawn, is skipped, and drawing goes
on until each kind has its half; names stay unique within a set. `backward-generated` times the
first set's shapes in the backward modes.

A third set, `generated-3` (THIRD_SEED), also held out, is drawn by kind rather than at random
over models: the kinds of shape the first two sets found the kernel slipping on. A quarter each:
widths that are multiples of 8 but not of 16, or of 16 but not of 64 (`ragged`); M just past a
tile (129, 257, 513, 1025); decode of 33 to 64 rows over few tiles (N of 1024 to 6144); and the
feed-forward widths of the open models of 2025 (RECENT_MODELS), half decode, half prefill.

    python -m kernels.shapes                # prints the four suites; kernels/suites.yaml holds them
    python -m kernels.shapes generated-2    # prints the one suite named

A test keeps suites.yaml's generated suites equal to what this prints.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Sequence

SEED = 2026_11_30
SECOND_SEED = 2026_12_02
THIRD_SEED = 2026_12_07
COUNT = 24
MODELS = {  # name: (hidden K, intermediate N)
    "llama-2-7b": (4096, 11008),
    "llama-2-13b": (5120, 13824),
    "llama-3-8b": (4096, 14336),
    "llama-3-70b": (8192, 28672),
    "llama-3.2-1b": (2048, 8192),
    "llama-3.2-3b": (3072, 8192),
    "mistral-7b": (4096, 14336),
    "gemma-2-2b": (2304, 9216),
    "gemma-2-9b": (3584, 14336),
    "gemma-3-1b": (1152, 6912),
    "qwen2-1.5b": (1536, 8960),
    "qwen2.5-7b": (3584, 18944),
    "qwen2.5-14b": (5120, 13824),
    "phi-3-medium": (5120, 17920),
    "starcoder2-3b": (3072, 12288),
    "bert-large": (1024, 4096),
}
K_RANGE, N_RANGE = (1024, 8192), (2048, 28672)
RECENT_MODELS = {  # name: (hidden K, intermediate N), of the dense feed-forward layers
    "qwen3-4b": (2560, 9728),
    "qwen3-8b": (4096, 12288),
    "qwen3-14b": (5120, 17408),
    "qwen3-32b": (5120, 25600),
    "qwen3-30b-a3b-expert": (2048, 768),
    "gemma-3-4b": (2560, 10240),
    "gemma-3-12b": (3840, 15360),
    "gemma-3-27b": (5376, 21504),
    "mistral-small-3-24b": (5120, 32768),
    "phi-4": (5120, 17920),
    "glm-4-9b": (4096, 13696),
    "deepseek-v3-dense": (7168, 18432),
    "smollm3-3b": (2048, 11008),
    "gpt-oss-20b-expert": (2880, 2880),
}
PAST_A_TILE = (129, 257, 513, 1025)
# The shapes the issue reported the kernel slipping on (H200, 2026-11-30), kept first in the set.
REPORTED = [
    {"name": "llama-2-7b-m8", "M": 8, "K": 4096, "N": 11008},
    {"name": "gemma-2-9b-m1", "M": 1, "K": 3584, "N": 14336},
    {"name": "gemma-2-9b-m32", "M": 32, "K": 3584, "N": 14336},
    {"name": "llama-2-7b-m1000", "M": 1000, "K": 4096, "N": 11008},
]


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    return min(high, int(math.exp(rng.uniform(math.log(low), math.log(high + 1)))))


def cases(
    seed: int = SEED, count: int = COUNT, first: Sequence[dict] = tuple(REPORTED), avoid: Sequence[dict] = ()
) -> list[dict]:
    """`first`, then `count` drawn cases, half decode (the even draws) and half prefill; a drawn
    shape (M, K, N) that `avoid`, `first` or an earlier draw holds is skipped. Without skips the
    draws are those of the first set as it was committed."""
    rng = random.Random(seed)
    drawn = list(first)
    taken = {_shape(c) for c in [*avoid, *first]}
    left = {"decode": (count + 1) // 2, "prefill": count // 2}
    index = 0
    while any(left.values()):
        if rng.random() < 0.2:
            # Odd widths, multiples of 8 so that the TMA path can describe them (as every model's are).
            name = "odd"
            K = 8 * rng.randint(K_RANGE[0] // 8, K_RANGE[1] // 8)
            N = 8 * rng.randint(N_RANGE[0] // 8, N_RANGE[1] // 8)
        else:
            name = rng.choice(sorted(MODELS))
            K, N = MODELS[name]
        kind = "decode" if index % 2 == 0 else "prefill"
        M = _rows(rng, decode=kind == "decode")
        index += 1
        if (M, K, N) in taken or not left[kind]:
            continue
        left[kind] -= 1
        taken.add((M, K, N))
        drawn.append(_named(drawn, name, M, K, N))
    return drawn


def _shape(case: dict) -> tuple[int, int, int]:
    return case["M"], case["K"], case["N"]


def _rows(rng: random.Random, decode: bool) -> int:
    """A token count: decode 1 to 64 rows, prefill 65 to 16384, log-uniform."""
    return _log_uniform(rng, 1, 64) if decode else _log_uniform(rng, 65, 16384)


def _named(drawn: Sequence[dict], name: str, M: int, K: int, N: int) -> dict:
    """The case, named NAME-mM, made unique among those drawn before it."""
    label = f"{name}-m{M}"
    while any(c["name"] == label for c in drawn):
        label += "-again"
    return {"name": label, "M": M, "K": K, "N": N}


def _ragged(rng: random.Random, low: int, high: int, unaligned_16: bool) -> int:
    """A width in [low, high]: a multiple of 8 but not of 16, or of 16 but not of 64."""
    while True:
        width = 8 * rng.randint(low // 8, high // 8)
        if (width % 16 != 0) if unaligned_16 else (width % 16 == 0 and width % 64 != 0):
            return width


def held_out_cases(seed: int = THIRD_SEED, count: int = COUNT, avoid: Sequence[dict] = ()) -> list[dict]:
    """`count` cases, a quarter of each kind (the module's docstring), in turn: ragged widths,
    M past a tile, few-tile decode, recent models; a shape `avoid` or an earlier draw holds is
    skipped."""
    if count % 4:
        raise ValueError(f"a held-out set is a quarter of each of four kinds: {count} cases is not")
    rng = random.Random(seed)
    drawn: list[dict] = []
    taken = {_shape(c) for c in avoid}
    models = sorted(RECENT_MODELS)
    kinds = ("ragged", "past a tile", "few-tile decode", "recent model")
    for _ in range(100 * count):  # a skipped draw is drawn again, of its kind; never forever
        if len(drawn) == count:
            break
        kind, turn = kinds[len(drawn) % 4], len(drawn) // 4
        if kind == "ragged":
            K = _ragged(rng, *K_RANGE, unaligned_16=turn % 2 == 0)
            N = _ragged(rng, *N_RANGE, unaligned_16=turn % 3 != 2)
            M = _rows(rng, decode=turn % 2 == 1)
            name = "ragged"
        elif kind == "past a tile":
            M = PAST_A_TILE[turn % len(PAST_A_TILE)]
            name = rng.choice(models)
            K, N = RECENT_MODELS[name]
        elif kind == "few-tile decode":
            M = rng.randint(33, 64)
            name = rng.choice(models)
            K = RECENT_MODELS[name][0]
            N = 8 * (_log_uniform(rng, 1024, 6144) // 8)
            name = "few-tiles"
        else:
            name = rng.choice(models)
            K, N = RECENT_MODELS[name]
            M = _rows(rng, decode=turn % 2 == 1)
        if (M, K, N) in taken:
            continue
        taken.add((M, K, N))
        drawn.append(_named(drawn, name, M, K, N))
    if len(drawn) < count:
        raise ValueError(f"only {len(drawn)} of {count} held-out shapes could be drawn apart from those to avoid")
    return drawn


def suite_cases(name: str) -> list[dict]:
    if name in ("generated", "backward-generated"):
        return cases(SEED)
    if name == "generated-2":
        # Fresh shapes only: a run of both suites times a shape they share once, under one of them.
        return cases(SECOND_SEED, first=[], avoid=cases(SEED))
    if name == "generated-3":
        return held_out_cases(THIRD_SEED, avoid=[*cases(SEED), *suite_cases("generated-2")])
    raise ValueError(f"no generated suite {name!r} (there are: {', '.join(SUITES)})")


SUITES = {  # name: its about line (plain YAML: no colon and space in it)
    "generated": f"Shapes nobody tuned for, drawn by `python -m kernels.shapes` (seed {SEED}); do not edit by hand.",
    "generated-2": (
        f"A second set held out from tuning, drawn by `python -m kernels.shapes` (seed {SECOND_SEED}) "
        "without the first set's shapes; do not edit by hand."
    ),
    "generated-3": (
        f"A third set held out from tuning, drawn by `python -m kernels.shapes` (seed {THIRD_SEED}) by kind "
        "(ragged widths, M past a tile, few-tile decode, the open models of 2025); do not edit by hand."
    ),
    "backward-generated": (
        "The first set's shapes, the backward alone and a training step; gemm is cuBLAS computing dx and dW "
        "alone. Drawn by `python -m kernels.shapes`; do not edit by hand."
    ),
}
# What each suite times: the forward suites every implementation, the backward one those that
# have a backward (the compiled ones compile a backward too, but max-autotune's takes minutes a
# shape) in the backward modes.
_FORWARD = "  implementations: [fused, fused-launch, fused-epilogue, eager, compiled, max-autotune, gemm, copy]"
_TIMED = {
    "generated": _FORWARD,
    "generated-2": _FORWARD,
    "generated-3": _FORWARD,
    "backward-generated": "  mode: [backward, forward+backward]\n  implementations: [fused, eager, compiled, gemm]",
}


def suite_yaml(name: str = "generated") -> str:
    lines = [
        f"{name}:",
        f"  about: {SUITES[name]}",
        "  dtype: bfloat16",
        _TIMED[name],
        "  cases:",
    ]
    lines += [f"    - {{name: {c['name']}, M: {c['M']}, K: {c['K']}, N: {c['N']}}}" for c in suite_cases(name)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    names = sys.argv[1:] or list(SUITES)
    unknown = [name for name in names if name not in SUITES]
    if unknown:
        sys.exit(f"no generated suite {unknown[0]!r} (there are: {', '.join(SUITES)})")
    print("\n".join(suite_yaml(name) for name in names), end="")
