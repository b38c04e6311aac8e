"""Waves: how a launch's units of work fall on the GPU's SMs, and the split of K that fills them.

A launch of `units` equal programs, `slots` of which can run at once (SMs times the programs
an SM holds), takes ceil(units / slots) waves; in the last one only the remainder runs and the
rest of the machine idles. Decode shapes quantize badly: N = 11008 in 64-wide tiles is 172 tiles
on 132 SMs, 1.3 waves, so a third of the SMs stream nothing for a third of the time. Splitting K
into S parts makes S times as many units, each S times shorter, so the time is about

    ceil(tiles * S / slots) * ceil(k_steps / S)     (in one unit-step of one SM)

and the split is the smallest S within NEAR_BEST of the least time: each split adds partial
sums to write and add up, which the model leaves out.
"""

from __future__ import annotations

import math

MAX_SPLITS = 8
MIN_STEPS_PER_SPLIT = 4  # fewer K steps than pipeline stages would leave the pipeline unfilled
NEAR_BEST = 1.05


def steps(tiles: int, k_steps: int, slots: int, splits: int) -> int:
    """The launch's length in unit-steps, with K split `splits` ways."""
    return math.ceil(tiles * splits / slots) * math.ceil(k_steps / splits)


def efficiency(tiles: int, k_steps: int, slots: int, splits: int = 1) -> float:
    """The share of the SMs' time that does work: 1.0 when the last wave is full."""
    return tiles * k_steps / (slots * steps(tiles, k_steps, slots, splits))


def best_split(tiles: int, k_steps: int, slots: int) -> int:
    """The split of K that makes the launch shortest; 1 when splitting does not help."""
    most = max(1, min(MAX_SPLITS, k_steps // MIN_STEPS_PER_SPLIT))
    least = min(steps(tiles, k_steps, slots, s) for s in range(1, most + 1))
    return next(s for s in range(1, most + 1) if steps(tiles, k_steps, slots, s) <= least * NEAR_BEST)
