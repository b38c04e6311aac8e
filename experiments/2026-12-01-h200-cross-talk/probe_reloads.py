"""Does loading each side's kernels afresh, again and again within an A/A, take away the bias one
load gives a side for as long as it is loaded (probe_loads.py)? LOADS A/As of quick/odd, each of
BLOCKS blocks of four rounds as `perfbot ab` times them, both sides loaded from fresh copies of
kernels/ every EVERY blocks (so each A/A spans BLOCKS / EVERY loads of each side). If the bias
belongs to a load, these A/As' estimates gather around no change with intervals that hold it.

    python experiments/2026-12-01-h200-cross-talk/probe_reloads.py KERNELS LOADS BLOCKS EVERY
"""

import dataclasses
import shutil
import sys
import tempfile
from pathlib import Path

from perfbot import measure, runner, sequential
from perfbot.compare import BLOCK_ROUNDS, judge_paired
from perfbot.subject import load_subject
from perfbot.thresholds import Rule

kernels, loads, blocks, every = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
copies = Path(tempfile.mkdtemp())
rule = Rule(fail_percent=0.5, warn_percent=0.25, alpha=0.01, min_samples=10)
print(f"quick/odd: {loads} A/As of {blocks} blocks of {BLOCK_ROUNDS} rounds, both sides loaded afresh every {every}")
made = 0
for load in range(loads):
    samples: dict[str, list[float]] = {}
    for block in range(blocks):
        if block % every == 0:  # fresh copies of kernels/, so fresh modules and fresh kernel loads
            subjects = {}
            for side in ("base", "head"):
                made += 1
                shutil.copytree(kernels, copies / str(made) / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
                subjects[side] = load_subject(copies / str(made) / "kernels")
            suite = subjects["base"].suites["quick"]
            case = dataclasses.replace(suite, cases=tuple(c for c in suite.cases if c.name == "odd"))
            sides = runner.LocalSides(subjects, runner.RunSettings(seed=made))
            keys, failed = sides.prepare(case)
            assert not failed, failed
            pairs = sequential.pairs_of(keys)
            timer = sides.timer()
        else:
            sides.recapture(keys)
        start = block * BLOCK_ROUNDS
        timed = measure.time_rounds(timer, keys, BLOCK_ROUNDS, start=start, pairs=list(pairs.values()), seed=load)
        for key, values in timed.samples.items():
            samples.setdefault(key, []).extend(values)
    line = []
    for name, (base, head) in pairs.items():
        estimate = judge_paired(samples[base], samples[head], rule, BLOCK_ROUNDS)["estimate"]
        line.append(f"{name} {100 * (estimate.ratio - 1):+.2f}% [{estimate.low:.4f}, {estimate.high:.4f}]")
    print(f"  A/A {load}: " + "; ".join(line), flush=True)
