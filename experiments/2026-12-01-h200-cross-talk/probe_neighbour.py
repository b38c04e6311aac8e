"""Issue 28's mechanism, on the GPU: the quick/odd case of an A/B of main against the neighbour
branch, both sides in this process as `perfbot ab` loads them, timed block by block on fresh
captures; first with each side of a benchmark in the places it is listed in (the order before
this change: every base before every head, so each side of fused-pointer always sits beside its
own side's fused), then with the places drawn (measure.side_places). Prints each benchmark's
head/base ratio (median of its blocks' median per-round ratios) both ways, and, from the drawn
rounds, fused-pointer's time by which side's fused ran right before it.

    python experiments/2026-12-01-h200-cross-talk/probe_neighbour.py MAIN_KERNELS BRANCH_KERNELS BLOCKS
"""

import dataclasses
import statistics
import sys
from pathlib import Path

from perfbot import measure, runner, sequential
from perfbot.compare import BLOCK_ROUNDS
from perfbot.subject import load_subject

main, branch, blocks = load_subject(Path(sys.argv[1])), load_subject(Path(sys.argv[2])), int(sys.argv[3])
suite = main.suites["quick"]
case = dataclasses.replace(suite, cases=tuple(c for c in suite.cases if c.name == "odd"))
sides = runner.LocalSides({"base": main, "head": branch}, runner.RunSettings())
keys, failed = sides.prepare(case)
assert not failed, failed
pairs = list(sequential.pairs_of(keys).values())
listed = measure.side_places


def timed(fixed: bool, seed: str) -> tuple[dict[str, list[float]], list[list[str]]]:
    """Every key `blocks` blocks of BLOCK_ROUNDS rounds, captured again before each block."""
    measure.side_places = (lambda count, round_index, seed=0: [0] * count) if fixed else listed
    samples: dict[str, list[float]] = {key: [] for key in keys}
    orders = []
    timer = sides.timer()  # it times the captures that `recapture` puts in place
    for block in range(blocks):
        if block:
            sides.recapture(keys)
        start = block * BLOCK_ROUNDS
        block_timings = measure.time_rounds(timer, keys, BLOCK_ROUNDS, start=start, pairs=pairs, seed=seed)
        for key, values in block_timings.samples.items():
            samples[key] += values
        orders += [measure.round_order(keys, r, pairs, (), seed) for r in range(start, start + BLOCK_ROUNDS)]
    measure.side_places = listed
    return samples, orders


def ratio(samples: dict[str, list[float]], base: str, head: str) -> float:
    per_round = [h / b for b, h in zip(samples[base], samples[head], strict=True)]
    units = [statistics.median(per_round[at : at + BLOCK_ROUNDS]) for at in range(0, len(per_round), BLOCK_ROUNDS)]
    return statistics.median(units)


results = {name: timed(name == "listed places", name) for name in ("listed places", "drawn places")}
print(f"quick/odd, {blocks} blocks of {BLOCK_ROUNDS} rounds each way; head/base - 1 (median of block medians):")
for base, head in pairs:
    name = base.partition(":")[2]
    print(
        f"  {name:<14}"
        + "".join(f"  {way}: {100 * (ratio(s, base, head) - 1):+.2f}%" for way, (s, _) in results.items())
    )
samples, orders = results["drawn places"]
print("fused-pointer with places drawn, median ms by what ran right before it (the lead-in replays the round's last):")
for side in ("base", "head"):
    key = f"{side}:fused-pointer"
    by: dict[str, list[float]] = {}
    for order, value in zip(orders, samples[key], strict=True):
        before = order[order.index(key) - 1]
        by.setdefault(before, []).append(value)
    for before in sorted(by):
        print(f"  {key:<20} after {before:<20} {statistics.median(by[before]):.5f} ms  ({len(by[before])} rounds)")
